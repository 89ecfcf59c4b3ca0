// gw_codec/cuda_util.cuh — CUDA helpers of the codec plugins (include from .cu files only).
//
//   gwc::cu::load_f32<In>(p, i)        element i of an f32 / f16 (uint16_t tag F16) / bf16 array as f32
//   gwc::cu::store_f32<Out>(p, i, v, acc)   store, or add-and-store with acc (rounded once, as on the CPU)
//   gwc::cu::dispatch_dtype(dtype, fn) calls fn(tag) with tag F32 / F16 / BF16 for the gw_dtype
//   gwc::cu::grid_for(n, per_thread)   a launch size for a grid-stride loop
//   gwc::cu::report(err, error)        copies cudaGetErrorName(err) into error[128], returns (int)err
//   gwc::cu::read_bytes(dev, host, n, stream, error)   synchronous device-to-host read on stream
//   gwc::cu::check(err, codec, what)   throws GW_ERR_INTERNAL "<codec> CUDA <what> failed: <name>: <text>"
//   gwc::cu::DeviceScope(codec, device)   makes a tensor's device current for a scope, then restores
#pragma once

#include <cuda_runtime.h>
#include <gradwire/types.h>

#include <cstdio>
#include <string>

#include "gw_codec/codec_base.hpp"
#include "gw_codec/portable.h"

namespace gwc {
namespace cu {

struct F32 {};
struct F16 {};
struct BF16 {};

__device__ __forceinline__ float load_f32(F32, const void* p, uint64_t i) { return static_cast<const float*>(p)[i]; }
__device__ __forceinline__ float load_f32(F16, const void* p, uint64_t i) {
  return f16_to_f32(static_cast<const uint16_t*>(p)[i]);
}
__device__ __forceinline__ float load_f32(BF16, const void* p, uint64_t i) {
  return bf16_to_f32(static_cast<const uint16_t*>(p)[i]);
}

__device__ __forceinline__ void store_f32(F32, void* p, uint64_t i, float v, bool acc) {
  float* d = static_cast<float*>(p);
  d[i] = acc ? add_rn(d[i], v) : v;
}
__device__ __forceinline__ void store_f32(F16, void* p, uint64_t i, float v, bool acc) {
  uint16_t* d = static_cast<uint16_t*>(p);
  d[i] = f32_to_f16(acc ? add_rn(f16_to_f32(d[i]), v) : v);
}
__device__ __forceinline__ void store_f32(BF16, void* p, uint64_t i, float v, bool acc) {
  uint16_t* d = static_cast<uint16_t*>(p);
  d[i] = f32_to_bf16(acc ? add_rn(bf16_to_f32(d[i]), v) : v);
}

template <class Fn>
inline cudaError_t dispatch_dtype(gw_dtype dtype, Fn&& fn) {
  switch (dtype) {
    case GW_DTYPE_F32: return fn(F32{});
    case GW_DTYPE_F16: return fn(F16{});
    case GW_DTYPE_BF16: return fn(BF16{});
    default: return cudaErrorInvalidValue;
  }
}

inline unsigned grid_for(uint64_t n, uint64_t per_thread, unsigned block = 256) {
  const uint64_t threads = (n + per_thread - 1) / per_thread;
  uint64_t g = (threads + block - 1) / block;
  if (g > 65535ull * 32) g = 65535ull * 32;
  return g ? static_cast<unsigned>(g) : 1u;
}

inline int report(cudaError_t err, char* error) {
  if (err != cudaSuccess) std::snprintf(error, 128, "%s: %s", cudaGetErrorName(err), cudaGetErrorString(err));
  return static_cast<int>(err);
}

}  // namespace cu
}  // namespace gwc

namespace gwc {
namespace cu {

// Copies n bytes of device memory to the host, ordered on `stream`, and waits for them.
inline int read_bytes(const void* device_src, void* host_dst, size_t n, void* stream, char* error) {
  const cudaStream_t s = static_cast<cudaStream_t>(stream);
  cudaError_t err = cudaMemcpyAsync(host_dst, device_src, n, cudaMemcpyDeviceToHost, s);
  if (err == cudaSuccess) err = cudaStreamSynchronize(s);
  return report(err, error);
}

// For the codecs whose CUDA half throws (topk, randomk).
inline void check(cudaError_t e, const char* codec, const char* what) {
  if (e != cudaSuccess)
    fail(GW_ERR_INTERNAL, std::string(codec) + " CUDA " + what + " failed: " + cudaGetErrorName(e) + ": " +
                              cudaGetErrorString(e));
}

// Makes the tensor's device current for the call and restores the previous one.
struct DeviceScope {
  int previous = 0;
  DeviceScope(const char* codec, int device) {
    check(cudaGetDevice(&previous), codec, "cudaGetDevice");
    check(cudaSetDevice(device), codec, "cudaSetDevice");
  }
  ~DeviceScope() { cudaSetDevice(previous); }
  DeviceScope(const DeviceScope&) = delete;
  DeviceScope& operator=(const DeviceScope&) = delete;
};

}  // namespace cu
}  // namespace gwc
