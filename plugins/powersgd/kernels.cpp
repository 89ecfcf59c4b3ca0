#include "kernels.hpp"

#include <cmath>
#include <cstring>

namespace psgd {
namespace {

// The products are compiled for AVX2 too and picked when the CPU has it. The bits do not change: every sum
// is in the order the source writes (partial sums s0..s7 are lanes, not a reassociation) and nothing is
// contracted into an FMA (-ffp-contract=off), so ranks on CPUs with and without AVX2 agree.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define PSGD_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define PSGD_CLONES
#endif

// Four partial sums so the loop vectorises without reassociation flags; summed in a fixed order.
inline float dot(const float* __restrict a, const float* __restrict b, uint64_t n) {
  float s0 = 0, s1 = 0, s2 = 0, s3 = 0, s4 = 0, s5 = 0, s6 = 0, s7 = 0;
  uint64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    s0 += a[i] * b[i];
    s1 += a[i + 1] * b[i + 1];
    s2 += a[i + 2] * b[i + 2];
    s3 += a[i + 3] * b[i + 3];
    s4 += a[i + 4] * b[i + 4];
    s5 += a[i + 5] * b[i + 5];
    s6 += a[i + 6] * b[i + 6];
    s7 += a[i + 7] * b[i + 7];
  }
  for (; i < n; ++i) s0 += a[i] * b[i];
  return ((s0 + s4) + (s1 + s5)) + ((s2 + s6) + (s3 + s7));
}

}  // namespace

PSGD_CLONES void multiply(const float* m, uint64_t rows, uint64_t cols, const float* q, uint32_t r, float* p) {
  // Row i of M is read once (it stays in the first-level cache for its r dot products).
  for (uint64_t i = 0; i < rows; ++i) {
    const float* row = m + i * cols;
    for (uint32_t k = 0; k < r; ++k) p[k * rows + i] = dot(row, q + k * cols, cols);
  }
}

PSGD_CLONES void multiply_transposed(const float* m, uint64_t rows, uint64_t cols, const float* p, uint32_t r, float* q) {
  std::memset(q, 0, sizeof(float) * cols * r);
  // Q[:, k] += P[i, k] * row i, row after row: M streams once, Q (r x cols) stays in cache.
  for (uint64_t i = 0; i < rows; ++i) {
    const float* __restrict row = m + i * cols;
    for (uint32_t k = 0; k < r; ++k) {
      const float a = p[k * rows + i];
      float* __restrict qk = q + k * cols;
      for (uint64_t j = 0; j < cols; ++j) qk[j] += a * row[j];
    }
  }
}

PSGD_CLONES void reconstruct(const float* p, const float* q, uint64_t rows, uint64_t cols, uint32_t r, float* out) {
  for (uint64_t i = 0; i < rows; ++i) {
    float* __restrict row = out + i * cols;
    const float a0 = p[i];
    const float* __restrict q0 = q;
    for (uint64_t j = 0; j < cols; ++j) row[j] = a0 * q0[j];
    for (uint32_t k = 1; k < r; ++k) {
      const float a = p[k * rows + i];
      const float* __restrict qk = q + k * cols;
      for (uint64_t j = 0; j < cols; ++j) row[j] += a * qk[j];
    }
  }
}

PSGD_CLONES void subtract_product(const float* m, const float* p, const float* q, uint64_t rows, uint64_t cols,
                                  uint32_t r, float* res) {
  for (uint64_t i = 0; i < rows; ++i) {
    float* __restrict row = res + i * cols;
    const float* __restrict mrow = m + i * cols;
    const float a0 = p[i];
    for (uint64_t j = 0; j < cols; ++j) row[j] = a0 * q[j];
    for (uint32_t k = 1; k < r; ++k) {
      const float a = p[k * rows + i];
      const float* __restrict qk = q + k * cols;
      for (uint64_t j = 0; j < cols; ++j) row[j] += a * qk[j];
    }
    for (uint64_t j = 0; j < cols; ++j) row[j] = mrow[j] - row[j];
  }
}

PSGD_CLONES void orthogonalize(float* p, uint64_t rows, uint32_t r) {
  for (uint32_t k = 0; k < r; ++k) {
    float* col = p + k * rows;
    const float before = std::sqrt(dot(col, col, rows));
    // Against every earlier column, twice: one pass leaves a rounding error along them that normalising a
    // small remainder would blow up (P of a gradient of rank below r); the second removes it.
    for (int pass = 0; pass < 2; ++pass)
      for (uint32_t l = 0; l < k; ++l) {
        const float* other = p + l * rows;
        const float proj = dot(other, col, rows);
        for (uint64_t i = 0; i < rows; ++i) col[i] -= proj * other[i];
      }
    const float norm = std::sqrt(dot(col, col, rows));
    if (norm > 1e-4f * before && norm > 0) {
      const float inv = 1.0f / norm;
      for (uint64_t i = 0; i < rows; ++i) col[i] *= inv;
    } else {
      // Nothing of this column is outside the earlier ones (or it was zero): it adds no direction, and a
      // zero column keeps P Pᵀ a projection.
      std::memset(col, 0, sizeof(float) * rows);
    }
  }
}

}  // namespace psgd
