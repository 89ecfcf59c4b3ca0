#include "config/config.hpp"

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <sstream>

#include "core/error.hpp"
#include "core/strings.hpp"

namespace gw::config {
namespace {

std::string at(const toml::source_region& region) {
  const std::string p = position(region);
  return p.empty() ? std::string() : p + ": ";
}

std::string describe(const toml::node& node) {
  std::ostringstream os;
  switch (node.type()) {
    case toml::node_type::table: return "a table";
    case toml::node_type::array: return "an array";
    case toml::node_type::string: return "the string \"" + *node.value<std::string>() + "\"";
    case toml::node_type::integer: return "the integer " + std::to_string(*node.value<int64_t>());
    case toml::node_type::floating_point: os << "the float " << *node.value<double>(); return os.str();
    case toml::node_type::boolean: return std::string("the boolean ") + (*node.value<bool>() ? "true" : "false");
    default: return "a date or time";
  }
}

bool has_type(const KeySpec& key, const toml::node& node) {
  switch (key.type) {
    case ValueType::Bool: return node.is_boolean();
    case ValueType::Int: return node.is_integer();
    case ValueType::Float: return node.is_number();
    case ValueType::String: return node.is_string();
    case ValueType::StringList:
      return node.is_array() && (node.as_array()->empty() || node.as_array()->is_homogeneous(toml::node_type::string));
  }
  return false;
}

std::string format_number(double d) {
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, d);
  std::string s(buf, end);
  if (s.find_first_of(".eEn") == std::string::npos) s += ".0";
  return s;
}

std::string quote(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      default: out += c;
    }
  }
  return out + "\"";
}

std::string format_value(const toml::node& node) {
  if (node.is_boolean()) return *node.value<bool>() ? "true" : "false";
  if (node.is_integer()) return std::to_string(*node.value<int64_t>());
  if (node.is_floating_point()) return format_number(*node.value<double>());
  if (node.is_string()) return quote(*node.value<std::string>());
  if (node.is_array()) {
    std::vector<std::string> items;
    for (const auto& item : *node.as_array()) items.push_back(format_value(item));
    return "[" + join(items, ", ") + "]";
  }
  return "?";
}

std::string range_text(const KeySpec& key) {
  if (!key.choices.empty()) return join(key.choices, " \\| ");
  if (!key.has_range()) return "";
  auto num = [&](double d) {
    return key.type == ValueType::Int ? std::to_string(static_cast<long long>(d)) : format_number(d);
  };
  return num(key.min_value) + " – " + num(key.max_value);
}

// The value of one environment variable converted to a key's type.
toml::table parse_environment(const KeySpec& key, const std::string& var, const std::string& text) {
  toml::table out;
  auto bad = [&](const char* expected) {
    fail(GW_ERR_CONFIG, "environment " + var + "=" + text + ": expected " + expected + ", the type of " +
                            "this key; unset the variable or give a valid value");
  };
  switch (key.type) {
    case ValueType::Bool: {
      if (text == "true" || text == "1" || text == "yes" || text == "on") out.insert("v", true);
      else if (text == "false" || text == "0" || text == "no" || text == "off") out.insert("v", false);
      else bad("a boolean (true/false)");
      break;
    }
    case ValueType::Int: {
      int64_t v = 0;
      auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
      if (ec != std::errc() || end != text.data() + text.size()) bad("an integer");
      out.insert("v", v);
      break;
    }
    case ValueType::Float: {
      char* end = nullptr;
      const double v = std::strtod(text.c_str(), &end);
      if (text.empty() || *end != '\0' || !std::isfinite(v)) bad("a number");
      out.insert("v", v);
      break;
    }
    case ValueType::String: out.insert("v", text); break;
    case ValueType::StringList: {
      toml::array a;
      for (const auto& part : split(text, ':')) a.push_back(part);
      out.insert("v", std::move(a));
      break;
    }
  }
  return out;
}

std::string origin_key(const std::string& section, const std::string& key) { return section + "/" + key; }

}  // namespace

std::string env_name(const std::string& section, const std::string& key) {
  std::string name = "GRADWIRE_";
  for (char c : section + "_" + key) name += c == '.' ? '_' : static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return name;
}

