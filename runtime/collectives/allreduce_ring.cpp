#include <algorithm>
#include <vector>

#include "collectives/algorithms.hpp"
#include "kernels/reduce.hpp"

namespace gw::coll {
namespace {

// Segments a block is cut into: about 256 KiB each, at most kMaxSegments (4 measured as good as 16 or
// better on 2 and 4 ranks, 1 MiB - 64 MiB, with fewer messages) — a function of the count,
// dtype and world size only, so every rank cuts alike).
constexpr uint64_t kSegmentBytes = 256 << 10;
constexpr uint64_t kMaxSegments = 4;

uint32_t segments_for(const Blocks& blocks, uint32_t n) {
  const uint64_t largest = blocks.bytes(0);  // even_blocks: the first block is the largest
  // 2 (n - 1) S message numbers must fit a collective's (comm::tags::kStepBits).
  const uint64_t limit = std::max<uint64_t>(1, ((uint64_t{1} << comm::tags::kStepBits) - 1) / (2 * std::max(1u, n - 1)));
  return uint32_t(std::clamp<uint64_t>((largest + kSegmentBytes - 1) / kSegmentBytes, 1, std::min(kMaxSegments, limit)));
}

// The ring with every block cut into S segments that move on their own: a segment received at
// reduce-scatter step s is reduced and sent on at step s + 1 at once, while the next segments are still
// arriving; the owner's finished segments start the allgather the same way. So reductions overlap
// transfers and a block's first segment leaves before its last has arrived. An allgather segment is
// received straight into its place once this rank's reduce-scatter send of that same region has
// completed. Message numbers: reduce-scatter step s, segment j is s * S + j; allgather step t is
// (n - 1 + t) * S + j.
Task allreduce_ring_segmented(Collective& c, void* buf, const Blocks& blocks, gw_dtype dtype, gw_reduce_op op,
                              uint32_t S) {
  const uint32_t n = c.size(), r = c.rank();
  const uint32_t right = (r + 1) % n, left = (r + n - 1) % n;
  const uint32_t steps = n - 1;
  const uint32_t esize = blocks.element_size;
  std::vector<Blocks> segs;  // segs[b]: the segments of block b, offsets relative to the buffer
  for (uint32_t b = 0; b < n; ++b) segs.push_back(even_blocks(blocks.count[b], S, esize, blocks.offset[b]));
  const uint64_t landing_bytes = segs[0].bytes(0);
  unsigned char* landing = c.scratch(0, std::max<uint64_t>(1, landing_bytes * S));
  const auto rs_send_block = [&](uint32_t s) { return (r + 2 * n - 1 - s) % n; };
  const auto rs_recv_block = [&](uint32_t s) { return (r + 2 * n - 2 - s) % n; };
  const auto ag_recv_block = [&](uint32_t t) { return (r + 2 * n - 1 - t) % n; };  // = rs_send_block(t)

  enum class Kind : uint8_t { RsSend, RsRecv, AgSend, AgRecv };
  struct What {
    Kind kind;
    uint32_t step;
    uint32_t seg;
  };
  std::vector<What> what;  // by message id
  const auto note = [&](uint32_t id, What w) {
    if (what.size() <= id) what.resize(id + 1);
    what[id] = w;
  };
  const auto send_rs = [&](uint32_t s, uint32_t j) {
    const uint32_t b = rs_send_block(s);
    note(c.send(right, s * S + j, segs[b].at(buf, j), segs[b].bytes(j)), {Kind::RsSend, s, j});
  };
  const auto recv_rs = [&](uint32_t s, uint32_t j) {
    const uint32_t b = rs_recv_block(s);
    note(c.recv(left, s * S + j, landing + j * landing_bytes, segs[b].bytes(j)), {Kind::RsRecv, s, j});
  };
  const auto send_ag = [&](uint32_t t, uint32_t j) {
    const uint32_t b = (r + n - t) % n;
    note(c.send(right, (steps + t) * S + j, segs[b].at(buf, j), segs[b].bytes(j)), {Kind::AgSend, t, j});
  };
  const auto recv_ag = [&](uint32_t t, uint32_t j) {
    const uint32_t b = ag_recv_block(t);
    note(c.recv(left, (steps + t) * S + j, segs[b].at(buf, j), segs[b].bytes(j)), {Kind::AgRecv, t, j});
  };

  for (uint32_t j = 0; j < S; ++j) {
    send_rs(0, j);
    recv_rs(0, j);
  }
  const uint64_t total = uint64_t(4) * steps * S;
  uint64_t done = 0;
  while (done < total) {
    co_await c.any();
    for (uint32_t id : c.take_completed()) {
      ++done;
      const What w = what.at(id);
      switch (w.kind) {
        case Kind::RsRecv: {
          const uint32_t b = rs_recv_block(w.step);
          unsigned char* mine = segs[b].at(buf, w.seg);
          reduce(mine, landing + w.seg * landing_bytes, mine, segs[b].count[w.seg], dtype, op);
          if (w.step + 1 < steps) {
            send_rs(w.step + 1, w.seg);  // the block just reduced is the next step's send
            recv_rs(w.step + 1, w.seg);
          } else {  // block r's segment is complete: only the owner finishes it, the others get its bytes
            if (op == GW_REDUCE_AVG) divide(mine, segs[b].count[w.seg], dtype, n);
            send_ag(0, w.seg);
          }
          break;
        }
        case Kind::RsSend: recv_ag(w.step, w.seg); break;  // that region is free for its final bytes
        case Kind::AgRecv:
          if (w.step + 1 < steps) send_ag(w.step + 1, w.seg);
          break;
        case Kind::AgSend: break;
      }
    }
  }
}

}  // namespace

Task allreduce_ring(Collective& c, void* buf, uint64_t count, gw_dtype dtype, gw_reduce_op op) {
  const uint32_t n = c.size(), r = c.rank();
  const Blocks blocks = even_blocks(count, n, gw_dtype_size(dtype));
  if (const uint32_t S = segments_for(blocks, n); S > 1 && n > 1) {
    co_await allreduce_ring_segmented(c, buf, blocks, dtype, op, S);
    co_return;
  }
  co_await reduce_scatter_ring(c, buf, blocks, dtype, op, 0, 0);
  // Only the owner finishes its block; the others receive its bytes, so every rank ends identical.
  if (op == GW_REDUCE_AVG) divide(blocks.at(buf, r), blocks.count[r], dtype, n);
  co_await allgather_ring(c, buf, blocks, 0, n - 1);
}

}  // namespace gw::coll
