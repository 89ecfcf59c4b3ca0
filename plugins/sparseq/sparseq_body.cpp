#include "sparseq_body.hpp"

#include <algorithm>
#include <cmath>

#include "gw_codec/portable.h"
#include "topk_body.hpp"

namespace gwsparseq {
namespace {

// f32 arithmetic in one fixed order (the build has -ffp-contract=off), so every rank decodes alike.
inline float level_value(float floor, float step, uint32_t q) {
  const float offset = (static_cast<float>(q) + 0.5f) * step;
  return floor + offset;
}

}  // namespace

uint64_t index_bytes(const uint32_t* idx, uint64_t m) { return gwtopk::delta_index_bytes(idx, m); }

uint64_t write_body(uint32_t bits, uint32_t group, const uint32_t* idx, const float* v, uint64_t m, uint8_t* body) {
  const uint64_t groups = group_count(m, group);
  const uint64_t ib = index_bytes(idx, m);
  body[0] = static_cast<uint8_t>(bits);
  body[1] = 0;
  gwc::store_le16(body + 2, 0);
  gwc::store_le32(body + 4, static_cast<uint32_t>(m));
  gwc::store_le32(body + 8, group);
  gwc::store_le32(body + 12, static_cast<uint32_t>(ib));
  uint8_t* scales = body + kPreambleBytes;
  uint8_t* codes = scales + 8 * groups;
  const uint32_t levels = 1u << (bits - 1);
  const uint32_t sign_bit = levels;
  uint64_t acc = 0;  // bit accumulator of the codes
  uint32_t filled = 0;
  uint8_t* c = codes;
  for (uint64_t g = 0; g < groups; ++g) {
    const uint64_t begin = g * group, end = std::min<uint64_t>(m, begin + group);
    float lo = std::fabs(v[begin]), hi = lo;
    for (uint64_t j = begin + 1; j < end; ++j) {
      const float a = std::fabs(v[j]);
      lo = std::min(lo, a);
      hi = std::max(hi, a);
    }
    const float step = (hi - lo) / static_cast<float>(levels);
    gwc::store_le32(scales + 8 * g, gwc::f32_bits(lo));
    gwc::store_le32(scales + 8 * g + 4, gwc::f32_bits(step));
    for (uint64_t j = begin; j < end; ++j) {
      const float a = std::fabs(v[j]);
      uint32_t q = 0;
      if (step > 0.0f) {
        const float t = (a - lo) / step;
        q = t >= static_cast<float>(levels - 1) ? levels - 1 : static_cast<uint32_t>(t);
      }
      const uint32_t code = q | (std::signbit(v[j]) ? sign_bit : 0u);
      acc |= static_cast<uint64_t>(code) << filled;
      filled += bits;
      if (filled >= 32) {
        gwc::store_le32(c, static_cast<uint32_t>(acc));
        c += 4;
        acc >>= 32;
        filled -= 32;
      }
    }
  }
  while (filled > 0) {
    *c++ = static_cast<uint8_t>(acc);
    acc >>= 8;
    filled = filled > 8 ? filled - 8 : 0;
  }
  const uint8_t* const last = gwtopk::write_delta_indices(idx, m, codes + code_bytes(m, bits));
  return static_cast<uint64_t>(last - body);
}

bool parse_body(const uint8_t* body, uint64_t size, uint64_t n, ParsedBody& out, std::string& error) {
  if (size < kPreambleBytes) {
    error = "body is " + std::to_string(size) + " bytes, shorter than the 16-byte sparseq preamble";
    return false;
  }
  const uint32_t bits = body[0];
  if (bits < 2 || bits > 4) {
    error = "bits per code is " + std::to_string(bits) + " (2, 3 or 4)";
    return false;
  }
  if (body[1] != 0 || gwc::load_le16(body + 2) != 0) {
    error = "reserved preamble bytes are not zero";
    return false;
  }
  const uint64_t m = gwc::load_le32(body + 4);
  const uint32_t group = gwc::load_le32(body + 8);
  const uint64_t ib = gwc::load_le32(body + 12);
  if (m > n) {
    error = std::to_string(m) + " entries for a tensor of " + std::to_string(n) + " elements";
    return false;
  }
  if (group == 0) {
    error = "group size is 0";
    return false;
  }
  const uint64_t groups = group_count(m, group);
  const uint64_t cb = code_bytes(m, bits);
  const uint64_t expect = kPreambleBytes + 8 * groups + cb + ib;
  if (size != expect) {
    error = "body is " + std::to_string(size) + " bytes, expected " + std::to_string(expect) + " for " +
            std::to_string(m) + " entries of " + std::to_string(bits) + " bits, " + std::to_string(groups) +
            " scale pairs and " + std::to_string(ib) + " index bytes";
    return false;
  }
  if (ib < m || ib > kMaxVarintBytes * m) {
    error = std::to_string(ib) + " index bytes cannot hold " + std::to_string(m) + " delta indices";
    return false;
  }
  const uint8_t* scales = body + kPreambleBytes;
  const uint8_t* codes = scales + 8 * groups;
  const uint8_t* p = codes + cb;
  const uint8_t* const end = body + size;
  if ((m * bits) % 8 != 0 && (codes[cb - 1] >> ((m * bits) % 8)) != 0) {
    error = "unused bits after the last code are not zero";
    return false;
  }
  out.bits = bits;
  out.group = group;
  out.m = m;
  out.index.resize(m);
  out.values.resize(m);
  if (!gwtopk::read_delta_indices(p, end, m, n, out.index.data(), error)) return false;
  if (p != end) {
    error = std::to_string(end - p) + " bytes follow the last delta index (body is " + std::to_string(size) +
            " bytes)";
    return false;
  }
  const uint32_t level_mask = (1u << (bits - 1)) - 1;
  const uint32_t code_mask = (1u << bits) - 1;
  uint64_t bitpos = 0;
  for (uint64_t g = 0; g < groups; ++g) {
    const float lo = gwc::f32_from_bits(gwc::load_le32(scales + 8 * g));
    const float step = gwc::f32_from_bits(gwc::load_le32(scales + 8 * g + 4));
    if (!(lo >= 0.0f) || !std::isfinite(lo) || !(step >= 0.0f) || !std::isfinite(step)) {
      error = "scale pair " + std::to_string(g) + " is not finite and non-negative";
      return false;
    }
    const uint64_t begin = g * group, stop = std::min<uint64_t>(m, begin + group);
    for (uint64_t j = begin; j < stop; ++j, bitpos += bits) {
      // A code never straddles more than two bytes (bits <= 4 < 8).
      const uint64_t byte = bitpos >> 3;
      uint32_t word = codes[byte];
      if (byte + 1 < cb) word |= static_cast<uint32_t>(codes[byte + 1]) << 8;
      const uint32_t code = (word >> (bitpos & 7)) & code_mask;
      const float magnitude = level_value(lo, step, code & level_mask);
      out.values[j] = (code & ~level_mask) ? -magnitude : magnitude;
    }
  }
  return true;
}

}  // namespace gwsparseq
