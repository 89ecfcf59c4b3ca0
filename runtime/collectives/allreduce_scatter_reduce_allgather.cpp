#include "collectives/compressed.hpp"
#include "collectives/pipeline.hpp"
#include "kernels/reduce.hpp"

namespace gw::coll {

// For codecs whose encoded bodies cannot be added (int8, onebit). Block b belongs to rank b. Every
// rank encodes each piece of every other block once and sends it to that block's owner. When an owner
// has every contribution of one of its pieces it decodes and sums them in rank order 0, 1, ..., n - 1
// (its own values, unencoded, at its own place in that order) in f32, encodes the sum once and sends
// those bytes to every rank; every rank, the owner too, decodes the same bytes, so all end
// bit-identical. Pieces are pipelined: contributions of later pieces are encoded while earlier ones
// travel and are summed. Message numbers: contribution of piece p is p, the owner's result P + p.
Task allreduce_scatter_reduce_allgather(Collective& c, CodecOps& ops, const float* in, float* buf, uint64_t count, gw_reduce_op op,
                                        uint64_t chunk_elements) {
  const uint32_t n = c.size(), r = c.rank();
  const Blocks blocks = even_blocks(count, n, 4);
  const uint64_t largest = blocks.count[0];
  const uint64_t P = piece_count(largest, chunk_elements, 2);
  std::vector<Pieces> pieces;
  for (uint32_t b = 0; b < n; ++b) pieces.push_back(split_even(blocks.offset[b], blocks.count[b], P));
  const uint64_t largest_piece = (largest + P - 1) / P;
  const uint64_t capacity = ops.max_payload(largest_piece);

  std::vector<PayloadBuffer> contrib_out(n * P), contrib_in(n * P), final_in(n * P), final_out(P);
  carve(c, 0, capacity, {&contrib_out, &contrib_in, &final_in, &final_out});
  std::vector<uint32_t> arrived(P, 0);
  TensorMemory& memory = ops.memory();
  float* const sum = memory.scratch(largest_piece);  // in the tensor's memory

  Pipeline pipe(c);
  const auto finalize = [&](uint64_t p) {
    const uint64_t off = pieces[r].offset[p], cnt = pieces[r].count[p];
    for (uint32_t q = 0; q < n; ++q) {
      if (q == r) {
        if (q == 0) {
          memory.copy(sum, in + off, cnt);
        } else {
          memory.add(sum, in + off, cnt);
        }
      } else {
        const PayloadBuffer& contribution = contrib_in[q * P + p];
        ops.decode(off, contribution.data, contribution.size, sum, cnt, q != 0);
      }
    }
    // The owner averages once, before encoding: every rank decodes the average.
    if (op == GW_REDUCE_AVG) memory.divide(sum, cnt, n);
    PayloadBuffer& fin = final_out[p];
    fin.size = ops.encode(off, sum, cnt, fin.data, fin.capacity);
    for (uint32_t k = 1; k < n; ++k) pipe.send((r + k) % n, uint32_t(P + p), fin);
    ops.decode(off, fin.data, fin.size, buf + off, cnt, false);
  };

  for (uint64_t p = 0; p < P; ++p) {
    if (pieces[r].count[p] == 0) continue;
    for (uint32_t q = 0; q < n; ++q) {
      if (q == r) continue;
      pipe.receive(q, uint32_t(p), contrib_in[q * P + p], [&, p] {
        // Behind this rank's own contributions, not before them: the other owners wait for those as
        // this one waits for theirs, and finalizing first starved them (2 ranks' onebit over shared
        // memory took 25-31 ms instead of 20 for 128 MiB, the ranks waiting on each other at the end).
        if (++arrived[p] == n - 1) pipe.then([&, p] { finalize(p); });
      });
    }
  }
  for (uint32_t b = 0; b < n; ++b) {
    if (b == r) continue;
    for (uint64_t p = 0; p < P; ++p) {
      if (pieces[b].count[p] == 0) continue;
      pipe.receive(b, uint32_t(P + p), final_in[b * P + p], [&, b, p] {
        const uint64_t off = pieces[b].offset[p], cnt = pieces[b].count[p];
        const PayloadBuffer& result = final_in[b * P + p];
        ops.decode(off, result.data, result.size, buf + off, cnt, false);
      });
    }
  }
  // Piece by piece, to the owners after this rank first, so no owner is everyone's first target.
  for (uint64_t p = 0; p < P; ++p) {
    for (uint32_t k = 1; k < n; ++k) {
      const uint32_t b = (r + k) % n;
      if (pieces[b].count[p] == 0) continue;
      pipe.then([&, b, p] {
        const uint64_t off = pieces[b].offset[p], cnt = pieces[b].count[p];
        PayloadBuffer& out = contrib_out[b * P + p];
        out.size = ops.encode(off, in + off, cnt, out.data, out.capacity);
        pipe.send(b, uint32_t(p), out);
      });
    }
  }
  co_await pipe.run();
}

}  // namespace gw::coll
