// CUDA kernels of the powersgd codec: the orders of kernels.hpp, rounding by rounding (__fmul_rn and
// __fadd_rn / __fsub_rn are never contracted into an FMA, __fsqrt_rn and __fdiv_rn round as the host's
// sqrt and division do), so the device path gives the host path's bits.
//   dot: one warp; lane l sums the indices i ≡ l (mod 32) in increasing order, then the shuffle-down fold
//        (s[l] + s[l + w] for w = 16, 8, 4, 2, 1), the host's 32 lanes folded in halves.
//   P = M Q: a warp per (row, column of Q). Q = M^T P: a thread per (column of M, k), over the rows in
//   order. P Q^T: a thread per element, over k in order. Gram-Schmidt: one block per matrix, the columns
//   in order, each dot product by its first warp.
#include <cuda_runtime.h>

#include <cstdio>

#include "cuda.hpp"

namespace psgd {
namespace cuda {
namespace {

constexpr unsigned kThreads = 256;
constexpr unsigned kMaxGrid = 1u << 30;

int report(cudaError_t e, char* error) {
  if (e != cudaSuccess && error) std::snprintf(error, 128, "%s", cudaGetErrorString(e));
  return int(e);
}

unsigned grid_for(uint64_t work, unsigned per_block) {
  const uint64_t g = (work + per_block - 1) / per_block;
  return unsigned(g == 0 ? 1 : (g < kMaxGrid ? g : kMaxGrid));
}

// The warp's dot of a and b (n elements), in lane 0 (and every lane, after the broadcast).
__device__ float warp_dot(const float* a, const float* b, uint64_t n, unsigned lane) {
  float s = 0.0f;
  for (uint64_t i = lane; i < n; i += 32) s = __fadd_rn(s, __fmul_rn(a[i], b[i]));
  for (int w = 16; w >= 1; w /= 2) s = __fadd_rn(s, __shfl_down_sync(0xffffffffu, s, w));
  return __shfl_sync(0xffffffffu, s, 0);
}

__global__ void add_kernel(const float* x, const float* res, float* m, uint64_t n) {
  for (uint64_t i = blockIdx.x * uint64_t(blockDim.x) + threadIdx.x; i < n; i += uint64_t(gridDim.x) * blockDim.x)
    m[i] = res ? __fadd_rn(x[i], res[i]) : x[i];
}

// Warp w of the grid computes P[i, k] for (i, k) = (w % rows, w / rows), and so on by the grid's warps.
__global__ void multiply_kernel(const float* m, uint64_t rows, uint64_t cols, const float* q, uint32_t r, float* p) {
  const unsigned lane = threadIdx.x % 32;
  const uint64_t warps = uint64_t(gridDim.x) * (blockDim.x / 32);
  for (uint64_t w = (blockIdx.x * uint64_t(blockDim.x) + threadIdx.x) / 32; w < rows * r; w += warps) {
    const uint64_t i = w % rows, k = w / rows;
    const float s = warp_dot(m + i * cols, q + k * cols, cols, lane);
    if (lane == 0) p[k * rows + i] = s;
  }
}

// Thread t computes Q[j, k] for (j, k) = (t % cols, t / cols): neighbouring threads read neighbouring
// elements of a row of M.
__global__ void multiply_transposed_kernel(const float* m, uint64_t rows, uint64_t cols, const float* p, uint32_t r,
                                           float* q) {
  for (uint64_t t = blockIdx.x * uint64_t(blockDim.x) + threadIdx.x; t < cols * r; t += uint64_t(gridDim.x) * blockDim.x) {
    const uint64_t j = t % cols, k = t / cols;
    const float* pk = p + k * rows;
    float s = 0.0f;
    for (uint64_t i = 0; i < rows; ++i) s = __fadd_rn(s, __fmul_rn(pk[i], m[i * cols + j]));
    q[k * cols + j] = s;
  }
}

__global__ void product_kernel(const float* m, const float* p, const float* q, uint64_t rows, uint64_t cols,
                               uint32_t r, float* out) {
  for (uint64_t t = blockIdx.x * uint64_t(blockDim.x) + threadIdx.x; t < rows * cols;
       t += uint64_t(gridDim.x) * blockDim.x) {
    const uint64_t i = t / cols, j = t % cols;
    float s = __fmul_rn(p[i], q[j]);
    for (uint32_t k = 1; k < r; ++k) s = __fadd_rn(s, __fmul_rn(p[k * rows + i], q[k * cols + j]));
    out[t] = m ? __fsub_rn(m[t], s) : s;
  }
}

// One block: Gram-Schmidt on the r columns of p (kernels.hpp's orthogonalize).
__global__ void orthogonalize_kernel(float* p, uint64_t rows, uint32_t r) {
  __shared__ float shared;
  const unsigned lane = threadIdx.x % 32;
  const bool first_warp = threadIdx.x < 32;
  // The first warp's dot of a and b, seen by every thread of the block.
  auto dot = [&](const float* a, const float* b) {
    __syncthreads();
    if (first_warp) {
      const float s = warp_dot(a, b, rows, lane);
      if (lane == 0) shared = s;
    }
    __syncthreads();
    return shared;
  };
  for (uint32_t k = 0; k < r; ++k) {
    float* col = p + k * rows;
    const float before = __fsqrt_rn(dot(col, col));
    for (int pass = 0; pass < 2; ++pass)
      for (uint32_t l = 0; l < k; ++l) {
        const float* other = p + l * rows;
        const float proj = dot(other, col);
        for (uint64_t i = threadIdx.x; i < rows; i += blockDim.x) col[i] = __fsub_rn(col[i], __fmul_rn(proj, other[i]));
      }
    const float norm = __fsqrt_rn(dot(col, col));
    const bool keep = norm > __fmul_rn(1e-4f, before) && norm > 0.0f;
    const float inv = keep ? __fdiv_rn(1.0f, norm) : 0.0f;
    for (uint64_t i = threadIdx.x; i < rows; i += blockDim.x) col[i] = keep ? __fmul_rn(col[i], inv) : 0.0f;
  }
}

int set_device(int device, char* error) { return report(cudaSetDevice(device), error); }

int alloc(float** p, uint64_t count, char* error) {
  return report(cudaMalloc(reinterpret_cast<void**>(p), (count ? count : 1) * sizeof(float)), error);
}

void release(float* p) {
  if (p) cudaFree(p);
}

int copy(float* dst, const float* src, uint64_t n, void* stream, char* error) {
  const cudaStream_t s = static_cast<cudaStream_t>(stream);
  if (n == 0) return 0;
  if (int rc = report(cudaMemcpyAsync(dst, src, n * sizeof(float), cudaMemcpyDefault, s), error)) return rc;
  return report(cudaStreamSynchronize(s), error);
}

int zero(float* p, uint64_t n, void* stream, char* error) {
  if (n == 0) return 0;
  return report(cudaMemsetAsync(p, 0, n * sizeof(float), static_cast<cudaStream_t>(stream)), error);
}

int add(const float* x, const float* res, float* m, uint64_t n, void* stream, char* error) {
  if (n == 0) return 0;
  add_kernel<<<grid_for(n, kThreads), kThreads, 0, static_cast<cudaStream_t>(stream)>>>(x, res, m, n);
  return report(cudaGetLastError(), error);
}

int multiply(const float* m, uint64_t rows, uint64_t cols, const float* q, uint32_t r, float* p, void* stream,
             char* error) {
  multiply_kernel<<<grid_for(rows * r, kThreads / 32), kThreads, 0, static_cast<cudaStream_t>(stream)>>>(m, rows, cols,
                                                                                                          q, r, p);
  return report(cudaGetLastError(), error);
}

int multiply_transposed(const float* m, uint64_t rows, uint64_t cols, const float* p, uint32_t r, float* q,
                        void* stream, char* error) {
  multiply_transposed_kernel<<<grid_for(cols * r, kThreads), kThreads, 0, static_cast<cudaStream_t>(stream)>>>(
      m, rows, cols, p, r, q);
  return report(cudaGetLastError(), error);
}

int product(const float* m, const float* p, const float* q, uint64_t rows, uint64_t cols, uint32_t r, float* out,
            void* stream, char* error) {
  product_kernel<<<grid_for(rows * cols, kThreads), kThreads, 0, static_cast<cudaStream_t>(stream)>>>(m, p, q, rows,
                                                                                                       cols, r, out);
  return report(cudaGetLastError(), error);
}

int orthogonalize(float* p, uint64_t rows, uint32_t r, void* stream, char* error) {
  orthogonalize_kernel<<<1, 1024, 0, static_cast<cudaStream_t>(stream)>>>(p, rows, r);
  return report(cudaGetLastError(), error);
}

int synchronize(void* stream, char* error) {
  return report(cudaStreamSynchronize(static_cast<cudaStream_t>(stream)), error);
}

}  // namespace

const Ops* ops() {
  static const Ops o = {&set_device, &alloc, &release, &copy, &zero, &add, &multiply, &multiply_transposed,
                        &product, &orthogonalize, &synchronize};
  return &o;
}

}  // namespace cuda
}  // namespace psgd
