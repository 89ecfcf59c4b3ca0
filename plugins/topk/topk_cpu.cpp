#include "topk_cpu.hpp"

#include <algorithm>
#include <cstring>
#include <functional>

namespace gwtopk {

uint32_t CpuBackend::bits_at(uint64_t i) const {
  if (dtype_ == GW_DTYPE_F32) {
    uint32_t u;
    std::memcpy(&u, static_cast<const char*>(data_) + 4 * i, 4);
    return u;
  }
  uint16_t h;
  std::memcpy(&h, static_cast<const char*>(data_) + 2 * i, 2);
  return h;
}

void CpuBackend::reserve(uint64_t capacity) {
  if (idx_.size() < capacity) {
    idx_.resize(capacity);
    bits_.resize(capacity);
  }
}

void CpuBackend::gather_keys(const std::vector<uint32_t>& positions, std::vector<uint32_t>& keys) {
  const uint32_t mask = key_mask(dtype_);
  keys.resize(positions.size());
  for (size_t i = 0; i < positions.size(); ++i) keys[i] = bits_at(positions[i]) & mask;
}

uint64_t CpuBackend::compact_at_least(uint32_t t, uint64_t capacity) {
  reserve(capacity);
  uint64_t c = 0;
  if (dtype_ == GW_DTYPE_F32) {
    c = compact_at_least_f32(static_cast<const float*>(data_), n_, t, idx_.data(), bits_.data(), capacity);
  } else {
    const uint32_t mask = key_mask(dtype_);
    for (uint64_t i = 0; i < n_; ++i) {
      const uint32_t b = bits_at(i);
      if ((b & mask) >= t) {
        if (c < capacity) {
          idx_[c] = static_cast<uint32_t>(i);
          bits_[c] = b;
        }
        ++c;
      }
    }
  }
  count_ = std::min(c, capacity);
  return c;
}

uint64_t CpuBackend::compact_tie(uint32_t t, uint64_t equal_limit) {
  const uint32_t mask = key_mask(dtype_);
  uint64_t c = 0, equal = 0;
  for (uint64_t i = 0; i < n_; ++i) {
    const uint32_t b = bits_at(i);
    const uint32_t key = b & mask;
    if (key > t || (key == t && equal++ < equal_limit)) {
      idx_[c] = static_cast<uint32_t>(i);
      bits_[c] = b;
      ++c;
    }
  }
  count_ = c;
  return c;
}

void CpuBackend::candidate_histogram(int level, uint32_t high, std::vector<uint64_t>& bins) {
  const uint32_t mask = key_mask(dtype_);
  if (level == 0) {
    bins.assign(32768, 0);
    for (uint64_t i = 0; i < count_; ++i) ++bins[(bits_[i] & mask) >> 16];
  } else {
    bins.assign(65536, 0);
    for (uint64_t i = 0; i < count_; ++i) {
      const uint32_t key = bits_[i] & mask;
      if ((key >> 16) == high) ++bins[key & 0xffffu];
    }
  }
}

bool CpuBackend::kth_largest_candidate(uint64_t k, uint32_t* key, uint64_t* above) {
  if (k == 0 || k > count_) return false;
  const uint32_t mask = key_mask(dtype_);
  keys_.resize(count_);
  for (uint64_t i = 0; i < count_; ++i) keys_[i] = bits_[i] & mask;
  std::nth_element(keys_.begin(), keys_.begin() + long(k - 1), keys_.end(), std::greater<>());
  const uint32_t t = keys_[k - 1];
  uint64_t larger = 0;
  for (uint64_t i = 0; i < k - 1; ++i) larger += keys_[i] > t;  // nth_element put every larger key before k - 1
  *key = t;
  *above = larger;
  return true;
}

uint64_t CpuBackend::filter_candidates(uint32_t t, uint64_t equal_limit) {
  const uint32_t mask = key_mask(dtype_);
  uint64_t c = 0, equal = 0;
  for (uint64_t i = 0; i < count_; ++i) {
    const uint32_t key = bits_[i] & mask;
    if (key > t || (key == t && equal++ < equal_limit)) {
      idx_[c] = idx_[i];
      bits_[c] = bits_[i];
      ++c;
    }
  }
  count_ = c;
  return c;
}

}  // namespace gwtopk
