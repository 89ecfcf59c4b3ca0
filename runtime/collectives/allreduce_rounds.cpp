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
  Codec& codec = *a.codec;
  // The input and the output are where the tensor is (a codec with CUDA kernels gets device tensors on
  // their stream); each round's vector, small, is summed in host memory.
  TensorMemory* memory = a.memory.get();
  gw_codec_context ctx = a.ctx;
  ctx.struct_size = sizeof(gw_codec_context);
  ctx.rank = c.rank();
  ctx.world_size = c.size();
  ctx.workspace = nullptr;
  ctx.workspace_bytes = 0;
  ctx.shapes = a.shapes.empty() ? nullptr : a.shapes.data();
  ctx.num_shapes = uint32_t(a.shapes.size());
  const float* in = a.in != nullptr ? a.in : a.buf;
  double codec_seconds = 0;
  const auto timed = [&](auto&& work) {
    const auto start = Clock::now();
    work();
    codec_seconds += std::chrono::duration<double>(Clock::now() - start).count();
  };
  gw_codec_round_plan plan = GW_CODEC_ROUND_PLAN_INIT;
  timed([&] { plan = codec.round_plan(ctx, a.count); });
  const gw_tensor input = memory ? memory->tensor(in, a.count) : host_tensor(in, a.count);
  std::vector<float> reduced, next;
  std::vector<uint32_t> everyone(c.size());
  std::iota(everyone.begin(), everyone.end(), 0u);
  Codec* wire = codec.wire_codec();
  for (uint32_t r = 0; r <= plan.rounds; ++r) {
    const bool last = r == plan.rounds;
    gw_tensor sum = host_tensor(reduced.data(), reduced.size());
    gw_tensor vector = GW_TENSOR_INIT;
    if (!last) {
      next.resize(plan.elements[r]);
      vector = host_tensor(next.data(), next.size());
    }
    gw_tensor out = memory ? memory->tensor(a.buf, a.count) : host_tensor(a.buf, a.count);
    timed([&] { codec.round(ctx, r, input, r > 0 ? &sum : nullptr, last ? nullptr : &vector, last ? &out : nullptr); });
    if (last) break;
    std::swap(reduced, next);
    if (reduced.empty()) continue;
    // The sum over the ranks, in place, with this round's message numbers.
    c.set_group(everyone, r * kRoundSteps);
    if (wire != nullptr && c.size() > 1) {
      CompressedArgs w;
      w.codec = wire;
      w.ctx = a.ctx;
      w.ctx.seed ^= (uint64_t(r) + 1) * 0x9e3779b97f4a7c15ull;
      w.ctx.shapes = nullptr;
      w.ctx.num_shapes = 0;
      w.buf = reduced.data();
      w.count = reduced.size();
      w.op = GW_REDUCE_SUM;
      // Few pieces: a round's messages must stay below kRoundSteps.
      w.chunk_elements = std::max<uint64_t>(a.chunk_elements, (reduced.size() + 15) / 16);
      w.ring_threshold_bytes = a.ring_threshold_bytes;
      CompressedStats wire_stats;
      w.stats = &wire_stats;
      co_await allreduce_compressed(c, std::move(w));
      codec_seconds += wire_stats.encode_seconds + wire_stats.decode_seconds;
    } else if (c.size() > 1) {
      co_await allreduce_dense(c, reduced.data(), reduced.size(), GW_DTYPE_F32, GW_REDUCE_SUM, a.ring_threshold_bytes);
    }
    c.set_group({}, 0);
  }
  if (a.op == GW_REDUCE_AVG && c.size() > 1) {
    if (memory) memory->divide(a.buf, a.count, c.size());
    else divide(a.buf, a.count, GW_DTYPE_F32, c.size());
  }
  if (a.stats != nullptr) {
    a.stats->raw_bytes += 4 * a.count;
    a.stats->wire_bytes += c.bytes_sent();
    a.stats->encode_seconds += codec_seconds;
  }
}

}  // namespace gw::coll
