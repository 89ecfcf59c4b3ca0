// CUDA kernels of the int8 codec: the same body bytes as cpu.cpp (int8_math.h, and the same Philox
// stream for stochastic rounding). One thread block per codec block: the largest magnitude is an
// integer atomicMax in shared memory (order-free), then each thread quantizes its elements.
#include "cuda.hpp"
#include "gw_codec/block_cuda.cuh"
#include "gw_codec/philox.h"
#include "int8_math.h"

namespace gwc {
namespace int8 {
namespace {

constexpr unsigned kThreads = 256;

template <class In>
__global__ void encode_kernel(In tag, const void* in, uint64_t n, uint32_t block, uint32_t rounding, uint64_t seed,
                              uint64_t step, uint8_t* scales, int8_t* q) {
  __shared__ uint32_t absmax;
  const RandomStream stream{seed, step, kStreamInt8Rounding};
  if (blockIdx.x == 0 && threadIdx.x == 0) cu::store_block_header(scales - kBlockBodyHeader, block);
  const uint64_t nblocks = (n + block - 1) / block;
  for (uint64_t b = blockIdx.x; b < nblocks; b += gridDim.x) {
    const uint64_t first = b * block;
    const uint64_t last = first + block < n ? first + block : n;
    if (threadIdx.x == 0) absmax = 0;
    __syncthreads();
    uint32_t m = 0;
    for (uint64_t i = first + threadIdx.x; i < last; i += blockDim.x) {
      const uint32_t a = f32_bits(load_f32(tag, in, i)) & 0x7fffffffu;
      m = a > m ? a : m;
    }
    atomicMax(&absmax, m);
    __syncthreads();
    const uint32_t scale = scale_bits(absmax);
    if (threadIdx.x == 0) reinterpret_cast<uint32_t*>(scales)[b] = scale;
    const bool quant = quantizes(scale);
    const float inv = quant ? inverse(scale) : 0.0f;
    for (uint64_t i = first + threadIdx.x; i < last; i += blockDim.x) {
      int8_t v = 0;
      if (quant) {
        const float x = load_f32(tag, in, i);
        v = rounding == kNearest ? quantize_nearest(x, inv) : quantize_stochastic(x, inv, scale, uniform01(stream.word(i)));
      }
      q[i] = v;
    }
    __syncthreads();
  }
}

struct Dequantize {
  using Payload = int8_t;
  const int8_t* q;
  __device__ float operator()(uint64_t i, uint32_t scale) const { return dequantize(q[i], f32_from_bits(scale)); }
};

int encode(const EncodeArgs& args, gw_dtype in_dtype, const void* in, uint64_t n, uint8_t* scales, int8_t* q,
           void* stream, char* error) {
  const cudaStream_t s = static_cast<cudaStream_t>(stream);
  const uint64_t nblocks = (n + args.block - 1) / args.block;
  const unsigned grid = static_cast<unsigned>(nblocks == 0 ? 1 : (nblocks < (1u << 30) ? nblocks : (1u << 30)));
  return cu::report(cu::dispatch_dtype(in_dtype,
                                       [&](auto tag) {
                                         encode_kernel<<<grid, kThreads, 0, s>>>(tag, in, n, args.block, args.rounding,
                                                                                args.seed, args.step, scales, q);
                                         return cudaGetLastError();
                                       }),
                    error);
}

}  // namespace

const CudaOps* cuda_ops() {
  static const CudaOps ops = {&encode, &cu::decode_blocks<Dequantize>, &cu::read_bytes};
  return &ops;
}

}  // namespace int8
}  // namespace gwc
