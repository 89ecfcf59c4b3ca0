// CPU kernels of the onebit codec. The block sums follow onebit_math.h's order exactly: the 16 lane
// sums live in 16 / Lanes(double) vectors, so every vector width adds the same numbers in the same
// order. Work proceeds in sub-ranges that fit in L2 (scales, then sign bits), reading the input once
// from memory.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "cpu.cpp"
#include "hwy/foreach_target.h"  // IWYU pragma: keep

#include <numeric>

#include "cpu.hpp"
#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace gwc {
namespace onebit {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

HWY_INLINE uint32_t BlockScale(const float* HWY_RESTRICT x, size_t n) {
  const hn::ScalableTag<double> dd;
  const hn::Rebind<float, decltype(dd)> dh;  // as many floats as doubles
  constexpr size_t kMaxVecs = kLanes;
  const size_t L = hn::Lanes(dd);
  const size_t K = kLanes / L;
  HWY_ALIGN double lanes[kLanes];
  size_t i = 0;
  if (K <= 4) {
    auto a0 = hn::Zero(dd), a1 = hn::Zero(dd), a2 = hn::Zero(dd), a3 = hn::Zero(dd);
    for (; i + kLanes <= n; i += kLanes) {
      a0 = hn::Add(a0, hn::PromoteTo(dd, hn::Abs(hn::LoadU(dh, x + i))));
      if (K > 1) a1 = hn::Add(a1, hn::PromoteTo(dd, hn::Abs(hn::LoadU(dh, x + i + L))));
      if (K > 2) {
        a2 = hn::Add(a2, hn::PromoteTo(dd, hn::Abs(hn::LoadU(dh, x + i + 2 * L))));
        a3 = hn::Add(a3, hn::PromoteTo(dd, hn::Abs(hn::LoadU(dh, x + i + 3 * L))));
      }
    }
    hn::Store(a0, dd, lanes);
    if (K > 1) hn::Store(a1, dd, lanes + L);
    if (K > 2) {
      hn::Store(a2, dd, lanes + 2 * L);
      hn::Store(a3, dd, lanes + 3 * L);
    }
  } else {
    for (size_t j = 0; j < kMaxVecs; ++j) lanes[j] = 0.0;
    for (; i + kLanes <= n; i += kLanes)
      for (size_t j = 0; j < kLanes; ++j) lanes[j] += static_cast<double>(f32_from_bits(f32_bits(x[i + j]) & 0x7fffffffu));
  }
  for (size_t j = 0; i < n; ++i, ++j) lanes[j] += static_cast<double>(f32_from_bits(f32_bits(x[i]) & 0x7fffffffu));
  return scale_from_lanes(lanes, n);
}

// Sign bits of x[0 .. n) into bits (byte-aligned start).
HWY_INLINE void SignBits(const float* HWY_RESTRICT x, size_t n, uint8_t* HWY_RESTRICT bits) {
  const hn::ScalableTag<int32_t> di;
  const hn::RebindToFloat<decltype(di)> df;
  const size_t L = hn::Lanes(di);
  size_t i = 0;
  if (L >= 8) {
    for (; i + L <= n; i += L)
      hn::StoreMaskBits(di, hn::Lt(hn::BitCast(di, hn::LoadU(df, x + i)), hn::Zero(di)), bits + i / 8);
  }
  for (; i < n; i += 8) {
    uint32_t byte = 0;
    for (size_t k = 0; k < 8 && i + k < n; ++k) byte |= sign_bit(x[i + k]) << k;
    bits[i / 8] = static_cast<uint8_t>(byte);
  }
}

void EncodeRange(uint32_t block, const float* HWY_RESTRICT x, uint64_t begin, uint64_t end, uint8_t* HWY_RESTRICT scales,
                 uint8_t* HWY_RESTRICT bits) {
  const uint64_t unit = std::lcm<uint64_t>(block, 64);
  const uint64_t sub = unit >= (1u << 14) ? unit : (1u << 14) / unit * unit;
  for (uint64_t s = begin; s < end; s += sub) {
    const uint64_t e = end - s < sub ? end : s + sub;
    for (uint64_t b = s; b < e; b += block) {
      const size_t n = static_cast<size_t>(e - b < block ? e - b : block);
      store_le32(scales + 4 * (b / block), BlockScale(x + (b - begin), n));
    }
    SignBits(x + (s - begin), static_cast<size_t>(e - s), bits + s / 8);
  }
}

// Up to 32 bits of the bit array starting at bit `pos`; bits past the array read as 0.
HWY_INLINE uint32_t LoadBits(const uint8_t* HWY_RESTRICT bits, uint64_t bits_bytes, uint64_t pos) {
  const uint64_t k = pos / 8;
  uint64_t w = 0;
  if (k + 8 <= bits_bytes) {
    w = load_le64(bits + k);
  } else {
    for (uint64_t j = 0; k + j < bits_bytes; ++j) w |= static_cast<uint64_t>(bits[k + j]) << (8 * j);
  }
  return static_cast<uint32_t>(w >> (pos % 8));
}

void DecodeRange(uint32_t block, const uint8_t* HWY_RESTRICT scales, const uint8_t* HWY_RESTRICT bits,
                 uint64_t bits_bytes, uint64_t begin, uint64_t end, float* HWY_RESTRICT out, bool accumulate) {
  const hn::ScalableTag<uint32_t> du;
  const hn::RebindToFloat<decltype(du)> df;
  const size_t L = hn::Lanes(du);
  HWY_ALIGN static constexpr uint32_t kLaneBit[32] = {
      1u << 0,  1u << 1,  1u << 2,  1u << 3,  1u << 4,  1u << 5,  1u << 6,  1u << 7,  1u << 8,  1u << 9,  1u << 10,
      1u << 11, 1u << 12, 1u << 13, 1u << 14, 1u << 15, 1u << 16, 1u << 17, 1u << 18, 1u << 19, 1u << 20, 1u << 21,
      1u << 22, 1u << 23, 1u << 24, 1u << 25, 1u << 26, 1u << 27, 1u << 28, 1u << 29, 1u << 30, 1u << 31};
  const auto lane_bit = hn::LoadU(du, kLaneBit);
  const auto sign = hn::Set(du, 0x80000000u);
  for (uint64_t b = begin; b < end; b += block) {
    const size_t n = static_cast<size_t>(end - b < block ? end - b : block);
    const uint32_t scale = load_le32(scales + 4 * (b / block));
    const auto vs = hn::Set(du, scale);
    float* ob = out + (b - begin);
    size_t i = 0;
    if (L <= 16) {
      for (; i + L <= n; i += L) {
        const auto m = hn::TestBit(hn::Set(du, LoadBits(bits, bits_bytes, b + i)), lane_bit);
        auto v = hn::BitCast(df, hn::IfThenElse(m, hn::Xor(vs, sign), vs));
        if (accumulate) v = hn::Add(hn::LoadU(df, ob + i), v);
        hn::StoreU(v, df, ob + i);
      }
    }
    for (; i < n; ++i) {
      const uint64_t g = b + i;
      const float v = decode_value(scale, (bits[g / 8] >> (g % 8)) & 1u);
      ob[i] = accumulate ? ob[i] + v : v;
    }
  }
}

}  // namespace HWY_NAMESPACE
}  // namespace onebit
}  // namespace gwc
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace gwc {
namespace onebit {
HWY_EXPORT(EncodeRange);
HWY_EXPORT(DecodeRange);

void encode_range(uint32_t block, const float* x, uint64_t begin, uint64_t end, uint8_t* scales, uint8_t* bits) {
  HWY_DYNAMIC_DISPATCH(EncodeRange)(block, x, begin, end, scales, bits);
}
void decode_range(uint32_t block, const uint8_t* scales, const uint8_t* bits, uint64_t bits_bytes, uint64_t begin,
                  uint64_t end, float* out, bool accumulate) {
  HWY_DYNAMIC_DISPATCH(DecodeRange)(block, scales, bits, bits_bytes, begin, end, out, accumulate);
}
}  // namespace onebit
}  // namespace gwc
#endif