Document Document::from_file(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec))
    fail(GW_ERR_CONFIG, "configuration file '" + path + "' does not exist or is not a file; check the path");
  Document doc;
  doc.origin = path;
  try {
    doc.root = toml::parse_file(path);
  } catch (const toml::parse_error& e) {
    fail(GW_ERR_CONFIG, at(e.source()) + "TOML syntax error: " + std::string(e.description()) +
                            "; fix the syntax (see docs/config-reference.md)");
  }
  return doc;
}

Document Document::from_text(const std::string& text) {
  Document doc;
  doc.origin = "<config_text>";
  try {
    doc.root = toml::parse(text, std::string_view("<config_text>"));
  } catch (const toml::parse_error& e) {
    fail(GW_ERR_CONFIG, at(e.source()) + "TOML syntax error: " + std::string(e.description()));
  }
  return doc;
}

Config::Config(const Schema& schema, const Document& doc, bool env_overrides) : schema_(schema) {
  validate_document(doc);
  for (const auto& section : schema_.sections()) {
    if (section.array_of_tables) continue;
    const toml::table* given = nullptr;
    if (const toml::node* n = doc.root.at_path(section.path).node()) given = n->as_table();
    toml::table effective;
    for (const auto& key : section.keys) {
      const std::string ok = origin_key(section.path, key.name);
      const std::string var = env_name(section.path, key.name);
      const char* env = env_overrides ? std::getenv(var.c_str()) : nullptr;
      if (env != nullptr) {
        toml::table parsed = parse_environment(key, var, env);
        effective.insert(key.name, std::move(*parsed.get("v")));
        origins_[ok] = "environment " + var;
      } else if (given != nullptr && given->contains(key.name)) {
        const toml::node& n = *given->get(key.name);
        if (key.type == ValueType::Float && n.is_integer()) effective.insert(key.name, double(*n.value<int64_t>()));
        else effective.insert(key.name, n);
        origins_[ok] = position(given->get(key.name)->source());
        if (origins_[ok].empty()) origins_[ok] = doc.origin;
      } else {
        toml::table d = parse_default(key);
        const toml::node& n = *d.get("v");
        if (key.type == ValueType::Float && n.is_integer()) effective.insert(key.name, double(*n.value<int64_t>()));
        else effective.insert(key.name, n);
        origins_[ok] = "default";
      }
    }
    // Nested tables: a component section [codec.topk] lives in values_["codec"]["topk"].
    const auto dot = section.path.find('.');
    if (dot == std::string::npos) {
      if (auto* existing = values_.get_as<toml::table>(section.path)) {
        for (auto&& [k, v] : effective) existing->insert_or_assign(k, v);
      } else {
        values_.insert(section.path, std::move(effective));
      }
    } else {
      const std::string parent = section.path.substr(0, dot);
      if (!values_.contains(parent)) values_.insert(parent, toml::table{});
      values_.get_as<toml::table>(parent)->insert_or_assign(section.path.substr(dot + 1), std::move(effective));
    }
  }
  // [[rules]]: defaults filled per entry.
  const SectionSpec* rules_spec = schema_.find("rules");
  if (const toml::array* given = doc.root["rules"].as_array()) {
    size_t index = 0;
    for (const auto& entry : *given) {
      const toml::table& t = *entry.as_table();
      toml::table effective;
      for (const auto& key : rules_spec->keys) {
        if (t.contains(key.name)) effective.insert(key.name, *t.get(key.name));
        else effective.insert(key.name, *parse_default(key).get("v"));
        origins_[origin_key("rules." + std::to_string(index), key.name)] =
            t.contains(key.name) ? position(t.get(key.name)->source()) : "default";
      }
      rules_.push_back(std::move(effective));
      ++index;
    }
  }
  check_values();
}

void Config::validate_document(const Document& doc) {
  std::vector<std::string> top;
  for (const auto& s : schema_.sections())
    if (s.path.find('.') == std::string::npos) top.push_back(s.path);
  for (auto&& [k, node] : doc.root) {
    const std::string name(k.str());
    const SectionSpec* spec = schema_.find(name);
    if (spec == nullptr) {
      const std::string hint = nearest(name, top);
      fail(GW_ERR_CONFIG, at(k.source()) + "unknown section [" + name + "]" +
                              (hint.empty() ? "" : "; did you mean [" + hint + "]?") +
                              " Valid sections: " + join(top, ", "));
    }
    if (spec->array_of_tables) {
      if (!node.is_array_of_tables())
        fail(GW_ERR_CONFIG, at(k.source()) + "'" + name + "' must be an array of tables: write each entry as [[" +
                                name + "]]");
      for (const auto& entry : *node.as_array()) validate_table(*spec, *entry.as_table(), doc.origin);
    } else {
      if (!node.is_table())
        fail(GW_ERR_CONFIG, at(k.source()) + "'" + name + "' must be a table: write [" + name + "] and its keys below");
      validate_table(*spec, *node.as_table(), doc.origin);
    }
  }
}

