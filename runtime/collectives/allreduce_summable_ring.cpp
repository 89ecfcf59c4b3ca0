#include "collectives/compressed.hpp"
#include "collectives/pipeline.hpp"
#include "kernels/reduce.hpp"

namespace gw::coll {

// The ring reduce-scatter and ring allgather of allreduce_ring, over encoded pieces. Each block is cut
// into P pieces that travel independently: at reduce-scatter step s a piece arrives from the left, is
// decoded onto this rank's own values of that piece (GW_DECODE_ACCUMULATE into the f32 buffer),
// re-encoded and sent on at step s + 1 while the next piece is still on its way. When a piece of the
// block this rank owns is complete, the owner encodes it once; those bytes go round the ring unchanged
// and every rank, the owner too, decodes them: all ranks end bit-identical. Message numbers: reduce-
// scatter step s, piece p is s * P + p; allgather step s is (n - 1 + s) * P + p.
// Out of place (in != buf) the input is read where it is: the first step encodes its block from `in`,
// and a piece of the other blocks is copied to buf just before the first contribution is added onto it,
// while it is in the caches. A copy of the whole input up front cost a pass over memory, and the block
// the first step sends (the allgather overwrites it) needs none.
Task allreduce_summable_ring(Collective& c, CodecOps& ops, const float* in, float* buf, uint64_t count,
                             gw_reduce_op op, uint64_t chunk_elements) {
  const uint32_t n = c.size(), r = c.rank();
  const uint32_t right = (r + 1) % n, left = (r + n - 1) % n;
  const Blocks blocks = even_blocks(count, n, 4);
  const uint64_t largest = blocks.count[0];
  const uint64_t P = piece_count(largest, chunk_elements, 2 * (n - 1));
  std::vector<Pieces> pieces;
  for (uint32_t b = 0; b < n; ++b) pieces.push_back(split_even(blocks.offset[b], blocks.count[b], P));
  const uint64_t capacity = ops.max_payload((largest + P - 1) / P);
  const auto index = [P](uint64_t s, uint64_t p) { return uint32_t(s * P + p); };
  const auto send_block = [n, r](uint32_t s) { return (r + 2 * n - 1 - s) % n; };
  const auto recv_block = [n, r](uint32_t s) { return (r + 2 * n - 2 - s) % n; };

  std::vector<PayloadBuffer> rs_out((n - 1) * P), rs_in((n - 1) * P), ag_in((n - 1) * P), final_out(P);
  carve(c, 0, capacity, {&rs_out, &rs_in, &ag_in, &final_out});

  Pipeline pipe(c);
  const auto encode_step = [&](uint32_t s, uint64_t p) {
    const uint32_t b = send_block(s);
    const uint64_t off = pieces[b].offset[p], cnt = pieces[b].count[p];
    PayloadBuffer& out = rs_out[index(s, p)];
    out.size = ops.encode(off, (s == 0 ? in : buf) + off, cnt, out.data, out.capacity);
    pipe.send(right, index(s, p), out);
  };
  const auto finalize = [&](uint64_t p) {
    const uint64_t off = pieces[r].offset[p], cnt = pieces[r].count[p];
    // The owner averages once, before encoding: every rank decodes the average, and no rank makes a
    // pass of its own over the whole buffer to divide.
    if (op == GW_REDUCE_AVG) ops.memory().divide(buf + off, cnt, n);
    PayloadBuffer& fin = final_out[p];
    fin.size = ops.encode(off, buf + off, cnt, fin.data, fin.capacity);
    pipe.send(right, index(n - 1, p), fin);
    ops.decode(off, fin.data, fin.size, buf + off, cnt, false);
  };

  for (uint32_t s = 0; s + 1 < n; ++s) {
    const uint32_t b = recv_block(s);
    for (uint64_t p = 0; p < P; ++p) {
      if (pieces[b].count[p] == 0) continue;
      pipe.receive(left, index(s, p), rs_in[index(s, p)], [&, s, b, p] {
        const uint64_t off = pieces[b].offset[p], cnt = pieces[b].count[p];
        const PayloadBuffer& from = rs_in[index(s, p)];
        if (in != buf) ops.memory().copy(buf + off, in + off, cnt);
        ops.decode(off, from.data, from.size, buf + off, cnt, true);
        if (s + 2 < n) {
          pipe.then([&, s, p] { encode_step(s + 1, p); });
        } else {
          pipe.then([&, p] { finalize(p); }, true);
        }
      });
    }
  }
  for (uint32_t s = 0; s + 1 < n; ++s) {
    const uint32_t b = (r + 2 * n - 1 - s) % n;  // allgather step s brings block r - s - 1
    for (uint64_t p = 0; p < P; ++p) {
      if (pieces[b].count[p] == 0) continue;
      pipe.receive(left, index(n - 1 + s, p), ag_in[index(s, p)], [&, s, b, p] {
        const uint64_t off = pieces[b].offset[p], cnt = pieces[b].count[p];
        const PayloadBuffer& from = ag_in[index(s, p)];
        if (s + 2 < n) pipe.send(right, index(n + s, p), from);
        ops.decode(off, from.data, from.size, buf + off, cnt, false);
      });
    }
  }
  for (uint64_t p = 0; p < P; ++p)
    if (pieces[send_block(0)].count[p] > 0) pipe.then([&, p] { encode_step(0, p); });
  co_await pipe.run();
}

}  // namespace gw::coll
