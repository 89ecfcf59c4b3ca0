// The powersgd codec's CUDA path against its CPU path, bit for bit: the same buffers (matrices with and
// without the kernels' tails, and exact elements between them) reduced over a few simulated ranks, at a
// few approximation ranks, for two calls (the second warm-started from the first's Q, with the first's
// residuals), every round's vector, the output and the saved state compared. The ranks' vectors are
// summed here in rank order, as a dense allreduce of one process would. Skipped without a CUDA device.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "direct_codec.hpp"

namespace {

using gwgpu::normal;
using gwgpu::same_bits;

bool have_device() {
  int n = 0;
  return cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
}

struct Rank {
  std::unique_ptr<gwgpu::DirectCodec> codec;
  std::vector<float> in, out, next;
  float* d_in = nullptr;
  float* d_out = nullptr;
};

// One call on every rank (device: the input and output in device memory), every round's vectors kept.
void call(std::vector<Rank>& ranks, bool device, const std::vector<gw_tensor_shape>& shapes, uint64_t step,
          std::vector<std::vector<float>>& vectors) {
  const uint64_t count = ranks[0].in.size();
  gw_codec_context ctx = GW_CODEC_CONTEXT_INIT;
  ctx.seed = 11;
  ctx.step = step;
  ctx.world_size = uint32_t(ranks.size());
  ctx.buffer_id = 5;
  ctx.shapes = shapes.data();
  ctx.num_shapes = uint32_t(shapes.size());
  gw_codec_round_plan plan = GW_CODEC_ROUND_PLAN_INIT;
  const gw_codec_vtable* vt = ranks[0].codec->vt();
  ASSERT_EQ(vt->round_plan(ranks[0].codec->codec(), &ctx, count, &plan), GW_OK) << gwgpu::last_error;
  std::vector<float> sum;
  for (uint32_t r = 0; r <= plan.rounds; ++r) {
    const bool last = r == plan.rounds;
    std::vector<float> total(last ? 0 : plan.elements[r], 0.0f);
    for (size_t k = 0; k < ranks.size(); ++k) {
      Rank& x = ranks[k];
      ctx.rank = uint32_t(k);
      gw_tensor in = GW_TENSOR_INIT, reduced = GW_TENSOR_INIT, next = GW_TENSOR_INIT, out = GW_TENSOR_INIT;
      in.count = out.count = count;
      if (device) {
        in.memory = out.memory = GW_MEMORY_CUDA;
        in.data = x.d_in;
        out.data = x.d_out;
      } else {
        in.data = x.in.data();
        x.out.assign(count, 0.0f);
        out.data = x.out.data();
      }
      reduced.data = sum.data();
      reduced.count = sum.size();
      x.next.assign(last ? 0 : plan.elements[r], 0.0f);
      next.data = x.next.data();
      next.count = x.next.size();
      ASSERT_EQ(vt->round(x.codec->codec(), &ctx, r, &in, r > 0 ? &reduced : nullptr, last ? nullptr : &next,
                          last ? &out : nullptr),
                GW_OK)
          << gwgpu::last_error;
      if (last && device) {
        x.out.resize(count);
        ASSERT_EQ(cudaMemcpy(x.out.data(), x.d_out, 4 * count, cudaMemcpyDeviceToHost), cudaSuccess);
      }
      for (size_t i = 0; i < total.size(); ++i) total[i] = total[i] + x.next[i];
      vectors.push_back(x.next);
    }
    sum = total;
  }
}

std::vector<unsigned char> state(const gwgpu::DirectCodec& c) {
  uint64_t size = 0;
  EXPECT_EQ(c.vt()->save_state(c.codec(), nullptr, 0, &size), GW_OK) << gwgpu::last_error;
  std::vector<unsigned char> blob(size);
  EXPECT_EQ(c.vt()->save_state(c.codec(), blob.data(), size, &size), GW_OK) << gwgpu::last_error;
  return blob;
}

TEST(GpuPowerSgd, CudaRoundsEqualCpuRoundsBitForBit) {
  if (!have_device()) GTEST_SKIP() << "no CUDA device: the powersgd CUDA path was not checked";
  // 64 x 96 (no tails), 5 exact, 37 x 53 (every tail), 10 exact, 300 x 701 (threaded on the host).
  const std::vector<gw_tensor_shape> shapes = {{0, 64, 96}, {6144 + 5, 37, 53}, {6144 + 5 + 1961 + 10, 300, 701}};
  const uint64_t count = 6144 + 5 + 1961 + 10 + 300 * 701;
  for (uint32_t world : {1u, 3u})
    for (const char* rank : {"1", "4", "7"}) {
      SCOPED_TRACE(std::string("world ") + std::to_string(world) + ", rank " + rank);
      std::vector<Rank> host(world), dev(world);
      for (uint32_t k = 0; k < world; ++k) {
        host[k].codec = std::make_unique<gwgpu::DirectCodec>(GW_PLUGIN_DIR, "powersgd",
                                                             std::map<std::string, std::string>{{"rank", rank}});
        dev[k].codec = std::make_unique<gwgpu::DirectCodec>(GW_PLUGIN_DIR, "powersgd",
                                                            std::map<std::string, std::string>{{"rank", rank}});
        ASSERT_EQ(cudaMalloc(&dev[k].d_in, 4 * count), cudaSuccess);
        ASSERT_EQ(cudaMalloc(&dev[k].d_out, 4 * count), cudaSuccess);
      }
      for (uint64_t step = 0; step < 2; ++step) {  // the second call warm-starts from the first
        for (uint32_t k = 0; k < world; ++k) {
          host[k].in = dev[k].in = normal(count, 100 * k + uint32_t(step) + 1);
          ASSERT_EQ(cudaMemcpy(dev[k].d_in, dev[k].in.data(), 4 * count, cudaMemcpyHostToDevice), cudaSuccess);
        }
        std::vector<std::vector<float>> hv, dv;
        call(host, false, shapes, step, hv);
        call(dev, true, shapes, step, dv);
        ASSERT_EQ(hv.size(), dv.size());
        for (size_t i = 0; i < hv.size(); ++i) EXPECT_TRUE(same_bits(hv[i], dv[i])) << "step " << step << ", vector " << i;
        for (uint32_t k = 0; k < world; ++k)
          EXPECT_TRUE(same_bits(host[k].out, dev[k].out)) << "step " << step << ", rank " << k << "'s output";
      }
      // The Q's and residuals (the device's copied back) are the same bytes.
      for (uint32_t k = 0; k < world; ++k) EXPECT_EQ(state(*host[k].codec), state(*dev[k].codec)) << "rank " << k;
      for (Rank& x : dev) {
        cudaFree(x.d_in);
        cudaFree(x.d_out);
      }
    }
}

}  // namespace
