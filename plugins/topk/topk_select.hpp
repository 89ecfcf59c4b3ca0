// The top-k selection procedure, shared by the CPU and the CUDA implementation.
//
// Elements are ranked by their magnitude key: the value's bits without the sign (f32: & 0x7fffffff,
// f16/bf16: & 0x7fff). Integer order on keys is the order on |x|, with NaN above infinity. Every
// decision below depends only on keys, counts and a fixed sample, so both backends select the same
// set and write the same bytes (docs/wire-format.md, "topk").
//
// The procedure: gather the keys at a fixed set of sample positions (stratified over the buffer),
// take as first threshold t the sample key whose rank predicts slightly more than k elements; one
// pass over the data compacts every element with key >= t, in index order, into a candidate buffer.
//   - approx: a count within [ceil(0.9k), floor(1.1k)] is sent as it is;
//   - a count >= k that fits the buffer is refined to exactly k inside the candidates: the k-th
//     largest key T by a two-level histogram, then all keys > T and the first keys == T in index order;
//   - a count < k, or one that overflows the buffer, moves t (sample-guided, then bisection) and
//     repeats the pass; when no threshold separates k (ties), the first elements equal to the last
//     threshold in index order complete the set.
// exact is the same procedure with the window [k, k].
#pragma once

#include <cstdint>
#include <vector>

namespace gwtopk {

enum class Selection { approx, exact };

struct Plan {
  uint64_t n = 0;         // elements in the buffer (< 2^32)
  uint64_t k = 0;         // target count
  uint64_t lower = 0;     // accepted count window
  uint64_t upper = 0;
  uint64_t capacity = 0;  // candidate buffer entries (>= upper, >= k)
  uint32_t key_limit = 0; // every key is < key_limit
};

Plan make_plan(uint64_t n, uint64_t k, Selection selection, uint32_t key_limit);
// Upper bound of the selected count for a plan (body sizing).
inline uint64_t max_selected(uint64_t n, uint64_t k) { return k + k / 10 > n ? n : k + k / 10; }

// Sample positions: sample_size(n) strata over [0, n), one position per stratum. The sample is a
// 64th of the buffer, at least kMinSample (all positions below that) and at most kMaxSample:
// large enough to place the first threshold within a few percent of k, small enough that drawing and
// ranking it stays well below the cost of the pass over the buffer when buffers are cut into pieces.
constexpr uint64_t kMinSample = 4096;
constexpr uint64_t kMaxSample = 65536;
inline uint64_t sample_size(uint64_t n) {
  return n <= kMinSample ? n : (n / 64 < kMinSample ? kMinSample : (n / 64 > kMaxSample ? kMaxSample : n / 64));
}
// The positions depend only on n; the last set drawn is kept per thread (a pipelined allreduce
// encodes many pieces of the same length). Valid until the next call on this thread.
const std::vector<uint32_t>& sample_positions(uint64_t n);

// What the driver asks of a backend. Candidates are (index, value bits) pairs kept by the backend.
class Backend {
 public:
  virtual ~Backend() = default;
  // Keys at the given positions.
  virtual void gather_keys(const std::vector<uint32_t>& positions, std::vector<uint32_t>& keys) = 0;
  // Compacts every element with key >= t into the candidates, in index order, storing at most
  // `capacity`; returns how many elements have key >= t (possibly more than were stored).
  virtual uint64_t compact_at_least(uint32_t t, uint64_t capacity) = 0;
  // Compacts every element with key > t and the first `equal_limit` elements with key == t, in index
  // order; the caller guarantees the result fits the capacity. Returns the count stored.
  virtual uint64_t compact_tie(uint32_t t, uint64_t equal_limit) = 0;
  // Histogram of candidate keys: level 0 counts key >> 16 into 32768 bins; level 1 counts key & 0xffff
  // into 65536 bins over the candidates whose key >> 16 == high.
  virtual void candidate_histogram(int level, uint32_t high, std::vector<uint64_t>& bins) = 0;
  // Optional shortcut for the two histograms: the k-th largest candidate key (*key) and how many
  // candidate keys are larger (*above), for 1 <= k <= candidates. Returns false when the backend has
  // none (the driver then builds the histograms); both ways give the same key, hence the same bytes.
  virtual bool kth_largest_candidate(uint64_t k, uint32_t* key, uint64_t* above) {
    (void)k, (void)key, (void)above;
    return false;
  }
  // Keeps, in place and in order, the candidates with key > t and the first `equal_limit` with
  // key == t; returns the new candidate count.
  virtual uint64_t filter_candidates(uint32_t t, uint64_t equal_limit) = 0;
};

// Runs the procedure; the backend's candidates then hold the selection. Returns its count.
uint64_t select(Backend& backend, const Plan& plan);

}  // namespace gwtopk
