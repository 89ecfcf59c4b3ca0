#include "collectives/compressed.hpp"
#include "collectives/pipeline.hpp"
#include "kernels/reduce.hpp"

namespace gw::coll {

// For sparse codecs (top-k). The buffer is cut into pieces, each encoded on its own. Every rank sends
// each piece's payload to every other rank (payload sizes differ between ranks, so each receive takes
// what its header announces), and once a piece's n payloads are there every rank decodes them in rank
// order 0, 1, ..., n - 1, the first overwriting and the rest with GW_DECODE_ACCUMULATE: the same bytes
// summed in the same order on every rank. Message number: the piece.
Task allreduce_sparse_allgather(Collective& c, CodecOps& ops, const float* in, float* buf, uint64_t count, gw_reduce_op op,
                                uint64_t chunk_elements) {
  const uint32_t n = c.size(), r = c.rank();
  const Pieces pieces = split_even(0, count, piece_count(count, chunk_elements, 1));
  const uint64_t C = pieces.size();
  std::vector<PayloadBuffer> payloads(n * C);  // rank q's payload of piece i at q * C + i
  carve(c, 0, ops.max_payload(pieces.count[0]), {&payloads});  // split_even: the first piece is the largest
  std::vector<uint32_t> arrived(C, 0);
  std::vector<bool> encoded(C, false);

  Pipeline pipe(c);
  const auto combine = [&](uint64_t i) {
    const uint64_t off = pieces.offset[i], cnt = pieces.count[i];
    for (uint32_t q = 0; q < n; ++q) {
      const PayloadBuffer& payload = payloads[q * C + i];
      ops.decode(off, payload.data, payload.size, buf + off, cnt, q != 0);
    }
    if (op == GW_REDUCE_AVG) ops.memory().divide(buf + off, cnt, n);
  };
  const auto maybe_combine = [&](uint64_t i) {
    // Behind the encodes: the others wait for this rank's payloads, nobody waits for its combining.
    if (encoded[i] && arrived[i] == n - 1) pipe.then([&, i] { combine(i); });
  };

  for (uint64_t i = 0; i < C; ++i) {
    if (pieces.count[i] == 0) continue;
    for (uint32_t q = 0; q < n; ++q) {
      if (q == r) continue;
      pipe.receive(q, uint32_t(i), payloads[q * C + i], [&, i] {
        ++arrived[i];
        maybe_combine(i);
      });
    }
    pipe.then([&, i] {
      const uint64_t off = pieces.offset[i], cnt = pieces.count[i];
      PayloadBuffer& mine = payloads[r * C + i];
      mine.size = ops.encode(off, in + off, cnt, mine.data, mine.capacity);
      for (uint32_t k = 1; k < n; ++k) pipe.send((r + k) % n, uint32_t(i), mine);
      encoded[i] = true;
      maybe_combine(i);
    });
  }
  co_await pipe.run();
}

// Sparse payloads too heavy to gather: each rank decodes its own payloads (what error feedback and the
// codec keep of its values) and the dense ring allreduce sums those, bit-identical on every rank.
Task allreduce_sparse_dense(Collective& c, CodecOps& ops, float* buf, uint64_t count, gw_reduce_op op,
                            uint64_t chunk_elements, uint64_t ring_threshold_bytes) {
  const Pieces pieces = split_even(0, count, piece_count(count, chunk_elements, 1));
  PayloadBuffer payload;
  for (size_t i = 0; i < pieces.size(); ++i) {
    const uint64_t off = pieces.offset[i], cnt = pieces.count[i];
    payload.reserve(ops.max_payload(cnt));
    payload.size = ops.encode(off, buf + off, cnt, payload.data, payload.capacity);
    ops.decode(off, payload.data, payload.size, buf + off, cnt, false);
  }
  co_await allreduce_dense(c, buf, count, GW_DTYPE_F32, op, ring_threshold_bytes);
}

}  // namespace gw::coll
