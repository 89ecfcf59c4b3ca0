#include "kernels.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "pool.hpp"

namespace psgd {
namespace {

// The products are compiled for AVX2 too and picked when the CPU has it. The bits do not change: the
// vectors below are lanes of the sums kernels.hpp defines, not a reassociation, and nothing is contracted
// into an FMA (-ffp-contract=off), so ranks on CPUs with and without AVX2 agree.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define PSGD_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define PSGD_CLONES
#endif
#define PSGD_INLINE inline __attribute__((always_inline))

typedef float v8 __attribute__((vector_size(32)));
typedef float v8u __attribute__((vector_size(32), aligned(4), may_alias));  // an unaligned load or store

#define load8(p) (*reinterpret_cast<const v8u*>(p))
#define store8(p, v) (*reinterpret_cast<v8u*>(p) = (v))

// dot (kernels.hpp) of R rows a[t] against one b: the 32 lanes of each are four vectors of 8, so b is
// loaded once for the R rows and the R x 4 sums are independent chains.
template <int R>
PSGD_INLINE void dots(const float* const* a, const float* b, uint64_t n, float* out) {
  v8 s[R][4];
  for (int t = 0; t < R; ++t)
    for (int v = 0; v < 4; ++v) s[t][v] = v8{};
  uint64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    const v8 b0 = load8(b + i), b1 = load8(b + i + 8), b2 = load8(b + i + 16), b3 = load8(b + i + 24);
    for (int t = 0; t < R; ++t) {
      s[t][0] = s[t][0] + load8(a[t] + i) * b0;
      s[t][1] = s[t][1] + load8(a[t] + i + 8) * b1;
      s[t][2] = s[t][2] + load8(a[t] + i + 16) * b2;
      s[t][3] = s[t][3] + load8(a[t] + i + 24) * b3;
    }
  }
  for (int t = 0; t < R; ++t) {
    float lane[32];
    for (int v = 0; v < 4; ++v) store8(lane + 8 * v, s[t][v]);
    for (uint64_t j = i; j < n; ++j) lane[j - i] = lane[j - i] + a[t][j] * b[j];
    for (int w = 16; w >= 1; w /= 2)
      for (int l = 0; l < w; ++l) lane[l] = lane[l] + lane[l + w];
    out[t] = lane[0];
  }
}

// Rows [i0, i1) of P = M Q, four rows at a time, in blocks of columns: a block of the four rows stays in the
// first-level cache while the r columns of Q stream past it, and each row's 32 lane sums per column of Q
// wait in `acc` between blocks (the lanes' order is the columns' order, blocks or not).
constexpr uint64_t kDotBlock = 1024;

template <int R>
PSGD_INLINE void multiply_block(const float* const* a, const float* q, uint64_t cols, uint32_t r, uint64_t j0,
                                uint64_t j1, float* acc) {
  for (uint32_t k = 0; k < r; ++k) {
    const float* b = q + k * cols;
    v8 s[R][4];
    for (int t = 0; t < R; ++t)
      for (int v = 0; v < 4; ++v) s[t][v] = load8(acc + (t * r + k) * 32 + 8 * v);
    for (uint64_t i = j0; i < j1; i += 32) {
      const v8 b0 = load8(b + i), b1 = load8(b + i + 8), b2 = load8(b + i + 16), b3 = load8(b + i + 24);
      for (int t = 0; t < R; ++t) {
        s[t][0] = s[t][0] + load8(a[t] + i) * b0;
        s[t][1] = s[t][1] + load8(a[t] + i + 8) * b1;
        s[t][2] = s[t][2] + load8(a[t] + i + 16) * b2;
        s[t][3] = s[t][3] + load8(a[t] + i + 24) * b3;
      }
    }
    for (int t = 0; t < R; ++t)
      for (int v = 0; v < 4; ++v) store8(acc + (t * r + k) * 32 + 8 * v, s[t][v]);
  }
}

template <int R>
PSGD_INLINE void multiply_group(const float* m, uint64_t rows, uint64_t cols, const float* q, uint32_t r, float* p,
                                uint64_t i, float* acc) {
  const float* a[R];
  for (int t = 0; t < R; ++t) a[t] = m + (i + t) * cols;
  std::memset(acc, 0, sizeof(float) * R * r * 32);
  const uint64_t whole = cols / 32 * 32;
  for (uint64_t j0 = 0; j0 < whole; j0 += kDotBlock) multiply_block<R>(a, q, cols, r, j0, std::min(whole, j0 + kDotBlock), acc);
  for (int t = 0; t < R; ++t)
    for (uint32_t k = 0; k < r; ++k) {
      float* lane = acc + (t * r + k) * 32;
      const float* b = q + k * cols;
      for (uint64_t j = whole; j < cols; ++j) lane[j - whole] = lane[j - whole] + a[t][j] * b[j];
      for (int w = 16; w >= 1; w /= 2)
        for (int l = 0; l < w; ++l) lane[l] = lane[l] + lane[l + w];
      p[k * rows + i + t] = lane[0];
    }
}

// x given: rows [i, i + n) of m = x + res (res NULL: x) first, just before their dot products read them.
PSGD_INLINE void sum_rows(const float* x, const float* res, float* m, uint64_t cols, uint64_t i, uint64_t n) {
  if (!x) return;
  const uint64_t at = i * cols, len = n * cols;
  if (!res) {
    if (m != x) std::memcpy(m + at, x + at, sizeof(float) * len);
    return;
  }
  const float* __restrict xa = x + at;
  const float* __restrict ra = res + at;
  float* __restrict ma = m + at;
  for (uint64_t j = 0; j < len; ++j) ma[j] = xa[j] + ra[j];
}

PSGD_CLONES void multiply_rows(const float* x, const float* res, float* m, uint64_t rows, uint64_t cols,
                               const float* q, uint32_t r, float* p, uint64_t i0, uint64_t i1) {
  std::vector<float> acc(4 * size_t(r) * 32);
  uint64_t i = i0;
  for (; i + 4 <= i1; i += 4) {
    sum_rows(x, res, m, cols, i, 4);
    multiply_group<4>(m, rows, cols, q, r, p, i, acc.data());
  }
  for (; i < i1; ++i) {
    sum_rows(x, res, m, cols, i, 1);
    multiply_group<1>(m, rows, cols, q, r, p, i, acc.data());
  }
}

// Columns [j0, j1) of Q = M^T P, summed in a copy of them laid out strip by strip (the r columns' pieces of
// one strip of columns next to each other, in the first-level cache; Q's own columns are cols apart and would
// fall on the same cache sets), while blocks of rows of M are added in, four rows at a time (each sum in the
// rows' order).
constexpr uint64_t kStripFloats = 4096;  // r x strip floats (16 KiB)
constexpr uint64_t kRowBlock = 32;

PSGD_CLONES void multiply_transposed_cols(const float* m, uint64_t rows, uint64_t cols, const float* p, uint32_t r,
                                          float* q, uint64_t j0, uint64_t j1) {
  const uint64_t strip = std::max<uint64_t>(64, kStripFloats / r / 8 * 8);
  const uint64_t width = j1 - j0;
  std::vector<float> acc(width * r, 0.0f);  // strip s0: acc[(s0 - j0) * r + k * (its width) + j - s0]
  for (uint64_t b0 = 0; b0 < rows; b0 += kRowBlock) {
    const uint64_t b1 = std::min(rows, b0 + kRowBlock);
    for (uint64_t s0 = j0; s0 < j1; s0 += strip) {
      const uint64_t s1 = std::min(j1, s0 + strip), w = s1 - s0;
      float* const base = acc.data() + (s0 - j0) * r;
      uint64_t i = b0;
      for (; i + 4 <= b1; i += 4) {
        const float* __restrict m0 = m + i * cols + s0;
        const float* __restrict m1 = m0 + cols;
        const float* __restrict m2 = m1 + cols;
        const float* __restrict m3 = m2 + cols;
        for (uint32_t k = 0; k < r; ++k) {
          const float* pk = p + k * rows + i;
          const float a0 = pk[0], a1 = pk[1], a2 = pk[2], a3 = pk[3];
          float* __restrict qk = base + k * w;
          uint64_t j = 0;
          for (; j + 8 <= w; j += 8)
            store8(qk + j,
                   (((load8(qk + j) + load8(m0 + j) * a0) + load8(m1 + j) * a1) + load8(m2 + j) * a2) + load8(m3 + j) * a3);
          for (; j < w; ++j) qk[j] = (((qk[j] + a0 * m0[j]) + a1 * m1[j]) + a2 * m2[j]) + a3 * m3[j];
        }
      }
      for (; i < b1; ++i) {
        const float* __restrict m0 = m + i * cols + s0;
        for (uint32_t k = 0; k < r; ++k) {
          const float a0 = p[k * rows + i];
          float* __restrict qk = base + k * w;
          for (uint64_t j = 0; j < w; ++j) qk[j] = qk[j] + a0 * m0[j];
        }
      }
    }
  }
  for (uint64_t s0 = j0; s0 < j1; s0 += strip) {
    const uint64_t w = std::min(j1, s0 + strip) - s0;
    for (uint32_t k = 0; k < r; ++k)
      std::memcpy(q + k * cols + s0, acc.data() + (s0 - j0) * r + k * w, sizeof(float) * w);
  }
}

// Q laid out for product_rows: for each 8 columns, their r pieces of 8 next to each other (Q's own columns
// are cols apart and would fall on the same cache sets); the last piece padded with zeros.
std::vector<float> blocked(const float* q, uint64_t cols, uint32_t r) {
  const uint64_t chunks = (cols + 7) / 8;
  std::vector<float> b(chunks * r * 8, 0.0f);
  for (uint32_t k = 0; k < r; ++k)
    for (uint64_t j = 0; j < cols; ++j) b[(j / 8) * r * 8 + k * 8 + j % 8] = q[k * cols + j];
  return b;
}

// Rows [i, i + R) of P Q^T (qb: Q blocked), each piece of Q read once for the R rows, written to out, or
// (m given) subtracted from m's rows into out.
template <int R>
PSGD_INLINE void product_rows(const float* m, const float* p, const float* qb, uint64_t rows, uint64_t cols,
                              uint32_t r, float* out, uint64_t i, float* a) {
  for (int t = 0; t < R; ++t)
    for (uint32_t k = 0; k < r; ++k) a[t * r + k] = p[k * rows + i + t];
  uint64_t j = 0;
  for (; j + 8 <= cols; j += 8) {
    const float* qj = qb + j * r;
    v8 s[R];
    const v8 q0 = load8(qj);
    for (int t = 0; t < R; ++t) s[t] = q0 * a[t * r];
    for (uint32_t k = 1; k < r; ++k) {
      const v8 qk = load8(qj + 8 * k);
      for (int t = 0; t < R; ++t) s[t] = s[t] + qk * a[t * r + k];
    }
    for (int t = 0; t < R; ++t) {
      float* o = out + (i + t) * cols + j;
      if (m) store8(o, load8(m + (i + t) * cols + j) - s[t]);
      else store8(o, s[t]);
    }
  }
  for (; j < cols; ++j) {
    const float* qj = qb + (j / 8) * r * 8 + j % 8;
    for (int t = 0; t < R; ++t) {
      float s = a[t * r] * qj[0];
      for (uint32_t k = 1; k < r; ++k) s = s + a[t * r + k] * qj[8 * k];
      out[(i + t) * cols + j] = m ? m[(i + t) * cols + j] - s : s;
    }
  }
}

PSGD_CLONES void product(const float* m, const float* p, const float* qb, uint64_t rows, uint64_t cols, uint32_t r,
                         float* out, uint64_t i0, uint64_t i1) {
  std::vector<float> a(4 * size_t(r));
  uint64_t i = i0;
  for (; i + 4 <= i1; i += 4) product_rows<4>(m, p, qb, rows, cols, r, out, i, a.data());
  for (; i < i1; ++i) product_rows<1>(m, p, qb, rows, cols, r, out, i, a.data());
}

// Below this many multiply-adds a product runs on the calling thread alone.
constexpr uint64_t kThreadedWork = uint64_t{1} << 20;

// Splits [0, n) into pieces of a multiple of `grain` (the last takes the rest) over the pool's threads, a
// few pieces per thread so a thread slowed by others on its core does not hold the rest up.
template <class F>
void split(Pool* pool, uint64_t n, uint64_t grain, uint64_t work, F&& f) {
  if (pool == nullptr || pool->threads() < 2 || work < kThreadedWork || n <= grain) {
    f(uint64_t{0}, n);
    return;
  }
  const uint64_t pieces = std::min<uint64_t>(4 * pool->threads(), (n + grain - 1) / grain);
  const uint64_t size = ((n + pieces - 1) / pieces + grain - 1) / grain * grain;
  const unsigned parts = unsigned((n + size - 1) / size);
  pool->run(parts, [&](unsigned i) { f(i * size, std::min(n, (i + 1) * size)); });
}

}  // namespace

