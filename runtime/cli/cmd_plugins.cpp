// `gradwire plugins`: every plugin file found, what it provides, or why it did not load.
#include <iostream>
#include <nlohmann/json.hpp>

#include "commands.hpp"

namespace gwcli {
namespace {

const char* kind_name(uint32_t kind) {
  switch (kind) {
    case 0: return "codec";
    case 1: return "schedule";
    case 2: return "transport";
    default: return "?";
  }
}

int list_plugins(const std::string& config, bool json) {
  RuntimePtr rt = open_runtime(config, GW_RUNTIME_INSPECT_ONLY);
  uint32_t count = 0, paths = 0;
  check(gw_runtime_plugin_count(rt.get(), &count), "plugins");
  check(gw_runtime_search_path_count(rt.get(), &paths), "plugins");
  nlohmann::json out = {{"search_path", nlohmann::json::array()}, {"plugins", nlohmann::json::array()}};
  for (uint32_t i = 0; i < paths; ++i) {
    const char* p = nullptr;
    check(gw_runtime_search_path(rt.get(), i, &p), "plugins");
    out["search_path"].push_back(p);
  }
  int failed = 0;
  for (uint32_t i = 0; i < count; ++i) {
    gw_plugin_info info = GW_PLUGIN_INFO_INIT;
    check(gw_runtime_plugin_info(rt.get(), i, &info), "plugins");
    nlohmann::json p = {{"file", info.path}, {"loaded", info.status == GW_OK}};
    if (info.status == GW_OK) {
      p["name"] = info.name;
      p["version"] = info.version;
      p["abi"] = std::to_string(info.abi_major) + "." + std::to_string(info.abi_minor);
      p["description"] = info.description;
      p["components"] = nlohmann::json::array();
      for (uint32_t c = 0; c < info.num_components; ++c) {
        gw_component_info ci = GW_COMPONENT_INFO_INIT;
        check(gw_runtime_component_info(rt.get(), i, c, &ci), "plugins");
        p["components"].push_back({{"kind", kind_name(ci.kind)}, {"name", ci.name}, {"help", ci.help}});
      }
    } else {
      ++failed;
      p["status"] = gw_status_string(info.status);
      p["error"] = info.error;
    }
    out["plugins"].push_back(p);
  }
  if (json) {
    std::cout << out.dump(2) << "\n";
    return 0;
  }
  std::cout << "search path (in order):\n";
  for (const auto& p : out["search_path"]) std::cout << "  " << p.get<std::string>() << "\n";
  std::cout << "\n";
  for (const auto& p : out["plugins"]) {
    if (p["loaded"].get<bool>()) {
      std::cout << p["name"].get<std::string>() << " " << p["version"].get<std::string>() << "  (ABI "
                << p["abi"].get<std::string>() << ")  " << p["file"].get<std::string>() << "\n";
      for (const auto& c : p["components"])
        std::cout << "  " << c["kind"].get<std::string>() << " " << c["name"].get<std::string>() << ": "
                  << c["help"].get<std::string>() << "\n";
    } else {
      std::cout << "FAILED " << p["file"].get<std::string>() << "\n  " << p["status"].get<std::string>() << ": "
                << p["error"].get<std::string>() << "\n";
    }
  }
  std::cout << "\n" << count - failed << " plugin(s) loaded, " << failed << " failed\n";
  return 0;
}

}  // namespace

void add_plugins_command(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand("plugins", "List every plugin found: name, kinds, version, ABI, file, or why it failed");
  auto config = std::make_shared<std::string>();
  auto json = std::make_shared<bool>(false);
  cmd->add_option("--config", *config, "TOML file whose [runtime] plugin_path is searched too");
  cmd->add_flag("--json", *json, "Print JSON");
  cmd->callback([&exit_code, config, json] { exit_code = list_plugins(*config, *json); });
}

}  // namespace gwcli
