// G2, our side: the topk codec's CUDA encode (default configuration: approx selection, fp32 values,
// delta indices) on 2^28 normal f32 values in device memory, k = 1 %. Prints our median time over
// repetitions after a warm-up (cudaEvent timing on the tensor's stream), the selected count against
// [0.9k, 1.1k], and the recall against our own exact selection. With a dump directory, writes the
// input (x.f32), our selected indices (ours.u32) and our figures (ours.json) there, for
// g2_torch_topk.py to time torch.topk on the same data and compute the recall against its exact set.
//
// Usage: gw_gpu_g2 [plugin-dir] [dump-dir]      exit status 0 when every step ran and the count is
// within the window, 1 otherwise; prints "G2 skipped" and exits 0 without a CUDA device.
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <string>
#include <vector>

#include "direct_codec.hpp"

namespace {

constexpr uint64_t kN = uint64_t{1} << 28;
constexpr int kWarmup = 2;
constexpr int kReps = 7;

bool ok(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return true;
  std::printf("G2 error: %s failed: %s: %s\n", what, cudaGetErrorName(e), cudaGetErrorString(e));
  return false;
}

__device__ uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// Standard normal values from a counter hash (Box-Muller); deterministic for a seed.
__global__ void fill_normal(float* x, uint64_t n, uint64_t seed) {
  for (uint64_t i = blockIdx.x * uint64_t{blockDim.x} + threadIdx.x; i < n; i += uint64_t{gridDim.x} * blockDim.x) {
    const uint64_t h = mix64(seed + 0x9e3779b97f4a7c15ull * (i + 1));
    const float u1 = (static_cast<float>(h >> 40) + 0.5f) * (1.0f / 16777216.0f);
    const float u2 = (static_cast<float>(h & 0xffffffu) + 0.5f) * (1.0f / 16777216.0f);
    x[i] = sqrtf(-2.0f * logf(u1)) * cospif(2.0f * u2);
  }
}

struct Stats {
  double median = 0, min = 0, max = 0, spread = 0;
};

Stats stats(std::vector<float> ms) {
  std::sort(ms.begin(), ms.end());
  Stats s;
  s.median = ms[ms.size() / 2];
  s.min = ms.front();
  s.max = ms.back();
  s.spread = s.median > 0 ? (s.max - s.min) / s.median : 0;
  return s;
}

// Indices of a topk body (docs/wire-format.md, "topk"); false with a message when it is malformed.
bool body_indices(const std::vector<uint8_t>& body, uint64_t n, std::vector<uint32_t>& idx, std::string& error) {
  if (body.size() < 8) return error = "body shorter than its preamble", false;
  const uint32_t vb = body[0] == 0 ? 4 : 2;
  const uint32_t m = body[4] | (uint32_t{body[5]} << 8) | (uint32_t{body[6]} << 16) | (uint32_t{body[7]} << 24);
  size_t p = 8 + size_t{m} * vb;
  if (p > body.size()) return error = "body too short for its values", false;
  idx.clear();
  idx.reserve(m);
  uint64_t next = 0;
  for (uint32_t j = 0; j < m; ++j) {
    uint64_t v = 0;
    if (body[1] == 0) {
      if (p + 4 > body.size()) return error = "u32 indices truncated", false;
      v = body[p] | (uint32_t{body[p + 1]} << 8) | (uint32_t{body[p + 2]} << 16) | (uint32_t{body[p + 3]} << 24);
      p += 4;
      if (v < next) return error = "indices not increasing", false;
    } else {
      uint64_t gap = 0;
      for (int b = 0;; ++b) {
        if (p >= body.size() || b == 5) return error = "delta index truncated or too long", false;
        const uint8_t byte = body[p++];
        gap |= uint64_t{byte & 0x7fu} << (7 * b);
        if (!(byte & 0x80u)) break;
      }
      v = next + gap;
    }
    if (v >= n) return error = "index out of range", false;
    idx.push_back(static_cast<uint32_t>(v));
    next = v + 1;
  }
  if (p != body.size()) return error = "bytes after the last index", false;
  return true;
}

// One topk codec timed on the device input: returns false on any error (printed).
bool run_codec(gwgpu::DirectCodec& k, float* d_x, uint8_t* d_body, uint64_t cap, cudaStream_t stream, Stats& st,
               std::vector<uint32_t>& idx) {
  gw_codec_context ctx{};
  ctx.struct_size = sizeof ctx;
  ctx.world_size = 1;
  gw_tensor t{};
  t.struct_size = sizeof t;
  t.memory = GW_MEMORY_CUDA;
  t.dtype = GW_DTYPE_F32;
  t.count = kN;
  t.data = d_x;
  t.stream = stream;
  cudaEvent_t e0, e1;
  if (!ok(cudaEventCreate(&e0), "cudaEventCreate") || !ok(cudaEventCreate(&e1), "cudaEventCreate")) return false;
  std::vector<float> ms;
  uint64_t size = 0;
  bool good = true;
  for (int r = 0; r < kWarmup + kReps && good; ++r) {
    good = ok(cudaEventRecord(e0, stream), "cudaEventRecord");
    const gw_status s = k.vt()->encode(k.codec(), &ctx, &t, d_body, cap, &size);
    if (s != GW_OK) {
      std::printf("G2 error: topk encode failed (status %d): %s\n", int(s), gwgpu::last_error.c_str());
      good = false;
      break;
    }
    good = good && ok(cudaEventRecord(e1, stream), "cudaEventRecord") && ok(cudaEventSynchronize(e1), "sync");
    float elapsed = 0;
    good = good && ok(cudaEventElapsedTime(&elapsed, e0, e1), "cudaEventElapsedTime");
    if (r >= kWarmup) ms.push_back(elapsed);
  }
  cudaEventDestroy(e0);
  cudaEventDestroy(e1);
  if (!good) return false;
  st = stats(ms);
  std::vector<uint8_t> body(size);
  if (!ok(cudaMemcpy(body.data(), d_body, size, cudaMemcpyDeviceToHost), "copy body to host")) return false;
  std::string error;
  if (!body_indices(body, kN, idx, error)) {
    std::printf("G2 error: the GPU body does not parse: %s\n", error.c_str());
    return false;
  }
  return true;
}

bool write_file(const std::string& path, const void* data, size_t bytes) {
  FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) {
    std::printf("G2 error: cannot write %s\n", path.c_str());
    return false;
  }
  const bool good = std::fwrite(data, 1, bytes, f) == bytes;
  if (std::fclose(f) != 0 || !good) {
    std::printf("G2 error: writing %s failed (disk full?)\n", path.c_str());
    return false;
  }
  return true;
}

