#include "comm/identity.hpp"

#include <charconv>
#include <set>
#include <sstream>

#include "core/error.hpp"

namespace gw::comm {
namespace {

// "section.key" -> value from the effective configuration, without the [runtime] section (plugin paths
// and log levels may differ between machines).
std::map<std::string, std::string> config_keys(const config::Config& config) {
  std::map<std::string, std::string> keys;
  std::istringstream in(config.dump_toml());
  std::string line, section;
  int rule = -1;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    if (line.rfind("[[", 0) == 0) {
      section = line.substr(2, line.find("]]") - 2) + "." + std::to_string(++rule);
      continue;
    }
    if (line[0] == '[') {
      section = line.substr(1, line.find(']') - 1);
      continue;
    }
    if (section == "runtime") continue;
    const auto eq = line.find(" = ");
    if (eq == std::string::npos) continue;
    keys[section + "." + line.substr(0, eq)] = line.substr(eq + 3);
  }
  return keys;
}

}  // namespace

Identity Identity::of(const Runtime& runtime, const std::string& transport) {
  Identity id;
  for (const auto& c : runtime.registry().candidates())
    if (c.plugin) id.plugins[c.plugin->descriptor().name] = c.plugin->descriptor().version;
  id.transport = transport;
  id.config_hash = runtime.config().hash();
  id.config = config_keys(runtime.config());
  return id;
}

// One item per line: "plugin\tname\tversion", "transport\tname", "hash\tN", "config\tkey\tvalue".
std::string Identity::serialize() const {
  std::string s;
  for (const auto& [name, version] : plugins) s += "plugin\t" + name + "\t" + version + "\n";
  s += "transport\t" + transport + "\n";
  s += "hash\t" + std::to_string(config_hash) + "\n";
  for (const auto& [key, value] : config) s += "config\t" + key + "\t" + value + "\n";
  return s;
}

Identity Identity::parse(const std::string& text) {
  Identity id;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    const auto a = line.find('\t');
    if (a == std::string::npos) fail(GW_ERR_CORRUPT, "bootstrap: malformed identity record");
    const std::string kind = line.substr(0, a), rest = line.substr(a + 1);
    const auto b = rest.find('\t');
    if (kind == "plugin" && b != std::string::npos) id.plugins[rest.substr(0, b)] = rest.substr(b + 1);
    else if (kind == "config" && b != std::string::npos) id.config[rest.substr(0, b)] = rest.substr(b + 1);
    else if (kind == "transport") id.transport = rest;
    else if (kind == "hash") {
      // From another process: a malformed number is a corrupt record, not an exception of the library's.
      const auto [end, ec] = std::from_chars(rest.data(), rest.data() + rest.size(), id.config_hash);
      if (ec != std::errc() || end != rest.data() + rest.size() || rest.empty())
        fail(GW_ERR_CORRUPT, "bootstrap: malformed identity record (hash '" + rest.substr(0, 32) + "')");
    }
    else fail(GW_ERR_CORRUPT, "bootstrap: malformed identity record (" + kind + ")");
  }
  return id;
}

namespace {

template <class Map>
void compare_maps(const Map& mine, const Map& root, const std::string& what, std::vector<std::string>& out) {
  std::set<std::string> names;
  for (const auto& [k, v] : mine) names.insert(k);
  for (const auto& [k, v] : root) names.insert(k);
  for (const auto& name : names) {
    const auto a = mine.find(name), b = root.find(name);
    if (a == mine.end()) out.push_back(what + " '" + name + "' is missing (rank 0 has " + b->second + ")");
    else if (b == root.end()) out.push_back(what + " '" + name + "' = " + a->second + " is not on rank 0");
    else if (a->second != b->second) out.push_back(what + " '" + name + "': " + a->second + " vs " + b->second + " on rank 0");
  }
}

}  // namespace

void check_identities(const std::vector<Identity>& ids) {
  std::string report;
  size_t differing = 0;
  for (size_t r = 1; r < ids.size(); ++r) {
    std::vector<std::string> diffs;
    compare_maps(ids[r].plugins, ids[0].plugins, "plugin version", diffs);
    if (ids[r].transport != ids[0].transport)
      diffs.push_back("transport " + ids[r].transport + " vs " + ids[0].transport + " on rank 0");
    if (ids[r].config_hash != ids[0].config_hash) {
      const size_t before = diffs.size();
      compare_maps(ids[r].config, ids[0].config, "config key", diffs);
      if (diffs.size() == before) diffs.push_back("configuration hash differs");
    }
    if (diffs.empty()) continue;
    if (++differing > 8) continue;  // keep the message readable on large jobs
    report += "\n  rank " + std::to_string(r) + " differs from rank 0: ";
    for (size_t i = 0; i < diffs.size(); ++i) report += (i ? "; " : "") + diffs[i];
  }
  if (differing == 0) return;
  if (differing > 8) report += "\n  ... and " + std::to_string(differing - 8) + " more ranks";
  fail(GW_ERR_MISMATCH, "the ranks are not set up alike (plugins, transport or configuration):" + report +
                            "\nEvery rank must load the same plugin versions and use the same configuration "
                            "(compare `gradwire plugins` and `gradwire config dump` on the machines).");
}

}  // namespace gw::comm
