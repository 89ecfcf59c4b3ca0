// `gradwire config check FILE` and `gradwire config dump [FILE] [--reference]`.
#include <iostream>

#include "commands.hpp"

namespace gwcli {
namespace {

std::string dump(gw_runtime* rt, gw_config_format format) {
  size_t length = 0;
  check(gw_runtime_config_dump(rt, format, nullptr, 0, &length), "config dump");
  std::string text(length + 1, '\0');
  check(gw_runtime_config_dump(rt, format, text.data(), text.size(), &length), "config dump");
  text.resize(length);
  return text;
}

}  // namespace

void add_config_command(CLI::App& app, int& exit_code) {
  auto* config = app.add_subcommand("config", "Check or print the configuration");
  config->require_subcommand(1);

  auto* check_cmd = config->add_subcommand("check", "Validate a TOML file; exit 0 when it is valid");
  auto check_file = std::make_shared<std::string>();
  check_cmd->add_option("file", *check_file, "The TOML file")->required();
  check_cmd->callback([&exit_code, check_file] {
    try {
      open_runtime(*check_file);
      std::cout << *check_file << ": valid\n";
      exit_code = 0;
    } catch (const Failure& e) {
      std::cerr << e.what() << "\n";
      exit_code = 1;
    }
  });

  auto* dump_cmd = config->add_subcommand("dump", "Print the effective configuration, defaults included");
  auto dump_file = std::make_shared<std::string>();
  auto reference = std::make_shared<bool>(false);
  dump_cmd->add_option("file", *dump_file, "The TOML file (none: defaults and environment)");
  dump_cmd->add_flag("--reference", *reference, "Print the Markdown reference of every key instead");
  dump_cmd->callback([&exit_code, dump_file, reference] {
    RuntimePtr rt = open_runtime(*dump_file);
    std::cout << dump(rt.get(), *reference ? GW_CONFIG_FORMAT_REFERENCE : GW_CONFIG_FORMAT_TOML);
    exit_code = 0;
  });
}

}  // namespace gwcli
