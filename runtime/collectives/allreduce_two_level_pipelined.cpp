#include <algorithm>
#include <cstring>

#include "collectives/pipeline.hpp"
#include "collectives/two_level.hpp"
#include "core/error.hpp"
#include "kernels/reduce.hpp"

namespace gw::coll {
namespace {

// Phase 1 pieces in flight to each peer of the node. Posting every piece at once lets the transport
// move them all concurrently (UCX progresses every pending rendezvous), so the first piece, which the
// uplink waits for, completes only when most of the node's traffic has; measured on 4 x 2 ranks behind
// 1 Gbit/s, 100 MB int8: all at once 381-395 ms, 2 or 3 in flight 340-357 ms (docs/two-level.md).
constexpr uint64_t kNodePiecesInFlight = 2;

}  // namespace

// The three phases of the two-level allreduce (two_level.hpp) run as one pipeline over pieces, so that
// the node's reduce-scatter, the encoding, the inter-node transfer, the decoding and the node's
// allgather of successive pieces overlap. Block b (of L, one per local index) is cut into P pieces;
// piece p of this rank's block goes through:
//   1. every other rank of the node sends its raw f32 values of the piece (message p); this rank sums
//      them with its own in local-index order (landing buffers, so the sum does not depend on arrival);
//   2. across the nodes (the cross group, one rank per node):
//      - M = 1: nothing (exact);
//      - gather (two_level_cross; by default M <= 2): the node sum is encoded once and sent to the
//        other members (message P + 2p); every member decodes the M payloads in node order;
//      - scatter-reduce-allgather (otherwise): the piece is cut into M sub-pieces, sub-piece k owned by
//        member k; the node sum's other sub-pieces are encoded and sent to their owners (P + 2p); an
//        owner sums the decoded contributions and its own raw values in node order, averages, encodes
//        once and sends the result to every member (P + 2p + 1); every member decodes those bytes;
//   3. the finished piece goes raw to every other rank of the node (message 3P + p), straight into
//      their output buffer.
// Every rank ends with the same bits: each value comes from one owner's decoded bytes or exact copies.
Task allreduce_two_level(Collective& c, CompressedArgs a, comm::Topology t, bool gather_encoded) {
  const uint32_t world = c.size();
  const uint32_t me = c.rank();
  const std::vector<uint32_t> local = t.local_group(me);
  const std::vector<uint32_t> cross = t.cross_group(me);
  const uint32_t L = uint32_t(local.size()), li = t.local_index(me);
  const uint32_t M = uint32_t(cross.size());
  const uint32_t ni = t.node_of.at(me);  // this rank's place in its cross group (one rank per node, in node order)
  const bool gather = M > 1 && gather_encoded;
  const bool scatter = M > 1 && !gather;
  const uint64_t chunk = std::max<uint64_t>(1, a.chunk_elements);
  CodecOps ops(*a.codec, a.ef, a.ctx, ni, M);
  float* buf = a.buf;

  const Blocks blocks = even_blocks(a.count, L, 4);
  const uint64_t P = piece_count(blocks.count[0], chunk, 4);
  std::vector<Pieces> pieces;
  for (uint32_t b = 0; b < L; ++b) pieces.push_back(split_even(blocks.offset[b], blocks.count[b], P));
  const uint64_t lp = (blocks.count[0] + P - 1) / P;  // the largest piece
  const Pieces& mine = pieces[li];

  // The input: read where it is; in place, from a copy (the other blocks of buf receive results).
  const float* src = a.in != nullptr ? a.in : buf;
  if (src == buf && L > 1 && a.count > 0) {
    auto* copy = reinterpret_cast<float*>(c.scratch(1, a.count * 4));
    std::memcpy(copy, buf, a.count * 4);
    src = copy;
  }
  // Phase 1 landing buffers: local index j's values of piece p at (j * P + p) * lp.
  float* landing = L > 1 ? reinterpret_cast<float*>(c.scratch(2, uint64_t(L) * P * lp * 4)) : nullptr;
  std::vector<PayloadBuffer> land(L * P), raw_out(L * P), result_in(L * P), piece_out(P);
  for (uint32_t j = 0; j < L; ++j)
    for (uint64_t p = 0; p < P; ++p) {
      land[j * P + p].data = reinterpret_cast<unsigned char*>(landing ? landing + (j * P + p) * lp : nullptr);
      land[j * P + p].capacity = lp * 4;
    }

  // Phase 2 payloads.
  const uint64_t sub_lp = scatter ? (lp + M - 1) / M : lp;
  std::vector<PayloadBuffer> enc_out(gather ? P : 0), enc_in(gather ? M * P : 0);
  std::vector<PayloadBuffer> contrib_out(scatter ? M * P : 0), contrib_in(scatter ? M * P : 0),
      final_in(scatter ? M * P : 0), final_out(scatter ? P : 0);
  if (gather) carve(c, 0, ops.max_payload(lp), {&enc_out, &enc_in});
  if (scatter) carve(c, 0, ops.max_payload(sub_lp), {&contrib_out, &contrib_in, &final_in, &final_out});
  std::vector<float> sum(scatter ? sub_lp : 0);
  std::vector<Pieces> subs(P);
  if (scatter)
    for (uint64_t p = 0; p < P; ++p) subs[p] = split_even(mine.offset[p], mine.count[p], M);

  std::vector<uint32_t> arrived1(P, 0), arrived2(P, 0), finals(P, 0);
  std::vector<bool> summed(P, false);
  Pipeline pipe(c);
  const uint32_t s2 = uint32_t(P), s3 = uint32_t(3 * P);

  // Phase 3: the finished piece to the node.
  const auto share = [&](uint64_t p) {
    PayloadBuffer& out = piece_out[p];
    out.data = reinterpret_cast<unsigned char*>(buf + mine.offset[p]);
    out.size = mine.count[p] * 4;
    for (uint32_t k = 1; k < L; ++k) pipe.send(local[(li + k) % L], s3 + uint32_t(p), out);
  };
  const auto finished = [&](uint64_t p, bool divided) {
    if (a.op == GW_REDUCE_AVG && !divided) divide(buf + mine.offset[p], mine.count[p], GW_DTYPE_F32, world);
    share(p);
  };
  // Scatter-reduce-allgather owner: the node sums of sub-piece ni from every node, summed in node order.
  const auto own_sub = [&](uint64_t p) {
    const uint64_t off = subs[p].offset[ni], cnt = subs[p].count[ni];
    for (uint32_t q = 0; q < M; ++q) {
      if (q == ni) {
        if (q == 0) std::memcpy(sum.data(), buf + off, cnt * 4);
        else reduce(sum.data(), sum.data(), buf + off, cnt, GW_DTYPE_F32, GW_REDUCE_SUM);
      } else {
        const PayloadBuffer& in = contrib_in[q * P + p];
        ops.decode(off, in.data, in.size, sum.data(), cnt, q != 0);
      }
    }
    if (a.op == GW_REDUCE_AVG) divide(sum.data(), cnt, GW_DTYPE_F32, world);
    PayloadBuffer& fin = final_out[p];
    fin.size = ops.encode(off, sum.data(), cnt, fin.data, fin.capacity);
    for (uint32_t k = 1; k < M; ++k) pipe.send(cross[(ni + k) % M], s2 + 2 * uint32_t(p) + 1, fin);
    ops.decode(off, fin.data, fin.size, buf + off, cnt, false);
    if (++finals[p] == M) finished(p, true);
  };
  const auto gathered = [&](uint64_t p) {
    const uint64_t off = mine.offset[p], cnt = mine.count[p];
    for (uint32_t q = 0; q < M; ++q) {
      const PayloadBuffer& in = q == ni ? enc_out[p] : enc_in[q * P + p];
      ops.decode(off, in.data, in.size, buf + off, cnt, q != 0);
    }
    finished(p, false);
  };
  // Phase 1's raw values of piece p to the other ranks of the node, at most kNodePiecesInFlight pieces
  // ahead of the node sums this rank has completed (its peers complete theirs as it completes its own).
  uint64_t posted = 0, completed = 0;
  const auto send_raw = [&](uint64_t p) {
    for (uint32_t k = 1; k < L; ++k) {  // to the owners after this rank first
      const uint32_t b = (li + k) % L;
      if (pieces[b].count[p] == 0) continue;
      PayloadBuffer& out = raw_out[b * P + p];
      out.data = reinterpret_cast<unsigned char*>(const_cast<float*>(src + pieces[b].offset[p]));
      out.size = pieces[b].count[p] * 4;
      pipe.send(local[b], uint32_t(p), out);
    }
  };
  const auto send_more = [&] {
    while (posted < std::min(P, completed + kNodePiecesInFlight)) send_raw(posted++);
  };
  // Phase 1 done for piece p: the node's sum, then phase 2.
  const auto node_sum = [&](uint64_t p) {
    ++completed;
    send_more();
    const uint64_t off = mine.offset[p], cnt = mine.count[p];
    float* dst = buf + off;
    const auto part = [&](uint32_t j) { return j == li ? src + off : landing + (j * P + p) * lp; };
    // In local-index order; the first two in one pass (x0 + x1 straight into dst, no copy of x0 first).
    if (L == 1) {
      if (part(0) != dst) std::memcpy(dst, part(0), cnt * 4);
    } else {
      reduce(dst, part(0), part(1), cnt, GW_DTYPE_F32, GW_REDUCE_SUM);
      for (uint32_t j = 2; j < L; ++j) reduce(dst, dst, part(j), cnt, GW_DTYPE_F32, GW_REDUCE_SUM);
    }
    if (M == 1) return finished(p, false);
    if (gather) {
      PayloadBuffer& out = enc_out[p];
      out.size = ops.encode(off, dst, cnt, out.data, out.capacity);
      for (uint32_t k = 1; k < M; ++k) pipe.send(cross[(ni + k) % M], s2 + 2 * uint32_t(p), out);
      if (++arrived2[p] == M) gathered(p);  // counts this rank's own payload
      return;
    }
    for (uint32_t k = 1; k < M; ++k) {
      const uint32_t q = (ni + k) % M;
      const uint64_t soff = subs[p].offset[q], scnt = subs[p].count[q];
      PayloadBuffer& out = contrib_out[q * P + p];
      out.size = ops.encode(soff, buf + soff, scnt, out.data, out.capacity);
      pipe.send(cross[q], s2 + 2 * uint32_t(p), out);
    }
    summed[p] = true;
    if (arrived2[p] == M - 1) own_sub(p);
  };

  for (uint64_t p = 0; p < P; ++p) {
    if (mine.count[p] == 0) continue;
    // Phase 1 receives of this rank's block.
    for (uint32_t j = 0; j < L; ++j) {
      if (j == li) continue;
      pipe.receive(local[j], uint32_t(p), land[j * P + p], [&, p, j] {
        if (land[j * P + p].size != mine.count[p] * 4)
          fail(GW_ERR_CORRUPT, "two-level allreduce: rank " + std::to_string(local[j]) + " sent " +
                                   std::to_string(land[j * P + p].size) + " bytes of piece " + std::to_string(p));
        if (++arrived1[p] == L - 1) pipe.then([&, p] { node_sum(p); }, true);
      });
    }
    if (L == 1) pipe.then([&, p] { node_sum(p); });
    // Phase 2 receives.
    for (uint32_t k = 1; k < M; ++k) {
      const uint32_t q = (ni + k) % M;
      if (gather) {
        pipe.receive(cross[q], s2 + 2 * uint32_t(p), enc_in[q * P + p], [&, p] {
          if (++arrived2[p] == M) pipe.then([&, p] { gathered(p); }, true);
        });
      } else {
        pipe.receive(cross[q], s2 + 2 * uint32_t(p), contrib_in[q * P + p], [&, p] {
          if (++arrived2[p] == M - 1 && summed[p]) pipe.then([&, p] { own_sub(p); }, true);
        });
        pipe.receive(cross[q], s2 + 2 * uint32_t(p) + 1, final_in[q * P + p], [&, p, q] {
          const PayloadBuffer& in = final_in[q * P + p];
          ops.decode(subs[p].offset[q], in.data, in.size, buf + subs[p].offset[q], subs[p].count[q], false);
          if (++finals[p] == M) finished(p, true);
        });
      }
    }
  }
  // Phase 3 receives: the other blocks' pieces straight into place.
  for (uint32_t b = 0; b < L; ++b) {
    if (b == li) continue;
    for (uint64_t p = 0; p < P; ++p) {
      if (pieces[b].count[p] == 0) continue;
      PayloadBuffer& into = result_in[b * P + p];
      into.data = reinterpret_cast<unsigned char*>(buf + pieces[b].offset[p]);
      into.capacity = pieces[b].count[p] * 4;
      pipe.receive(local[b], s3 + uint32_t(p), into, [&, b, p] {
        if (result_in[b * P + p].size != pieces[b].count[p] * 4)
          fail(GW_ERR_CORRUPT, "two-level allreduce: rank " + std::to_string(local[b]) + " sent " +
                                   std::to_string(result_in[b * P + p].size) + " bytes of finished piece " +
                                   std::to_string(p));
      });
    }
  }
  // Phase 1 sends of the first pieces; node_sum sends more as this rank's pieces complete (a piece of
  // this rank's block that is empty never completes: counted as done).
  for (uint64_t p = 0; p < P; ++p) completed += mine.count[p] == 0;  // their node_sum never runs
  send_more();
  co_await pipe.run();
  if (a.stats) {
    a.stats->raw_bytes += 4 * a.count;
    a.stats->wire_bytes += c.bytes_sent();
    a.stats->encode_seconds += ops.encode_seconds();
    a.stats->decode_seconds += ops.decode_seconds();
  }
}

}  // namespace gw::coll
