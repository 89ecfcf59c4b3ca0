// `gradwire conformance PLUGIN.so [--json]`: the command line of the conformance kit
// (tools/conformance): loads one plugin file, runs the contract against each of its components and prints
// one line per check; the exit status is the verdict (0: every check passed).
#include <filesystem>
#include <iostream>
#include <memory>

#include "commands.hpp"
#include "conformance/conformance.hpp"

namespace gwcli {

void add_conformance_command(CLI::App& app, int& exit_code) {
  struct Args {
    std::string plugin;
    bool json = false;
    double timeout_s = 20;
    uint32_t ranks = 3;
    std::string only;
    bool strict = false;
  };
  auto args = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand(
      "conformance", "Check a plugin file against the plugin contract (docs/transport-guide.md); exit status 0 when "
                     "every check passes");
  cmd->add_option("plugin", args->plugin, "The plugin's shared library (libgw-*.so)")->required();
  cmd->add_flag("--json", args->json, "One JSON object: the plugin, every check and the verdict");
  cmd->add_option("--timeout", args->timeout_s, "Seconds any one wait may take before the check fails (default 20)")
      ->check(CLI::Range(1.0, 3600.0));
  cmd->add_option("--ranks", args->ranks, "Processes for the point-to-point checks (2-4, default 3)")
      ->check(CLI::Range(2, 4));
  cmd->add_option("--component", args->only, "Check only the component of this name");
  cmd->add_flag("--require-failure-detection", args->strict,
                "A transport must report a killed peer with GW_ERR_TRANSPORT (by default a peer it cannot detect "
                "passes with a note: the runtime's timeout reports it)");
  cmd->callback([args, &exit_code] {
    using namespace conformance;
    Options o;
    o.plugin_path = std::filesystem::absolute(args->plugin).string();
    o.timeout_s = args->timeout_s;
    o.ranks = args->ranks;
    o.require_failure_detection = args->strict;
    o.component = args->only;
    const Report report = run(o);
    print(report, args->json, std::cout);
    exit_code = report.failed == 0 ? 0 : 1;
  });
}

}  // namespace gwcli
