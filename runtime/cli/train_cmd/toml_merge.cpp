// A configuration's TOML: its overlay merged over the user's file.
#include <sstream>

#define TOML_HEADER_ONLY 1
#include <toml++/toml.h>

#include "train_cmd/train_cmd.hpp"

namespace gwcli::train {
namespace {

// Merges `overlay` into `base`: tables recursively, anything else (values, arrays, [[rules]]) replaced.
void merge(toml::table& base, const toml::table& overlay) {
  for (const auto& [key, value] : overlay) {
    if (value.is_table() && base.contains(key) && base[key].is_table())
      merge(*base[key].as_table(), *value.as_table());
    else
      base.insert_or_assign(key, value);
  }
}

}  // namespace

std::string configuration_toml(const std::string& user_file, const Configuration& c) {
  toml::table merged;
  try {
    if (!user_file.empty()) merged = toml::parse_file(user_file);
    merge(merged, toml::parse(c.overlay));
  } catch (const toml::parse_error& e) {
    throw Failure(GW_ERR_CONFIG, "train: cannot read " + (user_file.empty() ? std::string("the overlay") : user_file) +
                                     ": " + std::string(e.description()));
  }
  std::ostringstream text;
  text << merged << "\n";
  return text.str();
}

RuntimePtr open_runtime_text(const std::string& text) {
  gw_runtime_options options = GW_RUNTIME_OPTIONS_INIT;
  options.config_text = text.c_str();
  gw_runtime* rt = nullptr;
  check(gw_runtime_create(&options, &rt), "train: the configuration");
  return RuntimePtr(rt);
}

}  // namespace gwcli::train
