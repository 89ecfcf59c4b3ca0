// gw_codec/half_cuda.cuh — CUDA kernels of the fp16 and bf16 codecs; the same bytes as
// half_kernels.cpp (portable.h's conversions; a NaN is never multiplied, so its payload survives on
// both). Include from a plugin's .cu; gwc::cu::half_cuda_ops() returns the table for HalfCodec.
#pragma once

#include "gw_codec/cuda_util.cuh"
#include "gw_codec/half_codec.hpp"

namespace gwc {
namespace cu {

template <bool kBF16>
__device__ __forceinline__ uint16_t to_half(float v) {
  return kBF16 ? f32_to_bf16(v) : f32_to_f16(v);
}
template <bool kBF16>
__device__ __forceinline__ float from_half(uint16_t h) {
  return kBF16 ? bf16_to_f32(h) : f16_to_f32(h);
}
__device__ __forceinline__ float scale_keep_nan(float x, float s) { return x != x ? x : mul_rn(x, s); }

template <bool kBF16, class In>
__global__ void half_encode_kernel(In tag, const void* in, uint16_t* out, uint64_t n, float scale) {
  const uint64_t stride = (uint64_t)gridDim.x * blockDim.x;
  const bool scaled = scale != 1.0f;
  for (uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
    const float x = load_f32(tag, in, i);
    out[i] = to_half<kBF16>(scaled ? scale_keep_nan(x, scale) : x);
  }
}

template <bool kBF16, class Out>
__global__ void half_decode_kernel(Out tag, const uint16_t* in, void* out, uint64_t n, float scale, bool acc) {
  const uint64_t stride = (uint64_t)gridDim.x * blockDim.x;
  const bool scaled = scale != 1.0f;
  for (uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
    const float x = from_half<kBF16>(in[i]);
    store_f32(tag, out, i, scaled ? scale_keep_nan(x, scale) : x, acc);
  }
}

inline int half_cuda_encode(HalfFormat f, gw_dtype in_dtype, const void* in, uint16_t* out, uint64_t n,
                            float scale, void* stream, char* error) {
  const cudaStream_t s = static_cast<cudaStream_t>(stream);
  const unsigned grid = grid_for(n, 4);
  cudaError_t err = dispatch_dtype(in_dtype, [&](auto tag) {
    if (f == HalfFormat::kBF16)
      half_encode_kernel<true><<<grid, 256, 0, s>>>(tag, in, out, n, scale);
    else
      half_encode_kernel<false><<<grid, 256, 0, s>>>(tag, in, out, n, scale);
    return cudaGetLastError();
  });
  return report(err, error);
}

inline int half_cuda_decode(HalfFormat f, const uint16_t* in, gw_dtype out_dtype, void* out, uint64_t n,
                            float scale, bool acc, void* stream, char* error) {
  const cudaStream_t s = static_cast<cudaStream_t>(stream);
  const unsigned grid = grid_for(n, 4);
  cudaError_t err = dispatch_dtype(out_dtype, [&](auto tag) {
    if (f == HalfFormat::kBF16)
      half_decode_kernel<true><<<grid, 256, 0, s>>>(tag, in, out, n, scale, acc);
    else
      half_decode_kernel<false><<<grid, 256, 0, s>>>(tag, in, out, n, scale, acc);
    return cudaGetLastError();
  });
  return report(err, error);
}

inline const HalfCudaOps* half_cuda_ops() {
  static const HalfCudaOps ops = {&half_cuda_encode, &half_cuda_decode};
  return &ops;
}

}  // namespace cu
}  // namespace gwc
