// The onebit codec's arithmetic, one definition for the CPU kernels, the CUDA kernels and the tests.
// Element i becomes its sign bit (1: sign bit set). A block's scale is the mean of |x| over the block,
// summed in double in a fixed order — 16 lane sums, lane j taking the block's elements j, j+16, ...
// in turn, then lane sums combined pairwise (j + 8, j + 4, j + 2, j + 1) — and divided by the block's
// element count, then rounded to f32; a NaN scale is stored as the quiet NaN 0x7fc00000. Decoding
// gives +scale or -scale (the scale with its sign bit flipped). A constant block survives exactly.
#pragma once

#include "gw_codec/portable.h"

namespace gwc {
namespace onebit {

constexpr unsigned kLanes = 16;
constexpr uint32_t kNaNScale = 0x7fc00000u;

// The tree from width w down (the widths above w already folded into acc[0 .. 2w)), then the mean.
GW_HD uint32_t scale_from_lanes_at(double* acc, unsigned w, uint64_t n) {
  for (; w > 0; w /= 2)
    for (unsigned j = 0; j < w; ++j) acc[j] = acc[j] + acc[j + w];
  const float s = (float)(acc[0] / (double)n);
  return s != s ? kNaNScale : f32_bits(s);
}

GW_HD uint32_t scale_from_lanes(double* acc, uint64_t n) { return scale_from_lanes_at(acc, kLanes / 2, n); }

GW_HD float decode_value(uint32_t scale, uint32_t bit) { return f32_from_bits(scale ^ (bit << 31)); }

GW_HD uint32_t sign_bit(float x) { return f32_bits(x) >> 31; }

GW_HD uint64_t payload_bytes(uint64_t count) { return (count + 7) / 8; }

}  // namespace onebit
}  // namespace gwc
