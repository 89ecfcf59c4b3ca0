// When the two-level allreduce runs; the algorithm itself: allreduce_two_level_pipelined.cpp.
#include "collectives/two_level.hpp"
#include "core/error.hpp"

namespace gw::coll {

bool use_two_level(const comm::Topology& t, const std::string& setting) {
  if (setting == "off") return false;
  if (!t.even()) {
    if (setting != "on") return false;
    std::string sizes;
    for (const auto& n : t.nodes) sizes += (sizes.empty() ? "" : ", ") + std::to_string(n.size());
    fail(GW_ERR_UNSUPPORTED, "[collectives] two_level = \"on\" needs the same number of ranks on every node, but "
                             "the nodes (from " + t.source + ") hold " + sizes +
                             " ranks (" + t.describe() + "); launch as many ranks per node, or set two_level "
                             "= \"auto\" (flat on uneven nodes) or \"off\"");
  }
  if (setting == "on") return true;
  return t.node_count() >= 2 && t.nodes.front().size() >= 2;
}

}  // namespace gw::coll
