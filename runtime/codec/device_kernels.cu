// The elementwise kernels the compressed allreduce needs on device tensors (codec/device.hpp wraps them):
// the owner's own values added to the decoded contributions, the average's division, and error
// feedback's residual (x + residual, x_plus - decoded). Each rounds as
// its host loop does (IEEE single precision, round to nearest even, no fused operations), so device and
// host results are the same bits. Launch errors are returned (cudaError_t), device.cpp reports them.
#include <cuda_runtime_api.h>

#include <cstdint>

#include "codec/device_kernels.hpp"

namespace gw::device::kernels {
namespace {

__global__ void add_kernel(float* dst, const float* src, uint64_t n) {
  for (uint64_t i = uint64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += uint64_t(gridDim.x) * blockDim.x)
    dst[i] = __fadd_rn(dst[i], src[i]);
}

__global__ void subtract_kernel(float* out, const float* a, const float* b, uint64_t n) {
  for (uint64_t i = uint64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += uint64_t(gridDim.x) * blockDim.x)
    out[i] = __fsub_rn(a[i], b[i]);
}

__global__ void multiply_kernel(float* x, uint64_t n, float factor) {
  for (uint64_t i = uint64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += uint64_t(gridDim.x) * blockDim.x)
    x[i] = __fmul_rn(x[i], factor);
}

__global__ void divide_kernel(float* x, uint64_t n, float d) {
  for (uint64_t i = uint64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += uint64_t(gridDim.x) * blockDim.x)
    x[i] = __fdiv_rn(x[i], d);
}

constexpr unsigned kThreads = 256;
unsigned blocks_for(uint64_t n) {
  const uint64_t b = (n + kThreads - 1) / kThreads;
  return unsigned(b < 4096 ? b : 4096);
}

}  // namespace

int add_f32(float* dst, const float* src, uint64_t count, void* stream) {
  if (count == 0) return cudaSuccess;
  add_kernel<<<blocks_for(count), kThreads, 0, static_cast<cudaStream_t>(stream)>>>(dst, src, count);
  return cudaGetLastError();
}

int subtract_f32(float* out, const float* a, const float* b, uint64_t count, void* stream) {
  if (count == 0) return cudaSuccess;
  subtract_kernel<<<blocks_for(count), kThreads, 0, static_cast<cudaStream_t>(stream)>>>(out, a, b, count);
  return cudaGetLastError();
}

int divide_f32(float* x, uint64_t count, uint32_t n, void* stream) {
  if (count == 0) return cudaSuccess;
  const auto s = static_cast<cudaStream_t>(stream);
  if ((n & (n - 1)) == 0) {
    // A power of two: its inverse is exact, so the product rounds like the quotient (as on the host).
    multiply_kernel<<<blocks_for(count), kThreads, 0, s>>>(x, count, 1.0f / float(n));
  } else {
    divide_kernel<<<blocks_for(count), kThreads, 0, s>>>(x, count, float(n));
  }
  return cudaGetLastError();
}

}  // namespace gw::device::kernels
