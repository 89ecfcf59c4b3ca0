#include <algorithm>
#include <cstring>

#include "collectives/compressed.hpp"
#include "collectives/pipeline.hpp"

namespace gw::coll {
namespace {

// Each rank encodes piece p of its shard once (error feedback keyed by the piece's offset in `out`),
// sends the payload to every other rank as message p and decodes it into its own place of `out`; every
// payload that arrives is decoded into its sender's place. Every shard's bits come from one payload
// decoded alike everywhere.
Task allgather_direct(Collective& c, CodecOps& ops, const float* in, float* out, uint64_t count,
                      uint64_t chunk_elements) {
  const uint32_t n = c.size(), r = c.rank();
  const Pieces pieces = split_even(0, count, piece_count(count, chunk_elements, 1));
  const uint64_t P = pieces.size();
  std::vector<PayloadBuffer> payloads(n * P);                  // rank q's piece p at q * P + p
  carve(c, 0, ops.max_payload(pieces.count[0]), {&payloads});  // split_even: the first is the largest

  Pipeline pipe(c);
  for (uint64_t p = 0; p < P; ++p) {
    for (uint32_t q = 0; q < n; ++q) {
      if (q == r) continue;
      pipe.receive(q, uint32_t(p), payloads[q * P + p], [&, q, p] {
        const uint64_t off = uint64_t(q) * count + pieces.offset[p];
        const PayloadBuffer& payload = payloads[q * P + p];
        ops.decode(off, payload.data, payload.size, out + off, pieces.count[p], false);
      });
    }
  }
  for (uint64_t p = 0; p < P; ++p) {
    pipe.then([&, p] {
      const uint64_t off = uint64_t(r) * count + pieces.offset[p];
      PayloadBuffer& mine = payloads[r * P + p];
      mine.size = ops.encode(off, in + pieces.offset[p], pieces.count[p], mine.data, mine.capacity);
      for (uint32_t k = 1; k < n; ++k) pipe.send((r + k) % n, uint32_t(p), mine);
      ops.decode(off, mine.data, mine.size, out + off, pieces.count[p], false);
    });
  }
  co_await pipe.run();
}

}  // namespace

Task allgather_compressed(Collective& c, ShardArgs a) {
  CodecOps ops(*a.codec, a.ef, a.ctx, c.rank(), c.size());
  const uint32_t n = c.size(), r = c.rank();
  const uint64_t bytes = 4 * a.count;
  float* const mine = a.out + uint64_t(r) * a.count;
  if (a.count > 0) {
    if (payloads_are_values(*a.codec)) {
      if (a.in != mine) std::memmove(mine, a.in, bytes);
      co_await allgather_ring(c, a.out, even_blocks(uint64_t(n) * a.count, n, 4), 0, 0);
    } else {
      // Decoded shards land in `out` while this rank's shard is still being encoded: an `in` that
      // overlaps any other place of `out` is read from a copy.
      const bool in_own_place = a.in == mine;
      const float* in = a.in;
      if (!in_own_place && overlap(a.in, bytes, a.out, uint64_t(n) * bytes)) {
        float* copy = reinterpret_cast<float*>(c.scratch(1, bytes));
        std::memcpy(copy, a.in, bytes);
        in = copy;
      }
      co_await allgather_direct(c, ops, in, a.out, a.count, std::max<uint64_t>(1, a.chunk_elements));
    }
  }
  book(a.stats, c, ops, uint64_t(n) * bytes);
}

}  // namespace gw::coll
