// Two-level compressed allreduce: exact inside each node, compressed only between nodes.
//
//   1. reduce-scatter inside the node (ring over the node's ranks, exact f32 sums): local index i ends
//      holding block i of the node's sum;
//   2. each local index i runs the compressed allreduce of block i with its peers on the other nodes
//      (the cross group: one rank per node), in parallel with the other local indices — the only lossy
//      step, quantizing each node's sum once instead of every rank's contribution;
//   3. allgather inside the node of the finished blocks.
// Every rank ends with the same bits: the cross group's compressed allreduce leaves identical results on
// its members and the allgather copies them. Behaviour and measurements: docs/two-level.md.
#pragma once

#include <string>

#include "collectives/compressed.hpp"
#include "comm/topology.hpp"

namespace gw::coll {

// Whether a compressed allreduce on this topology runs the two-level algorithm, for the setting
// [collectives] two_level (auto, on, off). Throws GW_ERR_UNSUPPORTED with "on" and nodes of different
// sizes (every rank has the same topology, so every rank refuses alike).
bool use_two_level(const comm::Topology& topology, const std::string& setting);

// The algorithm above over args (in place on args.buf; args.in read when set).
Task allreduce_two_level(Collective& c, CompressedArgs args, comm::Topology topology);

}  // namespace gw::coll
