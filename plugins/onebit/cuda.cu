// CUDA kernels of the onebit codec: the same body bytes as cpu.cpp. Scales: one warp per codec
// block; lanes 0..15 keep onebit_math.h's 16 lane sums in the same order, combined by shuffles in
// the same pairwise tree. Sign bits: one warp per 32 elements (a ballot), written byte by byte.
#include "cuda.hpp"
#include "gw_codec/block_cuda.cuh"
#include "onebit_math.h"

namespace gwc {
namespace onebit {
namespace {

constexpr unsigned kThreads = 256;
constexpr unsigned kWarps = kThreads / 32;

template <class In>
__global__ void scales_kernel(In tag, const void* in, uint64_t n, uint32_t block, uint8_t* body) {
  const unsigned lane = threadIdx.x % 32;
  if (blockIdx.x == 0 && threadIdx.x == 0) cu::store_block_header(body, block);
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

struct SignBits {
  using Payload = uint8_t;
  const uint8_t* bits;
  __device__ float operator()(uint64_t i, uint32_t scale) const {
    return decode_value(scale, (bits[i / 8] >> (i % 8)) & 1u);
  }
};

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

}  // namespace

const CudaOps* cuda_ops() {
  static const CudaOps ops = {&encode, &cu::decode_blocks<SignBits>, &cu::read_bytes};
  return &ops;
}

}  // namespace onebit
}  // namespace gwc
