// Which exchange the two-level allreduce runs between nodes, for [collectives] two_level_cross. Header
// only and free of the runtime's types, so the cost model (model/model.cpp) follows the same rule.
#pragma once

#include <cstdint>
#include <string>

namespace gw::coll {

// Whether the cross phase gathers every node's encoded sum (true) or runs a scatter-reduce-allgather,
// for two_level_cross (auto, gather, scatter): the gather quantizes each node's sum once but sends
// (M - 1) payloads per rank where the scatter-reduce-allgather sends 2 (M - 1) / M, so auto gathers
// while that costs no more (M <= 2).
inline bool gathers_encoded(uint64_t nodes, const std::string& setting) {
  if (setting == "gather") return true;
  if (setting == "scatter") return false;
  return nodes <= 2;
}

}  // namespace gw::coll
