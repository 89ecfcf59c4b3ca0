// G1: each dense codec's CUDA encode + decode on 256 MiB .. 2 GiB of f32 against a device-to-device
// cudaMemcpy of the same input. GB/s counts the bytes each side moves: the codec's encode reads the
// input and writes the body, its decode reads the body and writes the output; the copy reads and
// writes the input size. ratio = codec GB/s / copy GB/s (target >= 0.9). Prints one line per case.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "direct_codec.hpp"

namespace {

void ok(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    std::fprintf(stderr, "%s: %s\n", what, cudaGetErrorString(e));
    std::exit(1);
  }
}

__attribute__((noinline)) float median(std::vector<float> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  const std::string plugin_dir = argc > 1 ? argv[1] : GW_PLUGIN_DIR;
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("G1 skipped: no CUDA device\n");
    return 0;
  }
  const uint64_t max_bytes = uint64_t{2} << 30;
  float* in = nullptr;
  float* out = nullptr;
  uint8_t* body = nullptr;
  ok(cudaMalloc(&in, max_bytes), "cudaMalloc in");
  ok(cudaMalloc(&out, max_bytes), "cudaMalloc out");
  ok(cudaMalloc(&body, max_bytes / 2 + (uint64_t{64} << 20)), "cudaMalloc body");
  {
    std::vector<float> h(uint64_t{1} << 24);
    for (size_t i = 0; i < h.size(); ++i) h[i] = float((i * 2654435761u) % 2001) * 1e-3f - 1.0f;
    for (uint64_t off = 0; off < max_bytes / 4; off += h.size())
      ok(cudaMemcpy(in + off, h.data(), h.size() * 4, cudaMemcpyHostToDevice), "fill");
  }
  cudaStream_t stream;
  ok(cudaStreamCreate(&stream), "stream");
  cudaEvent_t e0, e1;
  cudaEventCreate(&e0);
  cudaEventCreate(&e1);
  const int reps = 5;
  int failures = 0;
  for (uint64_t bytes : {uint64_t{256} << 20, uint64_t{1} << 30, uint64_t{2} << 30}) {
    const uint64_t n = bytes / 4;
    std::vector<float> copy_ms;
    for (int r = 0; r <= reps; ++r) {
      cudaEventRecord(e0, stream);
      ok(cudaMemcpyAsync(out, in, bytes, cudaMemcpyDeviceToDevice, stream), "copy");
      cudaEventRecord(e1, stream);
      ok(cudaEventSynchronize(e1), "sync");
      float ms = 0;
      cudaEventElapsedTime(&ms, e0, e1);
      if (r) copy_ms.push_back(ms);
    }
    const double copy_gbps = 2.0 * double(bytes) / (median(copy_ms) * 1e-3) / 1e9;
    for (const char* name : {"fp16", "bf16", "int8", "onebit"}) {
      gwgpu::DirectCodec k(plugin_dir, name);
      gw_codec_context ctx{};
      ctx.struct_size = sizeof ctx;
      ctx.world_size = 1;
      gw_tensor t{};
      t.struct_size = sizeof t;
      t.memory = GW_MEMORY_CUDA;
      t.dtype = GW_DTYPE_F32;
      t.count = n;
      t.stream = stream;
      gw_tensor o = t;
      t.data = in;
      o.data = out;
      const uint64_t cap = k.max_body(GW_DTYPE_F32, n);
      uint64_t size = 0;
      std::vector<float> ms_all;
      for (int r = 0; r <= reps; ++r) {
        cudaEventRecord(e0, stream);
        if (k.vt()->encode(k.codec(), &ctx, &t, body, cap, &size) != GW_OK ||
            k.vt()->decode(k.codec(), &ctx, body, size, &o, 0) != GW_OK) {
          std::printf("G1 %s: error: %s\n", name, gwgpu::last_error.c_str());
          ++failures;
          break;
        }
        cudaEventRecord(e1, stream);
        ok(cudaEventSynchronize(e1), "sync");
        float ms = 0;
        cudaEventElapsedTime(&ms, e0, e1);
        if (r) ms_all.push_back(ms);
      }
      if (ms_all.empty()) continue;
      const double t_s = median(ms_all) * 1e-3;
      const double gbps = (2.0 * double(bytes) + 2.0 * double(size)) / t_s / 1e9;
      std::printf("G1 %-6s %5llu MiB  encode+decode %8.3f ms  %7.1f GB/s moved  (%7.1f GB/s of input)  "
                  "copy %7.1f GB/s  ratio %.3f%s\n",
                  name, (unsigned long long)(bytes >> 20), t_s * 1e3, gbps, double(bytes) / t_s / 1e9, copy_gbps,
                  gbps / copy_gbps, gbps / copy_gbps >= 0.9 ? "" : "  (below 0.9)");
    }
  }
  cudaFree(in);
  cudaFree(out);
  cudaFree(body);
  return failures ? 1 : 0;
}
