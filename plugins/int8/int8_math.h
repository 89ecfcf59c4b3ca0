// The int8 codec's arithmetic, one definition for the CPU kernels, the CUDA kernels and the tests.
// A block's scale is its largest magnitude m (f32). Elements quantize to q = round(x * (127 / m))
// clamped to [-127, 127] and decode to (q * (1/127)) * m; q = +-127 decodes to exactly +-m, so a
// constant block survives. A block with a NaN or infinity stores the quiet NaN 0x7fc00000 and q = 0
// (it decodes to NaN); a block with m < 2^-100 stores 0 and q = 0 (it decodes to zeros).
#pragma once

#include "gw_codec/portable.h"

#if !defined(__CUDA_ARCH__)
#include <cmath>
#endif

namespace gwc {
namespace int8 {

constexpr uint32_t kNaNScale = 0x7fc00000u;
constexpr uint32_t kTinyBits = 0x0d800000u;  // 2^-100
constexpr float kInv127 = 1.0f / 127.0f;

enum Rounding : uint32_t { kNearest = 0, kStochastic = 1 };

// The stored scale from the largest |x| bits of a block (bits & 0x7fffffff, compared as integers).
GW_HD uint32_t scale_bits(uint32_t absmax_bits) {
  if (absmax_bits >= 0x7f800000u) return kNaNScale;
  if (absmax_bits < kTinyBits) return 0;
  return absmax_bits;
}

// Whether elements of a block with this stored scale are quantized (otherwise q = 0).
GW_HD bool quantizes(uint32_t scale) { return scale != 0 && scale != kNaNScale; }

GW_HD float inverse(uint32_t scale) { return 127.0f / f32_from_bits(scale); }

GW_HD float clamp127(float y) { return y > 127.0f ? 127.0f : (y < -127.0f ? -127.0f : y); }

GW_HD int8_t quantize_nearest(float x, float inv) {
#if defined(__CUDA_ARCH__)
  return (int8_t)(int)clamp127(rintf(mul_rn(x, inv)));
#else
  return (int8_t)(int)clamp127(std::nearbyint(mul_rn(x, inv)));
#endif
}

// u in [0, 1): floor(x * inv + u); an element equal to +-m maps to +-127 exactly.
GW_HD int8_t quantize_stochastic(float x, float inv, uint32_t scale, float u) {
  if ((f32_bits(x) & 0x7fffffffu) == scale) return (int8_t)(f32_bits(x) >> 31 ? -127 : 127);
#if defined(__CUDA_ARCH__)
  return (int8_t)(int)clamp127(floorf(add_rn(mul_rn(x, inv), u)));
#else
  return (int8_t)(int)clamp127(std::floor(add_rn(mul_rn(x, inv), u)));
#endif
}

GW_HD float dequantize(int8_t q, float scale) { return mul_rn(mul_rn((float)q, kInv127), scale); }

}  // namespace int8
}  // namespace gwc
