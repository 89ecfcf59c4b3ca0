// The top-k selection procedure (plugins/topk/topk_select.hpp) on the CPU backend, against exact
// selection by std::nth_element.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "gw_codec/portable.h"
#include "topk_cpu.hpp"
#include "topk_select.hpp"

namespace {

using gwtopk::CpuBackend;
using gwtopk::Selection;

std::vector<float> normal_data(size_t n, uint32_t seed) {
  std::mt19937 g(seed);
  std::normal_distribution<float> d;
  std::vector<float> x(n);
  for (auto& v : x) v = d(g);
  return x;
}

uint32_t key_of(float v) { return gwc::f32_bits(v) & 0x7fffffffu; }

struct Selected {
  std::vector<uint32_t> index;
  uint64_t k = 0;
  gwtopk::Plan plan;
};

Selected run(const std::vector<float>& x, uint64_t k, Selection sel) {
  CpuBackend be(x.data(), GW_DTYPE_F32, x.size());
  Selected s;
  s.k = k;
  s.plan = gwtopk::make_plan(x.size(), k, sel, 0x80000000u);
  const uint64_t m = gwtopk::select(be, s.plan);
  EXPECT_EQ(m, be.count());
  s.index.assign(be.indices(), be.indices() + m);
  for (uint64_t i = 0; i < m; ++i) EXPECT_EQ(be.bits()[i], gwc::f32_bits(x[be.indices()[i]]));
  return s;
}

// The exact top-k key threshold: the k-th largest key.
uint32_t kth_key(const std::vector<float>& x, uint64_t k) {
  std::vector<uint32_t> keys(x.size());
  for (size_t i = 0; i < x.size(); ++i) keys[i] = key_of(x[i]);
  std::nth_element(keys.begin(), keys.begin() + static_cast<long>(k - 1), keys.end(), std::greater<>());
  return keys[k - 1];
}

void expect_valid(const std::vector<float>& x, const Selected& s) {
  ASSERT_GE(s.index.size(), s.plan.lower);
  ASSERT_LE(s.index.size(), s.plan.upper);
  for (size_t i = 0; i < s.index.size(); ++i) {
    ASSERT_LT(s.index[i], x.size());
    if (i) {
      ASSERT_GT(s.index[i], s.index[i - 1]) << "indices must be strictly increasing";
    }
  }
  // A threshold set: nothing left out is larger than anything kept.
  std::vector<char> kept(x.size(), 0);
  uint32_t min_kept = 0xffffffffu;
  for (uint32_t i : s.index) {
    kept[i] = 1;
    min_kept = std::min(min_kept, key_of(x[i]));
  }
  for (size_t i = 0; i < x.size(); ++i) {
    if (!kept[i]) {
      ASSERT_LE(key_of(x[i]), min_kept) << "element " << i << " is larger than a kept one";
    }
  }
}

double recall(const std::vector<float>& x, const Selected& s) {
  const uint32_t t = kth_key(x, s.k);
  uint64_t above = 0, hit = 0;
  for (float v : x) above += key_of(v) > t;
  for (uint32_t i : s.index) hit += key_of(x[i]) >= t;
  // Elements tied at the threshold count as correct up to k.
  return static_cast<double>(std::min<uint64_t>(hit, s.k)) / static_cast<double>(std::max<uint64_t>(s.k, above));
}

TEST(TopkSelect, ApproxRecallAgainstExactOverSizesAndRatios) {
  for (size_t n : {size_t{1}, size_t{2}, size_t{255}, size_t{257}, size_t{1000001}}) {
    const auto x = normal_data(n, static_cast<uint32_t>(n));
    for (double ratio : {0.001, 0.01, 0.1, 0.5, 1.0}) {
      const uint64_t k = std::clamp<uint64_t>(static_cast<uint64_t>(std::llround(ratio * n)), 1, n);
      const auto s = run(x, k, Selection::approx);
      SCOPED_TRACE("n=" + std::to_string(n) + " ratio=" + std::to_string(ratio));
      expect_valid(x, s);
      EXPECT_GE(recall(x, s), 0.99);
    }
  }
}

TEST(TopkSelect, ExactEqualsNthElementSet) {
  for (size_t n : {size_t{1}, size_t{2}, size_t{255}, size_t{257}, size_t{1000001}}) {
    // Distinct magnitudes, so the exact set is unique.
    std::vector<float> x(n);
    for (size_t i = 0; i < n; ++i) x[i] = (i % 2 ? -1.0f : 1.0f) * static_cast<float>(i + 1);
    std::shuffle(x.begin(), x.end(), std::mt19937(7));
    for (double ratio : {0.001, 0.01, 0.3}) {
      const uint64_t k = std::clamp<uint64_t>(static_cast<uint64_t>(std::llround(ratio * n)), 1, n);
      const auto s = run(x, k, Selection::exact);
      std::vector<uint32_t> order(n);
      for (size_t i = 0; i < n; ++i) order[i] = static_cast<uint32_t>(i);
      std::nth_element(order.begin(), order.begin() + static_cast<long>(k - 1), order.end(),
                       [&](uint32_t a, uint32_t b) { return std::fabs(x[a]) > std::fabs(x[b]); });
      std::vector<uint32_t> expected(order.begin(), order.begin() + static_cast<long>(k));
      std::sort(expected.begin(), expected.end());
      EXPECT_EQ(s.index, expected) << "n=" << n << " k=" << k;
    }
  }
}

// The CPU backend finds the k-th candidate key by nth_element; the CUDA backend by the two-level
// histogram of the shared driver. Both routes must select the same elements (same bytes on the wire).
class HistogramOnly final : public gwtopk::Backend {
 public:
  explicit HistogramOnly(CpuBackend& inner) : inner_(inner) {}
  void gather_keys(const std::vector<uint32_t>& p, std::vector<uint32_t>& k) override { inner_.gather_keys(p, k); }
  uint64_t compact_at_least(uint32_t t, uint64_t c) override { return inner_.compact_at_least(t, c); }
  uint64_t compact_tie(uint32_t t, uint64_t e) override { return inner_.compact_tie(t, e); }
  void candidate_histogram(int level, uint32_t high, std::vector<uint64_t>& bins) override {
    inner_.candidate_histogram(level, high, bins);
    ++histograms;
  }
  uint64_t filter_candidates(uint32_t t, uint64_t e) override { return inner_.filter_candidates(t, e); }
  int histograms = 0;

