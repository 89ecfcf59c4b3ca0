#include <algorithm>
#include <cstring>

#include "collectives/reduce.hpp"
#include "collectives/two_level.hpp"
#include "core/error.hpp"

namespace gw::coll {
namespace {

// Message numbers: the node's reduce-scatter uses 0 .. L-2, the allgather starts here. The cross
// group's compressed allreduce talks to other peers only (one rank per node), so it may use any number.
constexpr uint32_t kAllgatherBase = 1u << 15;

}  // namespace

bool gathers_encoded(uint32_t nodes) { return nodes <= 2; }

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

Task allreduce_two_level(Collective& c, CompressedArgs a, comm::Topology t) {
  const uint32_t world = c.size();
  const uint32_t me = c.rank();
  const std::vector<uint32_t> local = t.local_group(me);
  const std::vector<uint32_t> cross = t.cross_group(me);
  const uint32_t L = uint32_t(local.size());
  const uint32_t i = t.local_index(me);
  if (a.in != nullptr && a.in != a.buf && a.count > 0) std::memmove(a.buf, a.in, a.count * 4);
  const Blocks blocks = even_blocks(a.count, L, 4);

  // 1. Exact reduce-scatter inside the node: local index i owns block i.
  if (L > 1) {
    c.set_group(local, 0);
    co_await reduce_scatter_ring(c, a.buf, blocks, GW_DTYPE_F32, GW_REDUCE_SUM, 0, 0);
  }
  // 2. The node sums' block i across the nodes, compressed; with one node nothing is lossy.
  float* block = reinterpret_cast<float*>(blocks.at(a.buf, i));
  const uint32_t M = uint32_t(cross.size());
  if (M > 1 && blocks.count[i] > 0) {
    c.set_group(cross, 0);
    if (gathers_encoded(M)) {
      // Each node's sum is encoded once and every member decodes all M payloads in node order.
      CodecOps ops(*a.codec, a.ef, a.ctx, c.rank(), c.size());
      co_await allreduce_sparse_allgather(c, ops, block, block, blocks.count[i], GW_REDUCE_SUM,
                                          std::max<uint64_t>(1, a.chunk_elements));
    } else {
      CompressedArgs x = a;
      x.buf = block;
      x.in = nullptr;
      x.count = blocks.count[i];
      x.op = GW_REDUCE_SUM;
      x.stats = nullptr;
      co_await allreduce_compressed(c, x);
    }
  }
  c.set_group({}, 0);
  if (a.op == GW_REDUCE_AVG) divide(block, blocks.count[i], GW_DTYPE_F32, world);
  // 3. Allgather inside the node.
  if (L > 1) {
    c.set_group(local, kAllgatherBase);
    co_await allgather_ring(c, a.buf, blocks, 0, 0);
    c.set_group({}, 0);
  }
  if (a.stats) {
    a.stats->raw_bytes += 4 * a.count;
    a.stats->wire_bytes += c.bytes_sent();
  }
}

}  // namespace gw::coll
