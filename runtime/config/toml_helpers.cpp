#include <charconv>
#include <sstream>

#include "config/toml.hpp"
#include "core/error.hpp"

namespace gw::config {

std::string position(const toml::source_region& region) {
  if (!region.begin) return "";
  std::string file = region.path ? std::string(*region.path) : std::string("<config>");
  return file + ":" + std::to_string(region.begin.line) + ":" + std::to_string(region.begin.column);
}

toml::table parse_default(const KeySpec& key) {
  return toml::parse("v = " + (key.default_text.empty() ? std::string("\"\"") : key.default_text));
}

void check_default(const KeySpec& key, const std::string& section) {
  const std::string where = "[" + section + "] " + key.name + ": default '" + key.default_text + "'";
  toml::table t;
  try {
    t = parse_default(key);
  } catch (const toml::parse_error& e) {
    fail(GW_ERR_PLUGIN, where + " is not a TOML literal (" + std::string(e.description()) + ")");
  }
  const toml::node& v = *t.get("v");
  bool ok = false;
  switch (key.type) {
    case ValueType::Bool: ok = v.is_boolean(); break;
    case ValueType::Int: ok = v.is_integer(); break;
    case ValueType::Float: ok = v.is_number(); break;
    case ValueType::String: ok = v.is_string(); break;
    case ValueType::StringList: ok = v.is_array() && v.as_array()->is_homogeneous(toml::node_type::string);
      if (v.is_array() && v.as_array()->empty()) ok = true;
      break;
  }
  if (!ok) fail(GW_ERR_PLUGIN, where + " is not a " + type_name(key.type));
  if (key.has_range() && v.is_number()) {
    const double d = v.is_integer() ? double(*v.value<int64_t>()) : *v.value<double>();
    if (d < key.min_value || d > key.max_value) fail(GW_ERR_PLUGIN, where + " is outside its own range");
  }
  if (!key.choices.empty() && v.is_string()) {
    const std::string s = *v.value<std::string>();
    bool found = false;
    for (const auto& c : key.choices) found = found || c == s;
    if (!found) fail(GW_ERR_PLUGIN, where + " is not one of its own choices");
  }
}

}  // namespace gw::config
