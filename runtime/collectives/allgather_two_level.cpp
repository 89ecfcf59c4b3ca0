#include <cstring>

#include "collectives/compressed.hpp"

namespace gw::coll {

// Two-level compressed allgather: compressed only between the nodes, exact copies inside each node.
//   1. between the nodes, over the cross group (the ranks of this rank's local index, one per node):
//      allgather_direct of this rank's shard, so it holds every cross member's shard decoded
//      (messages 0 .. P - 1);
//   2. inside the node: those M decoded shards go raw to every other rank of the node, whose M decoded
//      shards come back (message m for the shard of the m-th node; the peers differ from phase 1's).
// Every shard's bits come from one payload decoded alike everywhere; a node's uplink carries each of
// its ranks' payloads to each other node once (L times fewer bytes than the flat algorithm).
Task allgather_two_level(Collective& c, ShardArgs a, const comm::Topology& t) {
  const uint32_t me = c.rank(), world = c.size();
  const std::vector<uint32_t> local = t.local_group(me);
  const std::vector<uint32_t> cross = t.cross_group(me);
  const uint32_t L = uint32_t(local.size()), li = t.local_index(me), M = uint32_t(cross.size());
  const uint32_t ni = t.node_of.at(me);  // this rank's place in its cross group (one rank per node, in node order)
  const uint64_t count = a.count, bytes = 4 * count;
  CodecOps ops(*a.codec, a.ef, a.ctx, ni, M);

  // 1. Between the nodes, into scratch: `in` may lie anywhere in `out`, and is read until this ends.
  float* const gathered = reinterpret_cast<float*>(c.scratch(2, M * bytes));
  c.set_group(cross, 0);
  co_await allgather_direct(c, ops, a.in, gathered, count, std::max<uint64_t>(1, a.chunk_elements));
  c.set_group({}, 0);

  // 2. Inside the node.
  for (uint32_t m = 0; m < M; ++m)
    std::memcpy(a.out + uint64_t(cross[m]) * count, gathered + uint64_t(m) * count, bytes);
  for (uint32_t j = 0; j < L; ++j) {
    if (j == li) continue;
    const std::vector<uint32_t> theirs = t.cross_group(local[j]);
    for (uint32_t m = 0; m < M; ++m) {
      c.send(local[j], m, gathered + uint64_t(m) * count, bytes);
      c.recv(local[j], m, a.out + uint64_t(theirs[m]) * count, bytes);
    }
  }
  co_await c.all();
  book(a.stats, c, ops, 4 * uint64_t(world) * count);
}

}  // namespace gw::coll
