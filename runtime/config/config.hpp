// The effective configuration: the TOML document (file or text), then GRADWIRE_<SECTION>_<KEY>
// environment overrides, then each key's default — validated against the schema.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "config/schema.hpp"
#include "config/toml.hpp"

namespace gw::config {

// A parsed TOML document and where it came from, before validation.
struct Document {
  toml::table root;
  std::string origin;  // file name, "<config_text>", or "" when there is none

  static Document from_file(const std::string& path);  // GW_ERR_CONFIG on a missing file or bad TOML
  static Document from_text(const std::string& text);
};

class Config {
 public:
  // Validates `doc` against `schema` and computes every key's effective value. Throws GW_ERR_CONFIG with
  // the file, line, column and the nearest valid key.
  Config(const Schema& schema, const Document& doc, bool env_overrides);

  // The effective values of a section ("codec.topk"), or nullptr for an unknown section.
  const toml::table* section(const std::string& path) const;
  const toml::array& rules() const { return rules_; }

  std::string get_string(const std::string& section, const std::string& key) const;
  int64_t get_int(const std::string& section, const std::string& key) const;
  double get_float(const std::string& section, const std::string& key) const;
  bool get_bool(const std::string& section, const std::string& key) const;
  std::vector<std::string> get_strings(const std::string& section, const std::string& key) const;

  // Where a key's value came from: "file.toml:3:8", "environment GRADWIRE_CODEC_NAME", "default".
  std::string origin(const std::string& section, const std::string& key) const;

  // The effective configuration as TOML, help as comments; and the Markdown reference of the schema.
  std::string dump_toml() const;
  std::string reference_markdown() const;
  // FNV-1a 64 of dump_toml(): ranks compare it at communicator creation.
  uint64_t hash() const;

  const Schema& schema() const { return schema_; }

 private:
  void validate_document(const Document& doc);
  void validate_table(const SectionSpec& spec, const toml::table& table, const std::string& origin);
  void apply_environment();
  void fill_defaults();
  void check_values();

  Schema schema_;
  toml::table values_;  // section path -> table of effective values
  toml::array rules_;   // [[rules]] with defaults filled
  std::map<std::string, std::string> origins_;  // "section/key" -> origin
};

// Reads just runtime.plugin_path from a document (validated as the built-in [runtime] section), so
// plugins can be found before the full schema is known.
std::vector<std::string> bootstrap_plugin_path(const Document& doc, bool env_overrides);

// The environment variable that overrides a key: GRADWIRE_CODEC_TOPK_RATIO for codec.topk / ratio.
std::string env_name(const std::string& section, const std::string& key);

}  // namespace gw::config
