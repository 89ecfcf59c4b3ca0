// The powersgd kernels (plugins/powersgd/kernels.hpp) white-box: each product against a plain loop written
// from the summation order kernels.hpp defines (which cuda.cu follows too), bit for bit, and the threaded
// products against the single-thread ones, bit for bit, for shapes with and without the vectors' tails.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "kernels.hpp"
#include "pool.hpp"

namespace {

struct Shape {
  uint64_t rows, cols;
  uint32_t r;
};

// Shapes with every tail (rows not a multiple of 4, cols of 8 or 32) and ones large enough to be threaded.
const Shape kShapes[] = {{1, 1, 1}, {7, 5, 2}, {37, 53, 3}, {64, 96, 4}, {300, 701, 8}, {513, 2049, 1}, {129, 1000, 16}};

std::vector<float> normal(uint64_t n, uint32_t seed, float scale = 1.0f) {
  std::mt19937 g(seed);
  std::normal_distribution<float> d(0.0f, scale);
  std::vector<float> v(n);
  for (float& x : v) x = d(g);
  return v;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), 4 * a.size()) == 0;
}

// The orders of kernels.hpp, one element at a time.
float ref_dot(const float* a, uint64_t sa, const float* b, uint64_t sb, uint64_t n) {
  float lane[32] = {};
  for (uint64_t i = 0; i < n; ++i) lane[i % 32] = lane[i % 32] + a[i * sa] * b[i * sb];
  for (int w = 16; w >= 1; w /= 2)
    for (int l = 0; l < w; ++l) lane[l] = lane[l] + lane[l + w];
  return lane[0];
}

std::vector<float> ref_multiply(const std::vector<float>& m, const Shape& s, const std::vector<float>& q) {
  std::vector<float> p(s.rows * s.r);
  for (uint64_t i = 0; i < s.rows; ++i)
    for (uint32_t k = 0; k < s.r; ++k) p[k * s.rows + i] = ref_dot(&m[i * s.cols], 1, &q[k * s.cols], 1, s.cols);
  return p;
}

std::vector<float> ref_multiply_transposed(const std::vector<float>& m, const Shape& s, const std::vector<float>& p) {
  std::vector<float> q(s.cols * s.r);
  for (uint64_t j = 0; j < s.cols; ++j)
    for (uint32_t k = 0; k < s.r; ++k) {
      float sum = 0.0f;
      for (uint64_t i = 0; i < s.rows; ++i) sum = sum + p[k * s.rows + i] * m[i * s.cols + j];
      q[k * s.cols + j] = sum;
    }
  return q;
}

std::vector<float> ref_product(const std::vector<float>* m, const Shape& s, const std::vector<float>& p,
                               const std::vector<float>& q) {
  std::vector<float> out(s.rows * s.cols);
  for (uint64_t i = 0; i < s.rows; ++i)
    for (uint64_t j = 0; j < s.cols; ++j) {
      float sum = p[i] * q[j];
      for (uint32_t k = 1; k < s.r; ++k) sum = sum + p[k * s.rows + i] * q[k * s.cols + j];
      out[i * s.cols + j] = m ? (*m)[i * s.cols + j] - sum : sum;
    }
  return out;
}

void ref_orthogonalize(std::vector<float>& p, uint64_t rows, uint32_t r) {
  for (uint32_t k = 0; k < r; ++k) {
    float* c = &p[k * rows];
    const float before = std::sqrt(ref_dot(c, 1, c, 1, rows));
    for (int pass = 0; pass < 2; ++pass)
      for (uint32_t l = 0; l < k; ++l) {
        const float proj = ref_dot(&p[l * rows], 1, c, 1, rows);
        for (uint64_t i = 0; i < rows; ++i) c[i] = c[i] - proj * p[l * rows + i];
      }
    const float norm = std::sqrt(ref_dot(c, 1, c, 1, rows));
    if (norm > 1e-4f * before && norm > 0) {
      const float inv = 1.0f / norm;
      for (uint64_t i = 0; i < rows; ++i) c[i] = c[i] * inv;
    } else {
      for (uint64_t i = 0; i < rows; ++i) c[i] = 0.0f;
    }
  }
}

TEST(PowerSgdKernels, FollowTheDocumentedSummationOrderBitForBit) {
  for (const Shape& s : kShapes) {
    SCOPED_TRACE(std::to_string(s.rows) + " x " + std::to_string(s.cols) + " rank " + std::to_string(s.r));
    const std::vector<float> m = normal(s.rows * s.cols, 1), q = normal(s.cols * s.r, 2), pin = normal(s.rows * s.r, 3);
    std::vector<float> p(s.rows * s.r), qt(s.cols * s.r), out(s.rows * s.cols), res(s.rows * s.cols);
    psgd::multiply(m.data(), s.rows, s.cols, q.data(), s.r, p.data());
    EXPECT_TRUE(same_bits(p, ref_multiply(m, s, q)));
    // sum_multiply: M = X + R row by row, then the same P.
    const std::vector<float> r7 = normal(s.rows * s.cols, 7, 0.1f);
    std::vector<float> summed(m.size()), ps(p.size()), added(m.size());
    for (size_t i = 0; i < m.size(); ++i) added[i] = m[i] + r7[i];
    psgd::sum_multiply(m.data(), r7.data(), summed.data(), s.rows, s.cols, q.data(), s.r, ps.data());
    EXPECT_TRUE(same_bits(summed, added));
    EXPECT_TRUE(same_bits(ps, ref_multiply(added, s, q)));
    psgd::multiply_transposed(m.data(), s.rows, s.cols, pin.data(), s.r, qt.data());
    EXPECT_TRUE(same_bits(qt, ref_multiply_transposed(m, s, pin)));
    psgd::reconstruct(pin.data(), q.data(), s.rows, s.cols, s.r, out.data());
    EXPECT_TRUE(same_bits(out, ref_product(nullptr, s, pin, q)));
    psgd::subtract_product(m.data(), pin.data(), q.data(), s.rows, s.cols, s.r, res.data());
    EXPECT_TRUE(same_bits(res, ref_product(&m, s, pin, q)));
    std::vector<float> o = pin, ref = pin;
    psgd::orthogonalize(o.data(), s.rows, s.r);
    ref_orthogonalize(ref, s.rows, s.r);
    EXPECT_TRUE(same_bits(o, ref));
    EXPECT_EQ(psgd::dot(m.data(), m.data() + 1, s.rows * s.cols - 1),
              ref_dot(m.data(), 1, m.data() + 1, 1, s.rows * s.cols - 1));
  }
}

