// The randomk body preamble (layout in randomk.cpp and docs/wire-format.md, "randomk").
#pragma once

#include <cstdint>
#include <string>

#include "gw_codec/sparse.hpp"

namespace gwrandomk {

constexpr uint64_t kPreambleBytes = 24;
constexpr uint8_t kFlagRescaled = 1u << 0;

struct Preamble {
  gwc::SparseValues values = gwc::SparseValues::fp32;
  bool rescaled = false;
  uint64_t k = 0;
  uint64_t seed = 0;
  uint64_t step = 0;
};

inline uint64_t body_bytes(gwc::SparseValues values, uint64_t k) {
  return kPreambleBytes + k * gwc::sparse_value_bytes(values);
}

inline void write_preamble(const Preamble& p, uint8_t* body) {
  body[0] = static_cast<uint8_t>(p.values);
  body[1] = p.rescaled ? kFlagRescaled : 0;
  gwc::store_le16(body + 2, 0);
  gwc::store_le32(body + 4, static_cast<uint32_t>(p.k));
  gwc::store_le64(body + 8, p.seed);
  gwc::store_le64(body + 16, p.step);
}

// Parses and checks a body for a tensor of n elements; false with `error` for anything malformed.
inline bool parse_preamble(const uint8_t* body, uint64_t size, uint64_t n, Preamble& p, std::string& error) {
  if (size < kPreambleBytes) {
    error = "body is " + std::to_string(size) + " bytes, shorter than the 24-byte randomk preamble";
    return false;
  }
  if (body[0] > 1) {
    error = "unknown value format " + std::to_string(body[0]) + " (0 fp32, 1 fp16)";
    return false;
  }
  if (body[1] & ~kFlagRescaled) {
    error = "unknown flags " + std::to_string(body[1]);
    return false;
  }
  if (gwc::load_le16(body + 2) != 0) {
    error = "reserved preamble bytes are not zero";
    return false;
  }
  p.values = static_cast<gwc::SparseValues>(body[0]);
  p.rescaled = body[1] & kFlagRescaled;
  p.k = gwc::load_le32(body + 4);
  p.seed = gwc::load_le64(body + 8);
  p.step = gwc::load_le64(body + 16);
  if (p.k > n) {
    error = "k = " + std::to_string(p.k) + " for a tensor of " + std::to_string(n) + " elements";
    return false;
  }
  if (size != body_bytes(p.values, p.k)) {
    error = "body is " + std::to_string(size) + " bytes, expected " + std::to_string(body_bytes(p.values, p.k)) +
            " for k = " + std::to_string(p.k);
    return false;
  }
  return true;
}

}  // namespace gwrandomk