int run(const std::string& plugin_dir, const std::string& dump_dir) {
  float* d_x = nullptr;
  uint8_t* d_body = nullptr;
  cudaStream_t stream = nullptr;
  if (!ok(cudaMalloc(&d_x, kN * 4), "cudaMalloc input (1 GiB)") || !ok(cudaStreamCreate(&stream), "cudaStreamCreate"))
    return 1;
  fill_normal<<<4096, 256, 0, stream>>>(d_x, kN, 0x5eed);
  if (!ok(cudaGetLastError(), "fill_normal") || !ok(cudaStreamSynchronize(stream), "fill_normal")) return 1;

  gwgpu::DirectCodec approx(plugin_dir, "topk");  // the defaults: approx, fp32 values, delta indices, 1 %
  gwgpu::DirectCodec exact(plugin_dir, "topk", {{"selection", "exact"}, {"indices", "u32"}});
  const uint64_t k = static_cast<uint64_t>(std::llround(0.01 * double(kN)));
  const uint64_t cap = std::max(approx.max_body(GW_DTYPE_F32, kN), exact.max_body(GW_DTYPE_F32, kN));
  if (!ok(cudaMalloc(&d_body, cap), "cudaMalloc body")) return 1;

  Stats ours, ours_exact;
  std::vector<uint32_t> idx, exact_idx;
  if (!run_codec(approx, d_x, d_body, cap, stream, ours, idx)) return 1;
  if (!run_codec(exact, d_x, d_body, cap, stream, ours_exact, exact_idx)) return 1;

  const uint64_t m = idx.size();
  const bool count_ok = m >= k - k / 10 && m <= k + k / 10;
  std::vector<uint32_t> common;
  std::set_intersection(idx.begin(), idx.end(), exact_idx.begin(), exact_idx.end(), std::back_inserter(common));
  const double recall_own = double(common.size()) / double(k);
  std::printf("G2 case: topk (approx, fp32 values, delta indices) of 2^28 f32 normal values on the GPU, k = %llu (1 %%)\n",
              (unsigned long long)k);
  std::printf("G2 ours: encode median %.3f ms (min %.3f, max %.3f, spread %.2f, %d runs after %d warm-up)\n", ours.median,
              ours.min, ours.max, ours.spread, kReps, kWarmup);
  std::printf("G2 ours exact selection (for reference): encode median %.3f ms\n", ours_exact.median);
  std::printf("G2 selected count: %llu = %.4f k, window [0.9k, 1.1k]: %s\n", (unsigned long long)m, double(m) / double(k),
              count_ok ? "inside" : "OUTSIDE (a bug: approx promises a count within 10 % of k)");
  std::printf("G2 recall against our exact selection: %.5f\n", recall_own);
  if (exact_idx.size() != k) {
    std::printf("G2 error: exact selection kept %zu elements, not k = %llu\n", exact_idx.size(), (unsigned long long)k);
    return 1;
  }

  if (!dump_dir.empty()) {
    std::vector<float> x(kN);
    if (!ok(cudaMemcpy(x.data(), d_x, kN * 4, cudaMemcpyDeviceToHost), "copy input to host")) return 1;
    char json[512];
    std::snprintf(json, sizeof json,
                  "{\"n\": %llu, \"k\": %llu, \"count\": %llu, \"ours_ms\": %.6f, \"ours_spread\": %.4f, "
                  "\"ours_exact_ms\": %.6f, \"recall_own_exact\": %.6f}\n",
                  (unsigned long long)kN, (unsigned long long)k, (unsigned long long)m, ours.median, ours.spread,
                  ours_exact.median, recall_own);
    if (!write_file(dump_dir + "/x.f32", x.data(), kN * 4) ||
        !write_file(dump_dir + "/ours.u32", idx.data(), idx.size() * 4) ||
        !write_file(dump_dir + "/ours.json", json, std::strlen(json)))
      return 1;
  }
  cudaFree(d_x);
  cudaFree(d_body);
  cudaStreamDestroy(stream);
  return count_ok ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string plugin_dir = argc > 1 ? argv[1] : GW_PLUGIN_DIR;
  const std::string dump_dir = argc > 2 ? argv[2] : "";
  int devices = 0;
  const cudaError_t e = cudaGetDeviceCount(&devices);
  if (e != cudaSuccess || devices == 0) {
    std::printf("G2 skipped: no CUDA device (%s)\n", e != cudaSuccess ? cudaGetErrorString(e) : "0 devices");
    return 0;
  }
  try {
    return run(plugin_dir, dump_dir);
  } catch (const std::exception& ex) {
    std::printf("G2 error: %s\n", ex.what());
    return 1;
  }
}