TEST(PowerSgdKernels, ThreadedProductsEqualTheSingleThreadOnesBitForBit) {
  psgd::Pool two(2), three(3);
  for (const Shape& s : kShapes) {
    SCOPED_TRACE(std::to_string(s.rows) + " x " + std::to_string(s.cols) + " rank " + std::to_string(s.r));
    const std::vector<float> m = normal(s.rows * s.cols, 4), q = normal(s.cols * s.r, 5), p = normal(s.rows * s.r, 6);
    const auto run = [&](psgd::Pool* pool) {
      std::vector<float> pp(s.rows * s.r), qq(s.cols * s.r), out(s.rows * s.cols), res(s.rows * s.cols);
      psgd::multiply(m.data(), s.rows, s.cols, q.data(), s.r, pp.data(), pool);
      std::vector<float> summed(m.size()), ps(pp.size());
      psgd::sum_multiply(m.data(), m.data(), summed.data(), s.rows, s.cols, q.data(), s.r, ps.data(), pool);
      psgd::multiply_transposed(m.data(), s.rows, s.cols, p.data(), s.r, qq.data(), pool);
      psgd::reconstruct(p.data(), q.data(), s.rows, s.cols, s.r, out.data(), pool);
      psgd::subtract_product(m.data(), p.data(), q.data(), s.rows, s.cols, s.r, res.data(), pool);
      return std::vector<std::vector<float>>{pp, qq, out, res, summed, ps};
    };
    const auto one = run(nullptr);
    for (psgd::Pool* pool : {&two, &three}) {
      const auto threaded = run(pool);
      for (size_t i = 0; i < one.size(); ++i) EXPECT_TRUE(same_bits(one[i], threaded[i])) << "product " << i;
    }
  }
}

// The pool runs every part exactly once, whatever the count of parts against threads.
TEST(PowerSgdKernels, PoolRunsEveryPartOnce) {
  psgd::Pool pool(3);
  for (unsigned parts : {1u, 2u, 3u, 7u, 64u}) {
    std::vector<int> hits(parts, 0);
    for (int rep = 0; rep < 20; ++rep) pool.run(parts, [&](unsigned i) { ++hits[i]; });
    for (unsigned i = 0; i < parts; ++i) EXPECT_EQ(hits[i], 20) << "part " << i << " of " << parts;
  }
}

// threads = 0: the cores shared by the ranks of the host, as the launcher counts them (GW_LOCAL_SIZE, else
// LOCAL_WORLD_SIZE), at least one thread each: ranks that outnumber the cores do not start a second thread
// that would wait for a core the other ranks hold.
TEST(PowerSgdKernels, PoolThreadsAreThisRanksShareOfTheCores) {
  const unsigned cores = psgd::Pool::available(64);
  ASSERT_GE(cores, 1u);
  EXPECT_EQ(psgd::Pool::available(64, 1), cores);
  EXPECT_EQ(psgd::Pool::available(64, 2 * cores), 1u);
  EXPECT_EQ(psgd::Pool::available(64, cores), 1u);
  EXPECT_EQ(psgd::Pool::available(1, 1), 1u);
  const char* saved_gw = std::getenv("GW_LOCAL_SIZE");
  const char* saved_torch = std::getenv("LOCAL_WORLD_SIZE");
  const std::string gw = saved_gw ? saved_gw : "", torch = saved_torch ? saved_torch : "";
  unsetenv("GW_LOCAL_SIZE");
  unsetenv("LOCAL_WORLD_SIZE");
  EXPECT_EQ(psgd::Pool::ranks_on_host(), 1u);
  setenv("LOCAL_WORLD_SIZE", "3", 1);
  EXPECT_EQ(psgd::Pool::ranks_on_host(), 3u);
  setenv("GW_LOCAL_SIZE", "4", 1);
  EXPECT_EQ(psgd::Pool::ranks_on_host(), 4u);  // gradwire run's count first
  setenv("GW_LOCAL_SIZE", "four", 1);
  EXPECT_EQ(psgd::Pool::ranks_on_host(), 3u);  // not a count: the next one
  unsetenv("GW_LOCAL_SIZE");
  unsetenv("LOCAL_WORLD_SIZE");
  if (saved_gw) setenv("GW_LOCAL_SIZE", gw.c_str(), 1);
  if (saved_torch) setenv("LOCAL_WORLD_SIZE", torch.c_str(), 1);
}

}  // namespace
