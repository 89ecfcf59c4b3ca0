// gw_codec/block_cuda.cuh — the CUDA side of the blockwise codecs' body (block_body.hpp; int8, onebit).
// Include from .cu files only. API, in namespace gwc::cu:
//
//   store_block_header(body, block)        (device) the body's 8-byte header; one thread calls it
//   decode_blocks<Value>                   a CudaOps::decode: out[i] (+)= Value{payload}(i, scale bits of
//       (block, scales, payload, n,        i's block) for i < n, in a grid-stride loop of 256 threads a
//        out_dtype, out, acc, stream,      block. Value: an aggregate with `using Payload = ...;`, one
//        error)                            member `const Payload* ...` and a __device__
//                                          float operator()(uint64_t i, uint32_t scale_bits) const.
//       Returns a cudaError_t as int (0: success), its text in error[128].
#pragma once

#include "gw_codec/block_body.hpp"
#include "gw_codec/cuda_util.cuh"

namespace gwc {
namespace cu {

__device__ __forceinline__ void store_block_header(uint8_t* body, uint32_t block) {
  reinterpret_cast<uint32_t*>(body)[0] = block;
  reinterpret_cast<uint32_t*>(body)[1] = 0;
}

template <class Out, class Value>
__global__ void decode_blocks_kernel(Out tag, Value value, const uint8_t* scales, uint64_t n, uint32_t block,
                                     void* out, bool acc) {
  const uint64_t stride = (uint64_t)gridDim.x * blockDim.x;
  const uint32_t* s = reinterpret_cast<const uint32_t*>(scales);
  for (uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
    store_f32(tag, out, i, value(i, s[i / block]), acc);
}

template <class Value>
int decode_blocks(uint32_t block, const uint8_t* scales, const typename Value::Payload* payload, uint64_t n,
                  gw_dtype out_dtype, void* out, bool acc, void* stream, char* error) {
  const cudaStream_t s = static_cast<cudaStream_t>(stream);
  const Value value{payload};
  return report(dispatch_dtype(out_dtype,
                               [&](auto tag) {
                                 decode_blocks_kernel<<<grid_for(n, 4), 256, 0, s>>>(tag, value, scales, n, block,
                                                                                     out, acc);
                                 return cudaGetLastError();
                               }),
                error);
}

}  // namespace cu
}  // namespace gwc