 private:
  CpuBackend& inner_;
};

TEST(TopkSelect, HistogramRouteSelectsWhatTheShortcutSelects) {
  int refined = 0;
  for (size_t n : {size_t{5000}, size_t{262144}, size_t{1000003}}) {
    auto x = normal_data(n, 11);
    for (size_t i = 0; i < n; i += 97) x[i] = x[i / 2];  // ties
    for (double ratio : {0.001, 0.01, 0.1}) {
      for (Selection sel : {Selection::approx, Selection::exact}) {
        const uint64_t k = std::max<uint64_t>(1, static_cast<uint64_t>(ratio * static_cast<double>(n)));
        const auto plan = gwtopk::make_plan(n, k, sel, 0x80000000u);
        CpuBackend fast(x.data(), GW_DTYPE_F32, n);
        const uint64_t a = gwtopk::select(fast, plan);
        CpuBackend slow_inner(x.data(), GW_DTYPE_F32, n);
        HistogramOnly slow(slow_inner);
        const uint64_t b = gwtopk::select(slow, plan);
        refined += slow.histograms > 0;
        ASSERT_EQ(a, b) << "n=" << n << " k=" << k;
        EXPECT_TRUE(std::equal(fast.indices(), fast.indices() + a, slow_inner.indices())) << "n=" << n << " k=" << k;
      }
    }
  }
  EXPECT_GT(refined, 0) << "no case went through the histograms; the comparison tested nothing";
}

TEST(TopkSelect, TiesAreBrokenByLowestIndex) {
  const std::vector<float> zeros(1000, 0.0f);
  const auto s = run(zeros, 10, Selection::exact);
  std::vector<uint32_t> first(10);
  for (uint32_t i = 0; i < 10; ++i) first[i] = i;
  EXPECT_EQ(s.index, first);

  // Half the elements equal 1, the rest 0: the first 250 ones.
  std::vector<float> halves(1000, 0.0f);
  for (size_t i = 0; i < 1000; i += 2) halves[i] = (i % 4 ? -1.0f : 1.0f);
  const auto h = run(halves, 250, Selection::approx);
  ASSERT_EQ(h.index.size(), 250u);
  for (uint32_t i = 0; i < 250; ++i) EXPECT_EQ(h.index[i], 2 * i);
}

TEST(TopkSelect, SparseInputWithFewerNonzerosThanK) {
  // 500 nonzeros among 10^6 elements, k = 1 %: every nonzero, then the first zeros.
  std::vector<float> x(1000000, 0.0f);
  std::mt19937 g(3);
  std::vector<uint32_t> nz;
  for (int i = 0; i < 500; ++i) {
    const uint32_t p = g() % x.size();
    x[p] = 1.0f + static_cast<float>(i);
  }
  for (Selection sel : {Selection::approx, Selection::exact}) {
    const auto s = run(x, 10000, sel);
    expect_valid(x, s);
    uint64_t nonzero = 0;
    for (uint32_t i : s.index) nonzero += x[i] != 0.0f;
    EXPECT_EQ(nonzero, static_cast<uint64_t>(std::count_if(x.begin(), x.end(), [](float v) { return v != 0; })));
  }
}

TEST(TopkSelect, NanAndInfinityRankAboveFiniteValues) {
  auto x = normal_data(10000, 5);
  x[17] = std::numeric_limits<float>::infinity();
  x[4000] = -std::numeric_limits<float>::infinity();
  x[9999] = std::numeric_limits<float>::quiet_NaN();
  const auto s = run(x, 3, Selection::exact);
  EXPECT_EQ(s.index, (std::vector<uint32_t>{17, 4000, 9999}));
}

TEST(TopkSelect, HalfPrecisionInputs) {
  for (gw_dtype dtype : {GW_DTYPE_F16, GW_DTYPE_BF16}) {
    const auto f = normal_data(100003, 11);
    std::vector<uint16_t> h(f.size());
    for (size_t i = 0; i < f.size(); ++i) h[i] = dtype == GW_DTYPE_F16 ? gwc::f32_to_f16(f[i]) : gwc::f32_to_bf16(f[i]);
    CpuBackend be(h.data(), dtype, h.size());
    const uint64_t k = 1000;
    const auto plan = gwtopk::make_plan(h.size(), k, Selection::exact, 0x8000u);
    ASSERT_EQ(gwtopk::select(be, plan), k);
    std::vector<uint16_t> keys(h.size());
    for (size_t i = 0; i < h.size(); ++i) keys[i] = h[i] & 0x7fffu;
    std::vector<uint16_t> sorted = keys;
    std::nth_element(sorted.begin(), sorted.begin() + (k - 1), sorted.end(), std::greater<>());
    const uint16_t t = sorted[k - 1];
    for (uint64_t i = 0; i < k; ++i) {
      EXPECT_GE(keys[be.indices()[i]], t);
      EXPECT_EQ(be.bits()[i], h[be.indices()[i]]);
    }
  }
}

TEST(TopkSelect, VectorPassMatchesScalarDefinition) {
  for (size_t n : {size_t{0}, size_t{1}, size_t{31}, size_t{33}, size_t{1000}, size_t{65537}}) {
    const auto x = normal_data(n, 13);
    for (uint32_t t : {0u, key_of(0.5f), key_of(2.0f), key_of(1e30f), 0x80000000u}) {
      std::vector<uint32_t> idx(n + 1), bits(n + 1);
      const uint64_t capacity = n / 2;
      const uint64_t c = gwtopk::compact_at_least_f32(x.data(), n, t, idx.data(), bits.data(), capacity);
      uint64_t expected = 0;
      for (size_t i = 0; i < n; ++i) {
        if (key_of(x[i]) < t) continue;
        if (expected < capacity) {
          ASSERT_EQ(idx[expected], i);
          ASSERT_EQ(bits[expected], gwc::f32_bits(x[i]));
        }
        ++expected;
      }
      EXPECT_EQ(c, expected) << "n=" << n << " t=" << t;
    }
  }
}

TEST(TopkSelect, PlanWindows) {
  const auto a = gwtopk::make_plan(1000, 100, Selection::approx, 0x80000000u);
  EXPECT_EQ(a.lower, 90u);
  EXPECT_EQ(a.upper, 110u);
  EXPECT_GE(a.capacity, a.upper);
  const auto e = gwtopk::make_plan(1000, 100, Selection::exact, 0x80000000u);
  EXPECT_EQ(e.lower, 100u);
  EXPECT_EQ(e.upper, 100u);
  const auto small = gwtopk::make_plan(10, 5, Selection::approx, 0x80000000u);
  EXPECT_EQ(small.lower, 5u);
  EXPECT_EQ(small.upper, 5u);
}

}  // namespace