void Config::validate_table(const SectionSpec& spec, const toml::table& table, const std::string& origin) {
  for (auto&& [k, node] : table) {
    const std::string name(k.str());
    if (const KeySpec* key = spec.key(name)) {
      if (!has_type(*key, node))
        fail(GW_ERR_CONFIG, at(node.source()) + "[" + spec.path + "] " + name + " must be " +
                                (key->type == ValueType::Int ? "an " : "a ") + type_name(key->type) + ", got " +
                                describe(node));
      continue;
    }
    const std::string child = spec.path + "." + name;
    if (const SectionSpec* sub = schema_.find(child); sub != nullptr && node.is_table()) {
      validate_table(*sub, *node.as_table(), origin);
      continue;
    }
    const auto components = schema_.components(spec.path);
    if (node.is_table() && (spec.path == "codec" || spec.path == "schedule" || spec.path == "transport")) {
      const std::string hint = nearest(name, components);
      fail(GW_ERR_CONFIG, at(k.source()) + "[" + child + "]: no " + spec.path + " named '" + name +
                              "' is loaded" + (hint.empty() ? "" : "; did you mean [" + spec.path + "." + hint + "]?") +
                              " Loaded: " + (components.empty() ? "none" : join(components, ", ")) +
                              " (`gradwire plugins` shows what was found and why others failed)");
    }
    const auto names = spec.key_names();
    const std::string hint = nearest(name, names);
    fail(GW_ERR_CONFIG, at(k.source()) + "unknown key '" + name + "' in [" + spec.path + "]" +
                            (hint.empty() ? "" : "; did you mean '" + hint + "'?") +
                            " Valid keys: " + (names.empty() ? "none" : join(names, ", ")));
  }
}

void Config::check_values() {
  auto check = [&](const std::string& section, const KeySpec& key, const toml::node& v, const std::string& where) {
    const std::string prefix = (where == "default" ? std::string() : where + ": ") + "[" + section + "] " + key.name;
    if (key.has_range() && v.is_number()) {
      const double d = v.is_integer() ? double(*v.value<int64_t>()) : *v.value<double>();
      if (!(d >= key.min_value && d <= key.max_value))
        fail(GW_ERR_CONFIG, prefix + " = " + format_value(v) + " is out of range; allowed: " + range_text(key));
    }
    if (!key.choices.empty() && v.is_string()) {
      const std::string s = *v.value<std::string>();
      bool found = false;
      for (const auto& c : key.choices) found = found || c == s;
      if (!found) {
        const std::string hint = nearest(s, key.choices);
        fail(GW_ERR_CONFIG, prefix + " = \"" + s + "\" is not allowed" +
                                (hint.empty() ? "" : "; did you mean \"" + hint + "\"?") + " Allowed: " + join(key.choices, ", "));
      }
    }
  };
  for (const auto& section : schema_.sections()) {
    if (section.array_of_tables) continue;
    const toml::table* t = this->section(section.path);
    for (const auto& key : section.keys) check(section.path, key, *t->get(key.name), origin(section.path, key.name));
  }
  const SectionSpec* rules_spec = schema_.find("rules");
  for (size_t i = 0; i < rules_.size(); ++i)
    for (const auto& key : rules_spec->keys) {
      const std::string section = "rules." + std::to_string(i);
      check("[rules] #" + std::to_string(i + 1), key, *rules_[i].as_table()->get(key.name), origin(section, key.name));
    }
}

const toml::table* Config::section(const std::string& path) const {
  return values_.at_path(path).as_table();
}

namespace {
const toml::node& lookup(const Config& c, const std::string& section, const std::string& key) {
  const toml::table* t = c.section(section);
  const toml::node* n = t ? t->get(key) : nullptr;
  if (n == nullptr) fail(GW_ERR_NOT_FOUND, "configuration key [" + section + "] " + key + " is not declared");
  return *n;
}
}  // namespace

