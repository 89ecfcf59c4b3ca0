#include "group/topology.hpp"

#include <unistd.h>

#include <cstdlib>
#include <map>

namespace gw::comm {
namespace {

const char* env(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? v : nullptr;
}

}  // namespace

NodeKey node_key() {
  if (const char* v = env("GW_NODE_ID")) return {std::string("gw:") + v, "GW_NODE_ID"};
  if (const char* v = env("GROUP_RANK"); v && env("LOCAL_WORLD_SIZE")) return {std::string("torchrun:") + v, "torchrun GROUP_RANK"};
  if (const char* v = env("SLURM_NODEID")) return {std::string("slurm:") + v, "SLURM_NODEID"};
  char name[256] = {};
  if (gethostname(name, sizeof name - 1) != 0) return {"host:?", "host name"};
  return {std::string("host:") + name, "host name"};
}

bool Topology::even() const {
  for (const auto& n : nodes)
    if (n.size() != nodes.front().size()) return false;
  return true;
}

uint32_t Topology::local_index(uint32_t rank) const {
  const auto& g = local_group(rank);
  for (uint32_t i = 0; i < g.size(); ++i)
    if (g[i] == rank) return i;
  return 0;
}

std::vector<uint32_t> Topology::cross_group(uint32_t rank) const {
  const uint32_t i = local_index(rank);
  std::vector<uint32_t> g;
  for (const auto& n : nodes) g.push_back(n.at(i));
  return g;
}

std::string Topology::describe() const {
  std::string s = std::to_string(nodes.size()) + (nodes.size() == 1 ? " node:" : " nodes:");
  for (const auto& n : nodes) {
    s += " [";
    for (size_t i = 0; i < n.size(); ++i) s += (i ? " " : "") + std::to_string(n[i]);
    s += "]";
  }
  return s;
}

Topology topology_from_keys(const std::vector<std::string>& keys, const std::string& source) {
  Topology t;
  t.source = source;
  std::map<std::string, uint32_t> index;
  for (uint32_t r = 0; r < keys.size(); ++r) {
    auto [it, fresh] = index.emplace(keys[r], uint32_t(t.nodes.size()));
    if (fresh) t.nodes.emplace_back();
    t.nodes[it->second].push_back(r);
    t.node_of.push_back(it->second);
  }
  if (keys.empty()) {
    t.nodes.push_back({0});
    t.node_of.push_back(0);
  }
  return t;
}

}  // namespace gw::comm
