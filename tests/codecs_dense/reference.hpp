// Golden models of the dense codec bodies, written element by element from the codecs' math headers
// (int8_math.h, onebit_math.h, gw_codec/portable.h) with no vectors: the CPU plugins (every SIMD
// target) and the CUDA kernels must write exactly these bytes.
#pragma once

#include <cstdint>
#include <cstring>
#include <vector>

#include "gw_codec/philox.h"
#include "gw_codec/portable.h"
#include "int8_math.h"
#include "onebit_math.h"

namespace gwref {

inline void put32(std::vector<uint8_t>& b, uint32_t v) {
  for (int i = 0; i < 4; ++i) b.push_back(static_cast<uint8_t>(v >> (8 * i)));
}

inline std::vector<uint8_t> half_body(const std::vector<float>& x, bool bf16, float scale) {
  std::vector<uint8_t> b;
  for (float v : x) {
    const float s = (scale != 1.0f && v == v) ? v * scale : v;
    const uint16_t h = bf16 ? gwc::f32_to_bf16(s) : gwc::f32_to_f16(s);
    b.push_back(static_cast<uint8_t>(h));
    b.push_back(static_cast<uint8_t>(h >> 8));
  }
  return b;
}

inline std::vector<uint8_t> int8_body(const std::vector<float>& x, uint32_t block, bool stochastic, uint64_t seed,
                                      uint64_t step) {
  namespace q8 = gwc::int8;
  const uint64_t n = x.size(), nb = (n + block - 1) / block;
  std::vector<uint8_t> b;
  put32(b, block);
  put32(b, 0);
  std::vector<uint32_t> scales(nb);
  for (uint64_t k = 0; k < nb; ++k) {
    uint32_t m = 0;
    for (uint64_t i = k * block; i < n && i < (k + 1) * block; ++i) m = std::max(m, gwc::f32_bits(x[i]) & 0x7fffffffu);
    scales[k] = q8::scale_bits(m);
    put32(b, scales[k]);
  }
  const gwc::RandomStream rs{seed, step, gwc::kStreamInt8Rounding};
  for (uint64_t i = 0; i < n; ++i) {
    const uint32_t s = scales[i / block];
    int8_t q = 0;
    if (q8::quantizes(s))
      q = stochastic ? q8::quantize_stochastic(x[i], q8::inverse(s), s, gwc::uniform01(rs.word(i)))
                     : q8::quantize_nearest(x[i], q8::inverse(s));
    b.push_back(static_cast<uint8_t>(q));
  }
  return b;
}

inline std::vector<uint8_t> onebit_body(const std::vector<float>& x, uint32_t block) {
  namespace ob = gwc::onebit;
  const uint64_t n = x.size(), nb = (n + block - 1) / block;
  std::vector<uint8_t> b;
  put32(b, block);
  put32(b, 0);
  for (uint64_t k = 0; k < nb; ++k) {
    double lanes[ob::kLanes] = {};
    const uint64_t first = k * block, last = std::min<uint64_t>(n, first + block);
    for (uint64_t i = first; i < last; ++i)
      lanes[(i - first) % ob::kLanes] += static_cast<double>(gwc::f32_from_bits(gwc::f32_bits(x[i]) & 0x7fffffffu));
    put32(b, ob::scale_from_lanes(lanes, last - first));
  }
  std::vector<uint8_t> bits(ob::payload_bytes(n), 0);
  for (uint64_t i = 0; i < n; ++i) bits[i / 8] |= static_cast<uint8_t>(ob::sign_bit(x[i]) << (i % 8));
  b.insert(b.end(), bits.begin(), bits.end());
  return b;
}

// The decoders' values, element by element from a body (the block header's B; no validation).
inline uint32_t get32(const std::vector<uint8_t>& body, uint64_t off) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v |= static_cast<uint32_t>(body[off + i]) << (8 * i);
  return v;
}

inline std::vector<float> int8_decoded(const std::vector<uint8_t>& body, uint64_t n) {
  const uint64_t block = get32(body, 0);
  const uint64_t nb = (n + block - 1) / block;
  std::vector<float> y(n);
  for (uint64_t i = 0; i < n; ++i)
    y[i] = gwc::int8::dequantize(static_cast<int8_t>(body[8 + 4 * nb + i]),
                                 gwc::f32_from_bits(get32(body, 8 + 4 * (i / block))));
  return y;
}

inline std::vector<float> onebit_decoded(const std::vector<uint8_t>& body, uint64_t n) {
  const uint64_t block = get32(body, 0);
  const uint64_t nb = (n + block - 1) / block;
  std::vector<float> y(n);
  for (uint64_t i = 0; i < n; ++i)
    y[i] = gwc::onebit::decode_value(get32(body, 8 + 4 * (i / block)),
                                     (body[8 + 4 * nb + i / 8] >> (i % 8)) & 1u);
  return y;
}

}  // namespace gwref
