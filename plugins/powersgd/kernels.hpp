// The PowerSGD kernels on host memory: a gradient M (rows x cols, row-major) against thin factors kept
// column by column (P: r columns of rows, Q: r columns of cols). Each pass streams M once, row by row, so
// M is read from memory once per product whatever the rank. Deterministic: the same inputs give the same
// bits (fixed summation order), which the bit-identical allreduce relies on.
#pragma once

#include <cstdint>

namespace psgd {

// P[:, k] = M Q[:, k] for k < r.
void multiply(const float* m, uint64_t rows, uint64_t cols, const float* q, uint32_t r, float* p);
// Q[:, k] = M^T P[:, k] for k < r.
void multiply_transposed(const float* m, uint64_t rows, uint64_t cols, const float* p, uint32_t r, float* q);
// out = P Q^T (rows x cols, row-major). out may be m of the other calls.
void reconstruct(const float* p, const float* q, uint64_t rows, uint64_t cols, uint32_t r, float* out);
// res = M - P Q^T (rows x cols, row-major), row by row: each row of res is built and subtracted from M's
// while it is in cache.
void subtract_product(const float* m, const float* p, const float* q, uint64_t rows, uint64_t cols, uint32_t r,
                      float* res);
// Gram-Schmidt on the r columns of P (each `rows` long), in order, each column projected off the earlier
// ones twice, then normalised; a column with nothing left outside the earlier ones (P of rank below r)
// becomes zero, so the result is always orthonormal columns and zero columns.
void orthogonalize(float* p, uint64_t rows, uint32_t r);

}  // namespace psgd
