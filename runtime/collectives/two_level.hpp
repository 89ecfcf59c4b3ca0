// Two-level compressed allreduce: exact inside each node, compressed only between nodes.
//
//   1. reduce-scatter inside the node (exact f32 sums): local index i ends holding block i of the
//      node's sum;
//   2. each local index i exchanges block i compressed with its peers on the other nodes (the cross
//      group: one rank per node), in parallel with the other local indices — the only lossy step. With
//      2 nodes each node's sum is encoded once and the payloads are gathered and decoded in node order
//      (as many bytes as a scatter-reduce-allgather, one quantization); with more nodes the cross group
//      runs a scatter-reduce-allgather by default (bandwidth-optimal; its owners re-encode the sums), or
//      gathers with [collectives] two_level_cross = "gather" (one quantization, nodes / 2 x the bytes);
//   3. allgather inside the node of the finished blocks.
// The phases are pipelined over pieces (allreduce_two_level_pipelined.cpp). Every rank ends with the same
// bits. Behaviour and measurements: docs/two-level.md.
#pragma once

#include <string>

#include "collectives/compressed.hpp"
#include "group/topology.hpp"
#include "model/two_level_cross.hpp"

namespace gw::coll {

// Whether a compressed allreduce on this topology runs the two-level algorithm, for the setting
// [collectives] two_level (auto, on, off). Throws GW_ERR_UNSUPPORTED with "on" and nodes of different
// sizes (every rank has the same topology, so every rank refuses alike).
bool use_two_level(const comm::Topology& topology, const std::string& setting);

// The algorithm above over args (in place on args.buf; args.in read when set); `gather` from
// gathers_encoded (the same on every rank).
Task allreduce_two_level(Collective& c, CompressedArgs args, comm::Topology topology, bool gather);

}  // namespace gw::coll
