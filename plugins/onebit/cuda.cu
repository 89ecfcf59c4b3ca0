// CUDA kernels of the onebit codec: the same body bytes as cpu.cpp. Scales: one warp per codec
// block; lanes 0..15 keep onebit_math.h's 16 lane sums in the same order, combined by shuffles in
// the same pairwise tree. Sign bits: one warp per 32 elements (a ballot), written byte by byte.
#include "cuda.hpp"
#include "gw_codec/block_body.hpp"
#include "gw_codec/cuda_util.cuh"
#include "onebit_math.h"

namespace gwc {
namespace onebit {
namespace {

constexpr unsigned kThreads = 256;
constexpr unsigned kWarps = kThreads / 32;

template <class In>
__global__ void scales_kernel(In tag, const void* in, uint64_t n, uint32_t block, uint8_t* body) {
  const unsigned lane = threadIdx.x % 32;
  if (blockIdx.x == 0 && threadIdx.x == 0) {
    reinterpret_cast<uint32_t*>(body)[0] = block;  // the body's block header (block_body.hpp)
    reinterpret_cast<uint32_t*>(body)[1] = 0;
  }
  uint32_t* scales = reinterpret_cast<uint32_t*>(body + kBlockBodyHeader);
  const uint64_t nblocks = (n + block - 1) / block;
  for (uint64_t b = (uint64_t)blockIdx.x * kWarps + threadIdx.x / 32; b < nblocks; b += (uint64_t)gridDim.x * kWarps) {
    const uint64_t first = b * block;
    const uint64_t count = first + block < n ? block : n - first;
    double acc = 0.0;
    if (lane < kLanes)
      for (uint64_t i = lane; i < count; i += kLanes)
        acc = acc + (double)f32_from_bits(f32_bits(load_f32(tag, in, first + i)) & 0x7fffffffu);
    for (unsigned w = kLanes / 2; w > 0; w /= 2) {
      const double other = __shfl_down_sync(0xffffffffu, acc, w);
      if (lane < w) acc = acc + other;
    }
    if (lane == 0) {
      const float s = (float)(acc / (double)count);
      scales[b] = s != s ? kNaNScale : f32_bits(s);
    }
  }
}

template <class In>
__global__ void bits_kernel(In tag, const void* in, uint64_t n, uint8_t* bits) {
  const uint64_t nbytes = payload_bytes(n);
  const uint64_t words = (n + 31) / 32;
  const unsigned lane = threadIdx.x % 32;
  for (uint64_t w = (uint64_t)blockIdx.x * kWarps + threadIdx.x / 32; w < words; w += (uint64_t)gridDim.x * kWarps) {
    const uint64_t i = w * 32 + lane;
    const bool neg = i < n && sign_bit(load_f32(tag, in, i));
    const uint32_t ballot = __ballot_sync(0xffffffffu, neg);
    if (lane < 4 && w * 4 + lane < nbytes) bits[w * 4 + lane] = (uint8_t)(ballot >> (8 * lane));
  }
}

template <class Out>
__global__ void decode_kernel(Out tag, const uint8_t* scales, const uint8_t* bits, uint64_t n, uint32_t block,
                              void* out, bool acc) {
  const uint64_t stride = (uint64_t)gridDim.x * blockDim.x;
  const uint32_t* s = reinterpret_cast<const uint32_t*>(scales);
  for (uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
    store_f32(tag, out, i, decode_value(s[i / block], (bits[i / 8] >> (i % 8)) & 1u), acc);
}

unsigned warps_grid(uint64_t items) {
  const uint64_t g = (items + kWarps - 1) / kWarps;
  return static_cast<unsigned>(g == 0 ? 1 : (g < (1u << 30) ? g : (1u << 30)));
}

int encode(uint32_t block, gw_dtype in_dtype, const void* in, uint64_t n, uint8_t* body, void* stream, char* error) {
  const cudaStream_t s = static_cast<cudaStream_t>(stream);
  const uint64_t nblocks = (n + block - 1) / block;
  uint8_t* bits = body + kBlockBodyHeader + 4 * nblocks;
  return cu::report(cu::dispatch_dtype(in_dtype,
                                       [&](auto tag) {
                                         scales_kernel<<<warps_grid(nblocks), kThreads, 0, s>>>(tag, in, n, block, body);
                                         if (n > 0)
                                           bits_kernel<<<warps_grid((n + 31) / 32), kThreads, 0, s>>>(tag, in, n, bits);
                                         return cudaGetLastError();
                                       }),
                    error);
}

int decode(uint32_t block, const uint8_t* scales, const uint8_t* bits, uint64_t n, gw_dtype out_dtype, void* out,
           bool acc, void* stream, char* error) {
  const cudaStream_t s = static_cast<cudaStream_t>(stream);
  return cu::report(cu::dispatch_dtype(out_dtype,
                                       [&](auto tag) {
                                         decode_kernel<<<cu::grid_for(n, 4), kThreads, 0, s>>>(tag, scales, bits, n,
                                                                                              block, out, acc);
                                         return cudaGetLastError();
                                       }),
                    error);
}

}  // namespace

const CudaOps* cuda_ops() {
  static const CudaOps ops = {&encode, &decode, &cu::read_bytes};
  return &ops;
}

}  // namespace onebit
}  // namespace gwc
