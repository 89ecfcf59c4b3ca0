#include <cstring>

#include "collectives/compressed.hpp"
#include "kernels/reduce.hpp"

namespace gw::coll {

// Two-level compressed reduce-scatter: exact inside each node, compressed only between the nodes.
//   1. inside the node: this rank sends each other rank j of its node its raw values of the shards owned
//      by j's cross group (the ranks of j's local index, one per node), and sums, for each shard of its
//      own cross group, the node's values in local-index order (messages 0 .. M - 1, M nodes);
//   2. between the nodes, over the cross group (one rank per node): reduce_scatter_all_to_all of those
//      node sums, each encoded once by its node and summed by the owner in node order (messages from M).
// A node's uplink carries each node sum once (L times fewer bytes than the flat all-to-all with L ranks
// per node), and the result is the same bits whichever run computes it.
Task reduce_scatter_two_level(Collective& c, ShardArgs a, const comm::Topology& t) {
  const uint32_t me = c.rank(), world = c.size();
  const std::vector<uint32_t> local = t.local_group(me);
  const std::vector<uint32_t> cross = t.cross_group(me);
  const uint32_t L = uint32_t(local.size()), li = t.local_index(me), M = uint32_t(cross.size());
  const uint32_t ni = t.node_of.at(me);  // this rank's place in its cross group (one rank per node, in node order)
  const uint64_t count = a.count, bytes = 4 * count;
  CodecOps ops(*a.codec, a.ef, a.ctx, ni, M);
  TensorMemory& memory = ops.memory();

  // 1. The node's sums of every shard of this rank's cross group, sums[m] for cross[m].
  float* const landing = reinterpret_cast<float*>(c.scratch(2, std::max<uint64_t>(1, uint64_t(L) * M * bytes)));
  float* const sums = reinterpret_cast<float*>(c.scratch(3, M * bytes));
  for (uint32_t j = 0; j < L; ++j) {
    if (j == li) continue;
    const std::vector<uint32_t> theirs = t.cross_group(local[j]);
    for (uint32_t m = 0; m < M; ++m) {
      c.send(local[j], m, a.in + uint64_t(theirs[m]) * count, bytes);
      c.recv(local[j], m, landing + (uint64_t(j) * M + m) * count, bytes);
    }
  }
  co_await c.all();
  for (uint32_t m = 0; m < M; ++m) {
    float* sum = sums + uint64_t(m) * count;
    for (uint32_t j = 0; j < L; ++j) {
      const float* values = j == li ? a.in + uint64_t(cross[m]) * count : landing + (uint64_t(j) * M + m) * count;
      if (j == 0) {
        memory.copy(sum, values, count);
      } else {
        memory.add(sum, values, count);
      }
    }
  }

  // 2. Between the nodes.
  const bool staged = overlap(a.in, 4 * uint64_t(world) * count, a.out, bytes);
  float* result = staged ? reinterpret_cast<float*>(c.scratch(1, bytes)) : a.out;
  c.set_group(cross, M);
  co_await reduce_scatter_all_to_all(c, ops, sums, result, count, std::max<uint64_t>(1, a.chunk_elements));
  c.set_group({}, 0);
  if (a.op == GW_REDUCE_AVG) divide(result, count, GW_DTYPE_F32, world);
  if (staged) std::memmove(a.out, result, bytes);
  book(a.stats, c, ops, 4 * uint64_t(world) * count);
}

}  // namespace gw::coll