std::string Config::get_string(const std::string& s, const std::string& k) const { return *lookup(*this, s, k).value<std::string>(); }
int64_t Config::get_int(const std::string& s, const std::string& k) const { return *lookup(*this, s, k).value<int64_t>(); }
double Config::get_float(const std::string& s, const std::string& k) const { return *lookup(*this, s, k).value<double>(); }
bool Config::get_bool(const std::string& s, const std::string& k) const { return *lookup(*this, s, k).value<bool>(); }
std::vector<std::string> Config::get_strings(const std::string& s, const std::string& k) const {
  std::vector<std::string> out;
  for (const auto& item : *lookup(*this, s, k).as_array()) out.push_back(*item.value<std::string>());
  return out;
}

std::string Config::origin(const std::string& section, const std::string& key) const {
  auto it = origins_.find(origin_key(section, key));
  return it == origins_.end() ? std::string("default") : it->second;
}

std::string Config::dump_toml() const {
  std::ostringstream os;
  os << "# gradwire effective configuration: every key, defaults included (gradwire config dump)\n";
  for (const auto& section : schema_.sections()) {
    if (section.array_of_tables) {
      os << "\n# " << section.help << "\n";
      if (rules_.empty()) os << "# (no [[" << section.path << "]] entries)\n";
      for (const auto& entry : rules_) {
        os << "[[" << section.path << "]]\n";
        for (const auto& key : section.keys) os << key.name << " = " << format_value(*entry.as_table()->get(key.name)) << "\n";
      }
      continue;
    }
    os << "\n# " << section.help << "\n[" << section.path << "]\n";
    const toml::table* t = this->section(section.path);
    for (const auto& key : section.keys) {
      os << "# " << key.help << "\n" << key.name << " = " << format_value(*t->get(key.name)) << "\n";
    }
  }
  return os.str();
}

std::string Config::reference_markdown() const {
  std::ostringstream os;
  for (const auto& section : schema_.sections()) {
    os << "## [" << (section.array_of_tables ? "[" + section.path + "]" : section.path) << "]\n\n"
       << section.help << "\n\n";
    if (section.keys.empty()) {
      os << "No keys.\n\n";
      continue;
    }
    os << "| key | type | default | allowed | environment | meaning |\n|---|---|---|---|---|---|\n";
    for (const auto& key : section.keys) {
      os << "| `" << key.name << "` | " << type_name(key.type) << " | `" << key.default_text << "` | "
         << range_text(key) << " | "
         << (section.array_of_tables ? std::string("—") : "`" + env_name(section.path, key.name) + "`") << " | "
         << key.help << " |\n";
    }
    os << "\n";
  }
  return os.str();
}

uint64_t Config::hash() const {
  // [runtime] holds per-host settings (paths, log level); ranks may differ there.
  std::string dump = dump_toml();
  const auto start = dump.find("\n[runtime]\n");
  const auto end = dump.find("\n[", start + 1);
  if (start != std::string::npos && end != std::string::npos) dump.erase(start, end - start);
  return fnv1a64(dump);
}

std::vector<std::string> bootstrap_plugin_path(const Document& doc, bool env_overrides) {
  Schema builtin = Schema::builtin();
  const SectionSpec* runtime = builtin.find("runtime");
  const KeySpec* key = runtime->key("plugin_path");
  std::vector<std::string> paths;
  const std::string var = env_name("runtime", "plugin_path");
  if (const char* env = env_overrides ? std::getenv(var.c_str()) : nullptr) return split(env, ':');
  const toml::node* node = doc.root.at_path("runtime.plugin_path").node();
  if (node == nullptr) return paths;
  if (!has_type(*key, *node))
    fail(GW_ERR_CONFIG, at(node->source()) + "[runtime] plugin_path must be an array of strings, got " + describe(*node));
  // Relative paths are relative to the configuration file's folder.
  std::filesystem::path base;
  if (!doc.origin.empty() && doc.origin != "<config_text>") base = std::filesystem::path(doc.origin).parent_path();
  for (const auto& item : *node->as_array()) {
    std::filesystem::path p(*item.value<std::string>());
    paths.push_back((p.is_relative() && !base.empty() ? base / p : p).string());
  }
  return paths;
}

}  // namespace gw::config
