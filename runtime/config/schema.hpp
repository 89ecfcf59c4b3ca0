// The configuration schema: every section and key gradwire accepts, declared once with its type,
// default and one sentence of help. Parsing, validation, `gradwire config dump` and the reference in
// docs/config-reference.md all come from it. Built-in sections are declared in builtin_sections.cpp;
// each loaded component adds the section [<kind>.<name>] from its gw_config_key table.
#pragma once

#include <gradwire/plugin.h>

#include <string>
#include <string_view>
#include <vector>

namespace gw::config {

enum class ValueType { Bool, Int, Float, String, StringList };

const char* type_name(ValueType type);

struct KeySpec {
  std::string name;
  ValueType type = ValueType::String;
  std::string default_text;  // TOML literal
  std::string help;
  double min_value = 1;      // inclusive range when min_value <= max_value
  double max_value = 0;
  std::vector<std::string> choices;  // allowed strings; empty: any

  bool has_range() const { return min_value <= max_value; }
};

struct SectionSpec {
  std::string path;  // "codec", "codec.topk", "rules"
  std::string help;
  std::vector<KeySpec> keys;
  bool array_of_tables = false;  // [[rules]]

  const KeySpec* key(std::string_view name) const;
  std::vector<std::string> key_names() const;
};

class Schema {
 public:
  // The sections the runtime itself defines.
  static Schema builtin();

  // Adds [<kind>.<name>] for a component; throws GW_ERR_PLUGIN when its key table is malformed.
  void add_component(gw_component_kind kind, const std::string& name, const std::string& help,
                     const gw_config_key* keys, uint32_t num_keys);

  const SectionSpec* find(std::string_view path) const;
  const std::vector<SectionSpec>& sections() const { return sections_; }
  // Names of the components of one kind ("codec": {"none", "topk", ...}).
  std::vector<std::string> components(std::string_view kind_section) const;

 private:
  std::vector<SectionSpec> sections_;
};

const char* kind_section(gw_component_kind kind);  // "codec", "schedule", "transport"

}  // namespace gw::config