PSGD_CLONES float dot(const float* a, const float* b, uint64_t n) {
  float o;
  dots<1>(&a, b, n, &o);
  return o;
}

void multiply(const float* m, uint64_t rows, uint64_t cols, const float* q, uint32_t r, float* p, Pool* pool) {
  split(pool, rows, 4, rows * cols * r,
        [&](uint64_t i0, uint64_t i1) { multiply_rows(nullptr, nullptr, const_cast<float*>(m), rows, cols, q, r, p, i0, i1); });
}

void sum_multiply(const float* x, const float* res, float* m, uint64_t rows, uint64_t cols, const float* q, uint32_t r,
                  float* p, Pool* pool) {
  split(pool, rows, 4, rows * cols * r,
        [&](uint64_t i0, uint64_t i1) { multiply_rows(x, res, m, rows, cols, q, r, p, i0, i1); });
}

void multiply_transposed(const float* m, uint64_t rows, uint64_t cols, const float* p, uint32_t r, float* q,
                         Pool* pool) {
  split(pool, cols, 64, rows * cols * r,
        [&](uint64_t j0, uint64_t j1) { multiply_transposed_cols(m, rows, cols, p, r, q, j0, j1); });
}

void reconstruct(const float* p, const float* q, uint64_t rows, uint64_t cols, uint32_t r, float* out, Pool* pool) {
  const std::vector<float> qb = blocked(q, cols, r);
  split(pool, rows, 4, rows * cols * r,
        [&](uint64_t i0, uint64_t i1) { product(nullptr, p, qb.data(), rows, cols, r, out, i0, i1); });
}

void subtract_product(const float* m, const float* p, const float* q, uint64_t rows, uint64_t cols, uint32_t r,
                      float* res, Pool* pool) {
  const std::vector<float> qb = blocked(q, cols, r);
  split(pool, rows, 4, rows * cols * r,
        [&](uint64_t i0, uint64_t i1) { product(m, p, qb.data(), rows, cols, r, res, i0, i1); });
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
        for (uint64_t i = 0; i < rows; ++i) col[i] = col[i] - proj * other[i];
      }
    const float norm = std::sqrt(dot(col, col, rows));
    if (norm > 1e-4f * before && norm > 0) {
      const float inv = 1.0f / norm;
      for (uint64_t i = 0; i < rows; ++i) col[i] = col[i] * inv;
    } else {
      // Nothing of this column is outside the earlier ones (or it was zero): it adds no direction, and a
      // zero column keeps P Pᵀ a projection.
      std::memset(col, 0, sizeof(float) * rows);
    }
  }
}

}  // namespace psgd
