// CUDA kernels of the powersgd codec (cuda.cu), called by plugin.cpp when GW_CODEC_WITH_CUDA is set, for
// tensors in device memory. Each value is computed in the order kernels.hpp defines, with the same
// roundings (__fmul_rn / __fadd_rn: nothing fused), so the device path's bits are the host path's.
// Each function returns a cudaError_t as int (0: success) and writes its text into error[128]; the
// kernels run on `stream` (a cudaStream_t, NULL: the default stream) and copy waits for them.
#pragma once

#include <cstddef>
#include <cstdint>

namespace psgd {
namespace cuda {

struct Ops {
  int (*set_device)(int device, char* error);
  int (*alloc)(float** p, uint64_t count, char* error);
  void (*release)(float* p);
  // n floats, host or device on either side; returns when they are copied (after the stream's work).
  int (*copy)(float* dst, const float* src, uint64_t n, void* stream, char* error);
  int (*zero)(float* p, uint64_t n, void* stream, char* error);
  // m = x + res (res NULL: m = x).
  int (*add)(const float* x, const float* res, float* m, uint64_t n, void* stream, char* error);
  // As kernels.hpp's multiply, multiply_transposed, reconstruct (m NULL) / subtract_product, orthogonalize.
  int (*multiply)(const float* m, uint64_t rows, uint64_t cols, const float* q, uint32_t r, float* p, void* stream,
                  char* error);
  int (*multiply_transposed)(const float* m, uint64_t rows, uint64_t cols, const float* p, uint32_t r, float* q,
                             void* stream, char* error);
  int (*product)(const float* m, const float* p, const float* q, uint64_t rows, uint64_t cols, uint32_t r, float* out,
                 void* stream, char* error);
  int (*orthogonalize)(float* p, uint64_t rows, uint32_t r, void* stream, char* error);
  int (*synchronize)(void* stream, char* error);  // returns when the stream's work is done
};

const Ops* ops();

}  // namespace cuda
}  // namespace psgd
