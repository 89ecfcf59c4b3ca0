// CUDA kernels of the onebit codec (cuda.cu), called by plugin.cpp when GW_CODEC_WITH_CUDA is set.
// Each returns a cudaError_t as int (0: success) and writes its text into error[128].
#pragma once

#include <gradwire/types.h>

#include <cstddef>
#include <cstdint>

namespace gwc {
namespace onebit {

struct CudaOps {
  // Writes the whole body: block header, scales, bits.
  int (*encode)(uint32_t block, gw_dtype in_dtype, const void* in, uint64_t n, uint8_t* body, void* stream,
                char* error);
  int (*decode)(uint32_t block, const uint8_t* scales, const uint8_t* bits, uint64_t n, gw_dtype out_dtype, void* out,
                bool accumulate, void* stream, char* error);
  int (*read_bytes)(const void* device_src, void* host_dst, size_t n, void* stream, char* error);
};

const CudaOps* cuda_ops();

}  // namespace onebit
}  // namespace gwc
