// G3: every dense codec's CUDA kernels write the CPU path's body bytes (same input, same seed and
// step), and decode to the CPU path's values, for sizes that are not multiples of the block and for
// f32 and f16 inputs. Skipped when no CUDA device is present.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "direct_codec.hpp"
#include "gw_codec/portable.h"

namespace {

bool have_device() {
  int n = 0;
  return cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
}

struct Case {
  const char* codec;
  std::map<std::string, std::string> config;
};

std::vector<float> inputs(uint64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> g(0.0f, 1.0f);
  std::uniform_real_distribution<float> mag(-8, 4);
  std::vector<float> x(n);
  const float special[] = {0.0f, -0.0f, 1e-40f, 65504.0f, 65520.0f, -7e4f, 1e-30f, -1.0f};
  for (uint64_t i = 0; i < n; ++i) x[i] = (i % 97 == 5) ? special[(i / 97) % 8] : g(rng) * std::pow(10.0f, mag(rng));
  return x;
}

template <class T>
T* device_copy(const std::vector<T>& h) {
  T* d = nullptr;
  EXPECT_EQ(cudaMalloc(&d, std::max<size_t>(1, h.size() * sizeof(T))), cudaSuccess);
  if (!h.empty()) {
    EXPECT_EQ(cudaMemcpy(d, h.data(), h.size() * sizeof(T), cudaMemcpyHostToDevice), cudaSuccess);
  }
  return d;
}

TEST(GpuCodecs, CudaBytesEqualCpuBytes) {
  if (!have_device()) GTEST_SKIP() << "no CUDA device";
  const Case cases[] = {{"fp16", {}},
                        {"fp16", {{"prediv", "true"}}},
                        {"bf16", {}},
                        {"int8", {}},
                        {"int8", {{"block_size", "33"}, {"rounding", "stochastic"}}},
                        {"onebit", {}},
                        {"onebit", {{"block_size", "77"}}}};
  cudaStream_t stream;
  ASSERT_EQ(cudaStreamCreate(&stream), cudaSuccess);
  for (const Case& c : cases) {
    gwgpu::DirectCodec k(GW_PLUGIN_DIR, c.codec, c.config);
    for (uint64_t n : {uint64_t{1}, uint64_t{255}, uint64_t{257}, uint64_t{1000001}}) {
      for (gw_dtype dt : {GW_DTYPE_F32, GW_DTYPE_F16}) {
        SCOPED_TRACE(std::string(c.codec) + " n=" + std::to_string(n) + " dtype=" + std::to_string(dt) +
                     (c.config.empty() ? "" : " (configured)"));
        const std::vector<float> x = inputs(n, static_cast<uint32_t>(n));
        std::vector<uint8_t> host_in(n * (dt == GW_DTYPE_F32 ? 4 : 2));
        for (uint64_t i = 0; i < n; ++i) {
          if (dt == GW_DTYPE_F32) {
            std::memcpy(&host_in[4 * i], &x[i], 4);
          } else {
            gwc::store_le16(&host_in[2 * i], gwc::f32_to_f16(x[i]));
          }
        }
        gw_codec_context ctx{};
        ctx.struct_size = sizeof ctx;
        ctx.seed = 77;
        ctx.step = 9;
        ctx.world_size = 3;
        const uint64_t cap = k.max_body(dt, n);
        gw_tensor t{};
        t.struct_size = sizeof t;
        t.dtype = dt;
        t.count = n;
        // CPU
        std::vector<uint8_t> cpu_body(cap);
        uint64_t cpu_size = 0;
        t.memory = GW_MEMORY_HOST;
        t.data = host_in.data();
        ASSERT_EQ(k.vt()->encode(k.codec(), &ctx, &t, cpu_body.data(), cap, &cpu_size), GW_OK) << gwgpu::last_error;
        // GPU
        uint8_t* d_in = device_copy(host_in);
        uint8_t* d_body = nullptr;
        ASSERT_EQ(cudaMalloc(&d_body, cap + 32), cudaSuccess);
        t.memory = GW_MEMORY_CUDA;
        t.data = d_in;
        t.stream = stream;
        uint64_t gpu_size = 0;
        ASSERT_EQ(k.vt()->encode(k.codec(), &ctx, &t, d_body, cap, &gpu_size), GW_OK) << gwgpu::last_error;
        ASSERT_EQ(gpu_size, cpu_size);
        std::vector<uint8_t> gpu_body(gpu_size);
        ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
        ASSERT_EQ(cudaMemcpy(gpu_body.data(), d_body, gpu_size, cudaMemcpyDeviceToHost), cudaSuccess);
        for (uint64_t i = 0; i < cpu_size; ++i)
          ASSERT_EQ(gpu_body[i], cpu_body[i]) << "first differing body byte " << i << " of " << cpu_size;

        // Decode both ways, plain and accumulating, from the same body.
        std::vector<float> cpu_out(n, 0.5f), gpu_out(n, 0.5f);
        for (uint32_t flags : {0u, static_cast<uint32_t>(GW_DECODE_ACCUMULATE)}) {
          gw_tensor o{};
          o.struct_size = sizeof o;
          o.dtype = GW_DTYPE_F32;
          o.count = n;
          o.memory = GW_MEMORY_HOST;
          o.data = cpu_out.data();
          ASSERT_EQ(k.vt()->decode(k.codec(), &ctx, cpu_body.data(), cpu_size, &o, flags), GW_OK) << gwgpu::last_error;
          float* d_out = device_copy(gpu_out);
          o.memory = GW_MEMORY_CUDA;
          o.data = d_out;
          o.stream = stream;
          ASSERT_EQ(k.vt()->decode(k.codec(), &ctx, d_body, gpu_size, &o, flags), GW_OK) << gwgpu::last_error;
          ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
          ASSERT_EQ(cudaMemcpy(gpu_out.data(), d_out, n * 4, cudaMemcpyDeviceToHost), cudaSuccess);
          cudaFree(d_out);
          for (uint64_t i = 0; i < n; ++i) {
            if (std::isnan(cpu_out[i])) {
              ASSERT_TRUE(std::isnan(gpu_out[i])) << i;
            } else {
              ASSERT_EQ(gwc::f32_bits(gpu_out[i]), gwc::f32_bits(cpu_out[i])) << "decoded element " << i;
            }
          }
        }
        cudaFree(d_in);
        cudaFree(d_body);
      }
    }
  }
  cudaStreamDestroy(stream);
}

}  // namespace
