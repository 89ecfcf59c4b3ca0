// The one encoding of every header and record that crosses a process or goes to disk: integers are
// little-endian, written and read byte by byte (so the bytes are the same on any host), f32 arrays are
// little-endian IEEE 754. Message headers, failure and stuck notices, bootstrap records and replies,
// the error-feedback and gw_sync state blobs all go through ByteWriter / ByteReader or the fixed-offset
// put_le / get_le below; their layouts are in docs/wire-format.md and docs/collectives.md, and golden
// byte tests (tests/unit/test_byte_layouts.cpp) pin them.
#pragma once

#include <bit>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.hpp"
#include "core/strings.hpp"

namespace gw::bytes {

inline void put_le(unsigned char* p, uint64_t v, int n) {
  for (int i = 0; i < n; ++i) p[i] = static_cast<unsigned char>(v >> (8 * i));
}
inline uint64_t get_le(const unsigned char* p, int n) {
  uint64_t v = 0;
  for (int i = 0; i < n; ++i) v |= uint64_t(p[i]) << (8 * i);
  return v;
}

// f32 values as little-endian bytes (a copy on little-endian hosts).
inline void put_f32s(unsigned char* p, const float* v, uint64_t count) {
  if constexpr (std::endian::native == std::endian::little) {
    if (count > 0) std::memcpy(p, v, 4 * count);
  } else {
    for (uint64_t i = 0; i < count; ++i) put_le(p + 4 * i, std::bit_cast<uint32_t>(v[i]), 4);
  }
}
inline void get_f32s(const unsigned char* p, float* v, uint64_t count) {
  if constexpr (std::endian::native == std::endian::little) {
    if (count > 0) std::memcpy(v, p, 4 * count);
  } else {
    for (uint64_t i = 0; i < count; ++i) v[i] = std::bit_cast<float>(uint32_t(get_le(p + 4 * i, 4)));
  }
}

// FNV-1a 64 (core/strings.hpp), the checksum of the state blobs.
inline uint64_t fnv1a64(const unsigned char* p, uint64_t n) {
  return gw::fnv1a64(std::string_view(reinterpret_cast<const char*>(p), n));
}

// Appends little-endian fields to a byte vector.
class ByteWriter {
 public:
  void u8(uint8_t v) { out_.push_back(v); }
  void u16(uint16_t v) { put(v, 2); }
  void u32(uint32_t v) { put(v, 4); }
  void i32(int32_t v) { put(uint32_t(v), 4); }
  void u64(uint64_t v) { put(v, 8); }
  void raw(const void* p, uint64_t n) {
    const auto* b = static_cast<const unsigned char*>(p);
    out_.insert(out_.end(), b, b + n);
  }
  // A u64 length, then the bytes.
  void bytes(const void* p, uint64_t n) {
    u64(n);
    raw(p, n);
  }
  void str(const std::string& s) { bytes(s.data(), s.size()); }
  void f32s(const float* v, uint64_t count) {
    const size_t at = out_.size();
    out_.resize(at + 4 * count);
    put_f32s(out_.data() + at, v, count);
  }
  size_t size() const { return out_.size(); }
  const std::vector<unsigned char>& data() const { return out_; }
  // Appends FNV-1a 64 of everything written so far and hands the bytes over.
  std::vector<unsigned char> finish_with_checksum() {
    u64(fnv1a64(out_.data(), out_.size()));
    return std::move(out_);
  }
  std::vector<unsigned char> take() { return std::move(out_); }
  std::string take_string() { return std::string(out_.begin(), out_.end()); }

 private:
  void put(uint64_t v, int n) {
    for (int i = 0; i < n; ++i) out_.push_back(uint8_t(v >> (8 * i)));
  }
  std::vector<unsigned char> out_;
};

// Reads little-endian fields, never past the end: a short input throws GW_ERR_CORRUPT with
// `what` ("the synchronizer state blob", ...) and the caller's advice.
class ByteReader {
 public:
  ByteReader(const void* p, uint64_t n, std::string what, std::string advice = "")
      : p_(static_cast<const unsigned char*>(p)),
        end_(static_cast<const unsigned char*>(p) + n),
        what_(std::move(what)),
        advice_(std::move(advice)) {}
  uint8_t u8() { return uint8_t(get(1)); }
  uint16_t u16() { return uint16_t(get(2)); }
  uint32_t u32() { return uint32_t(get(4)); }
  int32_t i32() { return int32_t(uint32_t(get(4))); }
  uint64_t u64() { return get(8); }
  const unsigned char* raw(uint64_t n) {
    need(n);
    const unsigned char* at = p_;
    p_ += n;
    return at;
  }
  std::vector<unsigned char> bytes() {
    const uint64_t n = u64();
    const unsigned char* at = raw(n);
    return std::vector<unsigned char>(at, at + n);
  }
  std::string str() {
    const uint64_t n = u64();
    const unsigned char* at = raw(n);
    return std::string(reinterpret_cast<const char*>(at), n);
  }
  std::vector<float> f32s(uint64_t count) {
    if (count > remaining() / 4) corrupt("it is cut off");
    std::vector<float> v(count);
    get_f32s(p_, v.data(), count);
    p_ += 4 * count;
    return v;
  }
  uint64_t remaining() const { return uint64_t(end_ - p_); }
  bool at_end() const { return p_ == end_; }
  [[noreturn]] void corrupt(const std::string& detail) const {
    fail(GW_ERR_CORRUPT, what_ + " is invalid: " + detail + (advice_.empty() ? "" : "; " + advice_));
  }

 private:
  uint64_t get(int n) {
    need(uint64_t(n));
    const uint64_t v = get_le(p_, n);
    p_ += n;
    return v;
  }
  void need(uint64_t n) const {
    if (n > remaining()) corrupt("it is cut off");
  }
  const unsigned char* p_;
  const unsigned char* end_;
  std::string what_;
  std::string advice_;
};

}  // namespace gw::bytes
