#include <algorithm>
#include <chrono>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

#include "collectives/compressed.hpp"
#include "core/error.hpp"
#include "kernels/reduce.hpp"

namespace gw::coll {
namespace {

using Clock = std::chrono::steady_clock;

// Each round's messages are numbered from round * kRoundSteps (GW_CODEC_MAX_ROUNDS rounds fit the
// collective's message numbers).
constexpr uint32_t kRoundSteps = (uint32_t{1} << comm::tags::kStepBits) / GW_CODEC_MAX_ROUNDS;

gw_tensor host_tensor(const float* x, uint64_t count) {
  gw_tensor t = GW_TENSOR_INIT;
  t.data = const_cast<float*>(x);
  t.count = count;
  return t;
}

}  // namespace

void check_shapes(const gw_tensor_shape* shapes, uint32_t num_shapes, uint64_t count) {
  if (num_shapes > 0 && shapes == nullptr)
    fail(GW_ERR_INVALID_ARGUMENT, "context->num_shapes is " + std::to_string(num_shapes) + " but shapes is NULL");
  uint64_t end = 0;
  for (uint32_t i = 0; i < num_shapes; ++i) {
    const gw_tensor_shape& s = shapes[i];
    const std::string which = "shape " + std::to_string(i) + " (offset " + std::to_string(s.offset) + ", " +
                              std::to_string(s.rows) + " x " + std::to_string(s.cols) + ")";
    if (s.rows == 0 || s.cols == 0) fail(GW_ERR_INVALID_ARGUMENT, which + " is empty; rows and cols are at least 1");
    if (s.cols > count / s.rows || s.offset > count - s.rows * s.cols)
      fail(GW_ERR_INVALID_ARGUMENT, which + " does not fit in the buffer of " + std::to_string(count) +
                                        " elements; rows x cols must be the tensor's count, at its offset");
    if (s.offset < end)
      fail(GW_ERR_INVALID_ARGUMENT, which + " overlaps the shape before it or comes before it; give the shapes "
                                            "in increasing offset order, one per tensor");
    end = s.offset + s.rows * s.cols;
  }
}

Task allreduce_rounds(Collective& c, CompressedArgs a) {
  std::vector<CompressedArgs> one;
  one.push_back(std::move(a));
  co_await allreduce_rounds(c, std::move(one));
}

Task allreduce_rounds(Collective& c, std::vector<CompressedArgs> buffers) {
  if (buffers.empty()) co_return;
  // One buffer's sequence of rounds. The input and the output are where the tensor is (a codec with CUDA
  // kernels gets device tensors on their stream); each round's vector, small, is summed in host memory.
  struct Sequence {
    CompressedArgs* a = nullptr;
    gw_codec_context ctx = GW_CODEC_CONTEXT_INIT;
    gw_codec_round_plan plan = GW_CODEC_ROUND_PLAN_INIT;
    gw_tensor input = GW_TENSOR_INIT;
    uint64_t offset = 0, size = 0;  // its vector in the round's concatenation (the sum it reads next)
    uint64_t summed = 0;            // elements of its vectors summed so far (its share of the bytes sent)
    double seconds = 0;
  };
  std::vector<Sequence> seqs(buffers.size());
  uint32_t rounds = 0;
  for (size_t i = 0; i < buffers.size(); ++i) {
    Sequence& s = seqs[i];
    CompressedArgs& a = buffers[i];
    s.a = &a;
    s.ctx = a.ctx;
    s.ctx.struct_size = sizeof(gw_codec_context);
    s.ctx.rank = c.rank();
    s.ctx.world_size = c.size();
    s.ctx.workspace = nullptr;
    s.ctx.workspace_bytes = 0;
    s.ctx.shapes = a.shapes.empty() ? nullptr : a.shapes.data();
    s.ctx.num_shapes = uint32_t(a.shapes.size());
    const float* in = a.in != nullptr ? a.in : a.buf;
    s.input = a.memory ? a.memory->tensor(in, a.count) : host_tensor(in, a.count);
    const auto start = Clock::now();
    s.plan = a.codec->round_plan(s.ctx, a.count);
    s.seconds += std::chrono::duration<double>(Clock::now() - start).count();
    rounds = std::max(rounds, s.plan.rounds);
  }
  // The vectors of every buffer summed in one collective per round: wire_codec and pipelining as the
  // first buffer's (the callers batch buffers of one codec and configuration).
  const CompressedArgs& first = buffers.front();
  Codec* wire = first.codec->wire_codec();
  std::vector<float> reduced, next;
  std::vector<uint32_t> everyone(c.size());
  std::iota(everyone.begin(), everyone.end(), 0u);
  for (uint32_t r = 0; r <= rounds; ++r) {
    // The local work of every buffer in buffer order: round r of each sequence that reaches it, writing
    // its vector into its part of the round's concatenation (or, at its last round, its output).
    uint64_t total = 0;
    for (Sequence& s : seqs)
      if (r < s.plan.rounds) total += s.plan.elements[r];
    next.assign(total, 0.0f);
    uint64_t at = 0;
    for (Sequence& s : seqs) {
      if (r > s.plan.rounds) continue;
      const bool last = r == s.plan.rounds;
      CompressedArgs& a = *s.a;
      gw_tensor sum = host_tensor(reduced.data() + s.offset, s.size);
      gw_tensor vector = GW_TENSOR_INIT;
      if (!last) vector = host_tensor(next.data() + at, s.plan.elements[r]);
      gw_tensor out = a.memory ? a.memory->tensor(a.buf, a.count) : host_tensor(a.buf, a.count);
      const auto start = Clock::now();
      a.codec->round(s.ctx, r, s.input, r > 0 ? &sum : nullptr, last ? nullptr : &vector, last ? &out : nullptr);
      s.seconds += std::chrono::duration<double>(Clock::now() - start).count();
      if (last) continue;
      s.offset = at;
      s.size = s.plan.elements[r];
      s.summed += s.size;
      at += s.size;
    }
    if (r == rounds) break;
    std::swap(reduced, next);
    if (reduced.empty()) continue;
    // The sum over the ranks, in place, with this round's message numbers.
    c.set_group(everyone, r * kRoundSteps);
    if (wire != nullptr && c.size() > 1) {
      CompressedArgs w;
      w.codec = wire;
      w.ctx = first.ctx;
      w.ctx.seed ^= (uint64_t(r) + 1) * 0x9e3779b97f4a7c15ull;
      w.ctx.shapes = nullptr;
      w.ctx.num_shapes = 0;
      w.buf = reduced.data();
      w.count = reduced.size();
      w.op = GW_REDUCE_SUM;
      // Few pieces: a round's messages must stay below kRoundSteps.
      w.chunk_elements = std::max<uint64_t>(first.chunk_elements, (reduced.size() + 15) / 16);
      w.ring_threshold_bytes = first.ring_threshold_bytes;
      CompressedStats wire_stats;
      w.stats = &wire_stats;
      co_await allreduce_compressed(c, std::move(w));
      // The wire codec's time shared by the buffers as their elements share the vector.
      const double seconds = wire_stats.encode_seconds + wire_stats.decode_seconds;
      for (Sequence& s : seqs)
        if (r < s.plan.rounds) s.seconds += seconds * double(s.size) / double(reduced.size());
    } else if (c.size() > 1) {
      co_await allreduce_dense(c, reduced.data(), reduced.size(), GW_DTYPE_F32, GW_REDUCE_SUM, first.ring_threshold_bytes);
    }
    c.set_group({}, 0);
  }
  // The bytes sent, shared by the buffers as their elements share the round vectors (all of it to the
  // first when nothing was summed).
  uint64_t summed = 0;
  for (const Sequence& s : seqs) summed += s.summed;
  const uint64_t sent = c.bytes_sent();
  uint64_t booked = 0;
  for (size_t i = 0; i < seqs.size(); ++i) {
    const Sequence& s = seqs[i];
    CompressedArgs& a = *s.a;
    if (a.op == GW_REDUCE_AVG && c.size() > 1) {
      if (a.memory) a.memory->divide(a.buf, a.count, c.size());
      else divide(a.buf, a.count, GW_DTYPE_F32, c.size());
    }
    uint64_t share = summed > 0 ? uint64_t(double(sent) * double(s.summed) / double(summed)) : (i == 0 ? sent : 0);
    if (i + 1 == seqs.size()) share = sent - booked;  // the rounding's remainder to the last
    share = std::min(share, sent - booked);
    booked += share;
    if (a.stats != nullptr) {
      a.stats->raw_bytes += 4 * a.count;
      a.stats->wire_bytes += share;
      a.stats->encode_seconds += s.seconds;
    }
  }
}

}  // namespace gw::coll
