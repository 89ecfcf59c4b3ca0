#include <algorithm>
#include <cstring>

#include "collectives/compressed.hpp"
#include "collectives/pipeline.hpp"
#include "kernels/reduce.hpp"

namespace gw::coll {

// Shard b of `in` belongs to rank b. Each rank encodes piece p of every other shard b once (error
// feedback keyed by the piece's offset in `in`), sends it to b as message p, and sums piece p of its
// own shard once all n - 1 contributions arrived: decoded in rank order 0, 1, ..., n - 1, its own values
// unencoded at its own place, in f32. Encodings go to the owners after this rank first, so no owner is
// everyone's first target; the sums queue behind them (nobody waits for them).
Task reduce_scatter_all_to_all(Collective& c, CodecOps& ops, const float* in, float* result, uint64_t count,
                               uint64_t chunk_elements) {
  const uint32_t n = c.size(), r = c.rank();
  const Pieces pieces = split_even(0, count, piece_count(count, chunk_elements, 1));
  const uint64_t P = pieces.size();
  std::vector<PayloadBuffer> sent(n * P), received(n * P);            // peer q's piece p at q * P + p
  carve(c, 0, ops.max_payload(pieces.count[0]), {&sent, &received});  // split_even: the first is the largest
  std::vector<uint32_t> arrived(P, 0);
  TensorMemory& memory = ops.memory();
  const float* own = in + uint64_t(r) * count;

  Pipeline pipe(c);
  const auto sum = [&](uint64_t p) {
    const uint64_t off = pieces.offset[p], cnt = pieces.count[p];
    for (uint32_t q = 0; q < n; ++q) {
      if (q == r) {
        if (q == 0) {
          memory.copy(result + off, own + off, cnt);
        } else {
          memory.add(result + off, own + off, cnt);
        }
      } else {
        const PayloadBuffer& contribution = received[q * P + p];
        ops.decode(uint64_t(r) * count + off, contribution.data, contribution.size, result + off, cnt, q != 0);
      }
    }
  };
  for (uint64_t p = 0; p < P; ++p) {
    if (n == 1) pipe.then([&, p] { sum(p); });
    for (uint32_t q = 0; q < n; ++q) {
      if (q == r) continue;
      pipe.receive(q, uint32_t(p), received[q * P + p], [&, p] {
        if (++arrived[p] == n - 1) pipe.then([&, p] { sum(p); });
      });
    }
  }
  for (uint64_t p = 0; p < P; ++p) {
    for (uint32_t k = 1; k < n; ++k) {
      const uint32_t b = (r + k) % n;
      pipe.then([&, b, p] {
        const uint64_t off = uint64_t(b) * count + pieces.offset[p];
        PayloadBuffer& payload = sent[b * P + p];
        payload.size = ops.encode(off, in + off, pieces.count[p], payload.data, payload.capacity);
        pipe.send(b, uint32_t(p), payload);
      });
    }
  }
  co_await pipe.run();
}

Task reduce_scatter_compressed(Collective& c, ShardArgs a, std::optional<comm::Topology> topology) {
  if (topology && a.count > 0 && !payloads_are_values(*a.codec)) {
    co_await reduce_scatter_two_level(c, a, *topology);
    co_return;
  }
  CodecOps ops(*a.codec, a.ef, a.ctx, c.rank(), c.size());
  const uint32_t n = c.size();
  if (a.count > 0) {
    if (payloads_are_values(*a.codec)) {
      co_await reduce_scatter(c, a.in, a.out, a.count, GW_DTYPE_F32, a.op);
    } else {
      // The sums are written while other shards of `in` are still being encoded: an `out` inside `in`
      // gets them in scratch first.
      const bool staged = overlap(a.in, 4 * n * a.count, a.out, 4 * a.count);
      float* result = staged ? reinterpret_cast<float*>(c.scratch(1, 4 * a.count)) : a.out;
      co_await reduce_scatter_all_to_all(c, ops, a.in, result, a.count, std::max<uint64_t>(1, a.chunk_elements));
      if (a.op == GW_REDUCE_AVG) divide(result, a.count, GW_DTYPE_F32, n);
      if (staged) std::memmove(a.out, result, 4 * a.count);
    }
  }
  book(a.stats, c, ops, 4 * uint64_t(n) * a.count);
}

}  // namespace gw::coll
