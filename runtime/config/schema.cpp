#include "config/schema.hpp"

#include <algorithm>
#include <cctype>

#include "config/toml.hpp"
#include "core/abi_struct.hpp"
#include "core/error.hpp"

namespace gw::config {

const char* type_name(ValueType type) {
  switch (type) {
    case ValueType::Bool: return "boolean";
    case ValueType::Int: return "integer";
    case ValueType::Float: return "float";
    case ValueType::String: return "string";
    case ValueType::StringList: return "array of strings";
  }
  return "?";
}

const char* kind_section(gw_component_kind kind) {
  switch (kind) {
    case GW_COMPONENT_CODEC: return "codec";
    case GW_COMPONENT_SCHEDULE: return "schedule";
    case GW_COMPONENT_TRANSPORT: return "transport";
    default: return "?";
  }
}

const KeySpec* SectionSpec::key(std::string_view name) const {
  for (const auto& k : keys)
    if (k.name == name) return &k;
  return nullptr;
}

std::vector<std::string> SectionSpec::key_names() const {
  std::vector<std::string> names;
  for (const auto& k : keys) names.push_back(k.name);
  return names;
}

const SectionSpec* Schema::find(std::string_view path) const {
  for (const auto& s : sections_)
    if (s.path == path) return &s;
  return nullptr;
}

std::vector<std::string> Schema::components(std::string_view kind) const {
  std::vector<std::string> names;
  const std::string prefix = std::string(kind) + ".";
  for (const auto& s : sections_)
    if (s.path.starts_with(prefix)) names.push_back(s.path.substr(prefix.size()));
  return names;
}

namespace {

bool valid_identifier(const char* s) {
  if (s == nullptr || *s == '\0') return false;
  for (const char* p = s; *p; ++p)
    if (!(std::islower(static_cast<unsigned char>(*p)) || std::isdigit(static_cast<unsigned char>(*p)) ||
          *p == '_'))
      return false;
  return true;
}

ValueType from_abi(gw_config_type type, const std::string& where) {
  switch (type) {
    case GW_CONFIG_BOOL: return ValueType::Bool;
    case GW_CONFIG_INT: return ValueType::Int;
    case GW_CONFIG_FLOAT: return ValueType::Float;
    case GW_CONFIG_STRING: return ValueType::String;
    default: fail(GW_ERR_PLUGIN, where + ": unknown gw_config_type " + std::to_string(int(type)));
  }
}

}  // namespace

void Schema::add_component(gw_component_kind kind, const std::string& name, const std::string& help,
                           const gw_config_key* keys, uint32_t num_keys) {
  const std::string kind_name = kind_section(kind);
  SectionSpec section{kind_name + "." + name, help, {}, false};
  if (num_keys > 0 && keys == nullptr)
    fail(GW_ERR_PLUGIN, "component " + section.path + " declares " + std::to_string(num_keys) +
                            " config keys but config_keys is NULL");
  const SectionSpec* parent = find(kind_name);
  for (uint32_t i = 0; i < num_keys; ++i) {
    const gw_config_key& k = keys[i];
    const std::string where = "config key #" + std::to_string(i) + " of " + section.path;
    if (k.struct_size < abi::first_size<gw_config_key>())
      fail(GW_ERR_PLUGIN, where + ": struct_size " + std::to_string(k.struct_size) +
                              " is too small; initialize it with GW_CONFIG_KEY_INIT");
    if (!valid_identifier(k.name))
      fail(GW_ERR_PLUGIN, where + ": name must be lower_snake_case ([a-z0-9_]+)");
    if (section.key(k.name) != nullptr || (parent && parent->key(k.name)))
      fail(GW_ERR_PLUGIN, where + ": key '" + k.name + "' is declared twice");
    KeySpec spec;
    spec.name = k.name;
    spec.type = from_abi(k.type, where);
    spec.default_text = k.default_value ? k.default_value : "";
    spec.help = k.help ? k.help : "";
    spec.min_value = k.min_value;
    spec.max_value = k.max_value;
    if (k.choices) {
      std::string choices = k.choices;
      size_t start = 0;
      while (start <= choices.size()) {
        const size_t bar = choices.find('|', start);
        spec.choices.push_back(choices.substr(start, bar == std::string::npos ? std::string::npos : bar - start));
        if (bar == std::string::npos) break;
        start = bar + 1;
      }
    }
    if (spec.help.empty()) fail(GW_ERR_PLUGIN, where + " ('" + spec.name + "'): help text is missing");
    check_default(spec, section.path);  // throws GW_ERR_PLUGIN naming the key
    section.keys.push_back(std::move(spec));
  }
  // Keep each kind's component sections right after the kind's own section, sorted by name.
  auto insert_at = sections_.end();
  for (auto it = sections_.begin(); it != sections_.end(); ++it) {
    if (it->path == kind_name || (it->path.starts_with(kind_name + ".") && it->path < section.path))
      insert_at = it + 1;
  }
  sections_.insert(insert_at, std::move(section));
}

}  // namespace gw::config
