// The CPU backend of the top-k selection: vectorized (Highway, run-time dispatch) passes over f32,
// portable loops over f16/bf16, and the candidate buffer in host memory.
#pragma once

#include <gradwire/types.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "topk_select.hpp"

namespace gwtopk {

// Magnitude key of the value bits of one element of `dtype` (f32, f16 or bf16).
inline uint32_t key_mask(gw_dtype dtype) { return dtype == GW_DTYPE_F32 ? 0x7fffffffu : 0x7fffu; }

// The vectorized pass: compacts (index, bits) of every f32 with key >= t, in index order, into
// idx/bits (capacity entries), storing at most `capacity`; returns the count of all such elements.
uint64_t compact_at_least_f32(const float* x, uint64_t n, uint32_t t, uint32_t* idx, uint32_t* bits,
                              uint64_t capacity);

class CpuBackend final : public Backend {
 public:
  CpuBackend(const void* data, gw_dtype dtype, uint64_t n) : data_(data), dtype_(dtype), n_(n) {}
  // Points the backend at another buffer, keeping the candidate storage.
  void bind(const void* data, gw_dtype dtype, uint64_t n) {
    data_ = data;
    dtype_ = dtype;
    n_ = n;
    count_ = 0;
  }

  void gather_keys(const std::vector<uint32_t>& positions, std::vector<uint32_t>& keys) override;
  uint64_t compact_at_least(uint32_t t, uint64_t capacity) override;
  uint64_t compact_tie(uint32_t t, uint64_t equal_limit) override;
  void candidate_histogram(int level, uint32_t high, std::vector<uint64_t>& bins) override;
  uint64_t filter_candidates(uint32_t t, uint64_t equal_limit) override;
  // nth_element over a copy of the candidate keys: linear in the candidates, where the histograms
  // cost 96 K bins to clear and scan whatever their number.
  bool kth_largest_candidate(uint64_t k, uint32_t* key, uint64_t* above) override;

  // The selection, after select(): count() pairs of (index, value bits), in index order.
  uint64_t count() const { return count_; }
  const uint32_t* indices() const { return idx_.data(); }
  const uint32_t* bits() const { return bits_.data(); }

 private:
  uint32_t bits_at(uint64_t i) const;
  void reserve(uint64_t capacity);

  const void* data_;
  gw_dtype dtype_;
  uint64_t n_;
  std::vector<uint32_t> idx_;
  std::vector<uint32_t> bits_;
  std::vector<uint32_t> keys_;  // scratch of kth_largest_candidate
  uint64_t count_ = 0;
};

}  // namespace gwtopk
