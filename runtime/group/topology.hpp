// Which ranks share a node: each rank contributes a node key at communicator creation (gathered with the
// transports' addresses); ranks with the same key form a node. The two-level collectives use it
// (collectives/two_level.hpp): a local group per node, a cross group per local index.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace gw::comm {

// This rank's node key and where it came from, in order: GW_NODE_ID (gradwire's own, what the emulated
// cluster sets per node), torchrun's GROUP_RANK (the node's index), Slurm's SLURM_NODEID, else the host
// name (Open MPI and plain launches; network namespaces on one host share it).
struct NodeKey {
  std::string key;
  std::string source;
};
NodeKey node_key();

struct Topology {
  std::vector<uint32_t> node_of;              // by rank: the node's index (nodes numbered by lowest rank)
  std::vector<std::vector<uint32_t>> nodes;  // each node's ranks, ascending
  std::string source;                        // where the keys came from ("GW_NODE_ID", "host name", ...)

  uint32_t node_count() const { return uint32_t(nodes.size()); }
  // Every node holds the same number of ranks.
  bool even() const;
  // The ranks of `rank`'s node, ascending; `rank`'s position in it is its local index.
  const std::vector<uint32_t>& local_group(uint32_t rank) const { return nodes.at(node_of.at(rank)); }
  uint32_t local_index(uint32_t rank) const;
  // The ranks with `rank`'s local index, one per node, in node order (even topologies only).
  std::vector<uint32_t> cross_group(uint32_t rank) const;
  // "2 nodes: [0 1] [2 3]"
  std::string describe() const;
};

// The topology of the gathered keys (index = rank); one node when keys is empty.
Topology topology_from_keys(const std::vector<std::string>& keys, const std::string& source);

}  // namespace gw::comm
