// CUDA kernels of the int8 codec (cuda.cu), called by plugin.cpp when GW_CODEC_WITH_CUDA is set.
// Each returns a cudaError_t as int (0: success) and writes its text into error[128].
#pragma once

#include <gradwire/types.h>

#include <cstddef>

#include "cpu.hpp"

namespace gwc {
namespace int8 {

struct CudaOps {
  int (*encode)(const EncodeArgs& args, gw_dtype in_dtype, const void* in, uint64_t n, uint8_t* scales, int8_t* q,
                void* stream, char* error);
  int (*decode)(uint32_t block, const uint8_t* scales, const int8_t* q, uint64_t n, gw_dtype out_dtype, void* out,
                bool accumulate, void* stream, char* error);
  int (*read_bytes)(const void* device_src, void* host_dst, size_t n, void* stream, char* error);
};

const CudaOps* cuda_ops();

}  // namespace int8
}  // namespace gwc
