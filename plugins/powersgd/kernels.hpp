// The PowerSGD kernels on host memory: a gradient M (rows x cols, row-major) against thin factors kept
// column by column (P: r columns of rows, Q: r columns of cols). Each product streams M once, so M is read
// from memory once per product whatever the rank.
//
// Summation order. Every rank must compute the same bits (the allreduce of the factors is bit-identical
// only if every rank's local work is), whatever its CPU, thread count or device, so each value below is
// defined down to the order of its roundings; cuda.cu follows the same definitions. Every product and sum
// is one f32 operation rounded to nearest: nothing is fused into an FMA (-ffp-contract=off here,
// __fmul_rn/__fadd_rn in cuda.cu).
//   dot(a, b, n): 32 lane sums, lane l = (((0 + a[l]·b[l]) + a[l+32]·b[l+32]) + a[l+64]·b[l+64]) + … over
//     the indices i ≡ l (mod 32), i < n, in increasing order; then folded in halves: for w = 16, 8, 4, 2, 1,
//     s[l] = s[l] + s[l + w] for l < w; the result is s[0] (a warp's shuffle-down reduction).
//   multiply:            P[i, k] = dot(M row i, Q column k, cols).
//   multiply_transposed: Q[j, k] = ((0 + P[0, k]·M[0, j]) + P[1, k]·M[1, j]) + … in increasing row order.
//   reconstruct:         out[i, j] = ((P[i, 0]·Q[j, 0]) + P[i, 1]·Q[j, 1]) + … in increasing k.
//   subtract_product:    res[i, j] = M[i, j] − reconstruct's out[i, j].
//   orthogonalize:       column k in increasing order: before = sqrt(dot(c, c)); two passes, each over the
//     earlier columns o in increasing order: proj = dot(o, c), then c[i] = c[i] − proj·o[i]; then
//     norm = sqrt(dot(c, c)); if norm > 1e-4·before and norm > 0, c[i] = c[i]·(1 / norm), else c = 0.
//     (sqrt and 1 / norm correctly rounded.)
// The threaded kernels split their output over the threads (rows of P, out and res; columns of Q), never
// one output element's sum, so the pool changes no bit.
#pragma once

#include <cstdint>

namespace psgd {

class Pool;

// P[:, k] = M Q[:, k] for k < r.
void multiply(const float* m, uint64_t rows, uint64_t cols, const float* q, uint32_t r, float* p, Pool* pool = nullptr);
// M = X + R (R NULL: M = X; each sum one rounding), then P = M Q as multiply does: each row of M is summed
// just before its dot products read it, so M is not read back from memory.
void sum_multiply(const float* x, const float* res, float* m, uint64_t rows, uint64_t cols, const float* q, uint32_t r,
                  float* p, Pool* pool = nullptr);
// Q[:, k] = M^T P[:, k] for k < r.
void multiply_transposed(const float* m, uint64_t rows, uint64_t cols, const float* p, uint32_t r, float* q,
                         Pool* pool = nullptr);
// out = P Q^T (rows x cols, row-major). out may be m of the other calls.
void reconstruct(const float* p, const float* q, uint64_t rows, uint64_t cols, uint32_t r, float* out,
                 Pool* pool = nullptr);
// res = M - P Q^T (rows x cols, row-major), row by row: each row of res is built and subtracted from M's
// while it is in cache.
void subtract_product(const float* m, const float* p, const float* q, uint64_t rows, uint64_t cols, uint32_t r,
                      float* res, Pool* pool = nullptr);
// Gram-Schmidt on the r columns of P (each `rows` long), in order, each column projected off the earlier
// ones twice, then normalised; a column with nothing left outside the earlier ones (P of rank below r)
// becomes zero, so the result is always orthonormal columns and zero columns.
void orthogonalize(float* p, uint64_t rows, uint32_t r);
// dot as defined above (the tests' reference, and orthogonalize's).
float dot(const float* a, const float* b, uint64_t n);

}  // namespace psgd
