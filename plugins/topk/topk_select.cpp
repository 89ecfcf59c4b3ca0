#include "topk_select.hpp"

#include <algorithm>
#include <cmath>
#include <functional>

#include "gw_codec/philox.h"

namespace gwtopk {

Plan make_plan(uint64_t n, uint64_t k, Selection selection, uint32_t key_limit) {
  Plan p;
  p.n = n;
  p.k = k;
  p.key_limit = key_limit;
  if (selection == Selection::exact) {
    p.lower = p.upper = k;
  } else {
    p.lower = k - k / 10;
    p.upper = max_selected(n, k);
  }
  p.capacity = k >= n ? n : std::min<uint64_t>(n, 2 * k + 4096);
  return p;
}

const std::vector<uint32_t>& sample_positions(uint64_t n) {
  thread_local uint64_t cached_n = ~uint64_t{0};
  thread_local std::vector<uint32_t> pos;
  if (cached_n == n) return pos;
  const uint64_t s = sample_size(n);
  pos.resize(s);
  cached_n = n;
  if (s == n) {
    for (uint64_t i = 0; i < s; ++i) pos[i] = static_cast<uint32_t>(i);
    return pos;
  }
  const gwc::RandomStream stream{0, 0, gwc::kStreamTopkSample};
  for (uint64_t j = 0; j < s; ++j) {
    const uint64_t start = j * n / s;
    const uint64_t len = (j + 1) * n / s - start;
    pos[j] = static_cast<uint32_t>(start + ((static_cast<uint64_t>(stream.word(j)) * len) >> 32));
  }
  return pos;
}

namespace {

// Refines candidates holding c >= k elements to exactly k: the k-th largest key T, then every key
// > T and the first keys == T in index order.
uint64_t refine_to_k(Backend& backend, uint64_t k) {
  uint32_t key = 0;
  uint64_t larger = 0;
  if (backend.kth_largest_candidate(k, &key, &larger)) return backend.filter_candidates(key, k - larger);
  std::vector<uint64_t> bins;
  backend.candidate_histogram(0, 0, bins);
  uint64_t above = 0;
  uint32_t high = 0;
  for (uint32_t b = static_cast<uint32_t>(bins.size()); b-- > 0;) {
    if (above + bins[b] >= k) {
      high = b;
      break;
    }
    above += bins[b];
  }
  backend.candidate_histogram(1, high, bins);
  uint32_t low = 0;
  for (uint32_t b = static_cast<uint32_t>(bins.size()); b-- > 0;) {
    if (above + bins[b] >= k) {
      low = b;
      break;
    }
    above += bins[b];
  }
  return backend.filter_candidates((high << 16) | low, k - above);
}

// The sample's keys sorted from the largest, built on the first retry only.
class SampleGuide {
 public:
  explicit SampleGuide(std::vector<uint32_t> keys) : keys_(std::move(keys)) {}

  // The key at 1-based rank r from the top (r clamped to the sample).
  uint32_t key_at_rank(double r) {
    const size_t s = keys_.size();
    const size_t i = static_cast<size_t>(std::clamp(std::ceil(r), 1.0, static_cast<double>(s))) - 1;
    if (!sorted_) std::nth_element(keys_.begin(), keys_.begin() + i, keys_.end(), std::greater<>());
    return keys_[i];
  }

  // A sample key strictly between lo and hi, as close to `guess` as possible; `fallback` if none.
  uint32_t within(uint32_t guess, uint32_t lo, uint32_t hi, uint32_t fallback) {
    if (guess > lo && guess < hi) return guess;
    sort();
    if (guess >= hi) {  // the largest sample key below hi
      auto it = std::upper_bound(keys_.begin(), keys_.end(), hi, std::greater<>());
      if (it != keys_.end() && *it > lo && *it < hi) return *it;
    } else {  // the smallest sample key above lo
      auto it = std::lower_bound(keys_.begin(), keys_.end(), lo, std::greater<>());
      if (it != keys_.begin()) {
        --it;
        if (*it > lo && *it < hi) return *it;
      }
    }
    return fallback;
  }

 private:
  void sort() {
    if (!sorted_) std::sort(keys_.begin(), keys_.end(), std::greater<>());
    sorted_ = true;
  }
  std::vector<uint32_t> keys_;
  bool sorted_ = false;
};

}  // namespace

uint64_t select(Backend& backend, const Plan& plan) {
  const uint64_t k = plan.k;
  if (k == 0) return 0;
  if (k >= plan.n) return backend.compact_at_least(0, plan.capacity);

  std::vector<uint32_t> keys;
  backend.gather_keys(sample_positions(plan.n), keys);
  const double s = static_cast<double>(keys.size());
  SampleGuide guide(std::move(keys));

  // First threshold: about four standard deviations above the expected sample rank of the k-th
  // element, so that the pass almost always finds at least k elements.
  const double expected = s * static_cast<double>(k) / static_cast<double>(plan.n);
  double rank = expected + 4.0 * std::sqrt(expected) + 4.0;
  uint32_t t = guide.key_at_rank(rank);

  uint32_t lo = 0;                 // count(key >= lo) >= k
  uint32_t hi = plan.key_limit;    // count(key >= hi) <  k
  uint64_t count_hi = 0;
  const double target = 0.5 * static_cast<double>(k + std::min(plan.capacity, 2 * k));
  for (;;) {
    const uint64_t c = backend.compact_at_least(t, plan.capacity);
    if (c >= plan.lower && c <= plan.upper) return c;
    if (c >= k && c <= plan.capacity) return refine_to_k(backend, k);
    if (c >= k) {
      lo = t;
    } else {
      hi = t;
      count_hi = c;
    }
    if (hi - lo <= 1) return backend.compact_tie(lo, k - count_hi);
    // Next threshold: the sample rank scaled toward the target count, kept strictly inside
    // (lo, hi); bisection where the sample has no key there.
    rank = c > 0 ? rank * target / static_cast<double>(c) : s;
    t = guide.within(guide.key_at_rank(rank), lo, hi, lo + (hi - lo) / 2);
  }
}

}  // namespace gwtopk
