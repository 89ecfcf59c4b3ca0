// CPU kernels of the onebit codec. The block sums follow onebit_math.h's order exactly: the 16 lane
// sums live in 16 / Lanes(double) vectors, so every vector width adds the same numbers in the same
// order. Encoding reads the input once: on targets with 8- or 16-float vectors and blocks that start
// on a byte of the bit array (block_size a multiple of 8), each vector gives both its sign bits and
// its lane sums (ScaleAndBits); otherwise the work proceeds in L2-sized sub-ranges (scales, then sign
// bits). Decoding walks the output in memory order with aligned ordinary stores
// (gw_codec/block_decode-inl.h; streaming stores were measured slower for this decoder).
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "cpu.cpp"
#include "hwy/foreach_target.h"  // IWYU pragma: keep

#include <numeric>

#include "cpu.hpp"
#include "gw_codec/block_decode-inl.h"
#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace gwc {
namespace onebit {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// The block's scale: lane sums kept in 16 / Lanes(double) vectors, so every vector width adds the
// same numbers in the same order (onebit_math.h).
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

// Sign bits of x[i .. n) (i a multiple of 8) byte by byte into bits[i / 8 ..]; bits past n are 0.
HWY_INLINE void SignBitsTail(const float* HWY_RESTRICT x, size_t i, size_t n, uint8_t* HWY_RESTRICT bits) {
  for (; i < n; i += 8) {
    uint32_t byte = 0;
    for (size_t k = 0; k < 8 && i + k < n; ++k) byte |= sign_bit(x[i + k]) << k;
    bits[i / 8] = static_cast<uint8_t>(byte);
  }
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
  SignBitsTail(x, i, n, bits);
}

#if HWY_TARGET != HWY_SCALAR  // (no half vectors there)
// Whether this target has the one-pass encoder: float vectors of 8 or 16 lanes (a whole number of
// bytes of sign bits each, at most the 16 lanes of one step).
template <class DF>
constexpr bool kOnePass = hn::MaxLanes(DF()) == 8 || hn::MaxLanes(DF()) == 16;

// One pass over a block x[0 .. n) whose first element is bit 0 of bits[0]: its sign bits and its
// scale, each 16-element step loaded once. The 16 lane sums live in 16 / Lanes(double) vectors
// (acc[k] holds lanes k * Ld .. k * Ld + Ld - 1) and are combined by the pairwise tree of
// onebit_math.h: the widths that span whole vectors as vector adds, the rest in scale_from_lanes.
template <class DF>
HWY_INLINE uint32_t ScaleAndBits(DF df, const float* HWY_RESTRICT x, size_t n, uint8_t* HWY_RESTRICT bits) {
  const hn::RebindToSigned<DF> di;
  const hn::Repartition<double, DF> dd;
  const hn::Half<DF> dh;
  constexpr size_t Lf = hn::MaxLanes(DF());
  constexpr size_t Ld = Lf / 2;
  constexpr size_t K = kLanes / Ld;  // double vectors of lane sums: 4 (AVX2) or 2 (AVX-512)
  const auto abs_mask = hn::Set(di, 0x7fffffff);
  hn::Vec<decltype(dd)> acc[K];
  for (size_t k = 0; k < K; ++k) acc[k] = hn::Zero(dd);
  size_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (size_t v = 0; v < kLanes / Lf; ++v) {
      const auto xi = hn::BitCast(di, hn::LoadU(df, x + i + v * Lf));
      hn::StoreMaskBits(di, hn::Lt(xi, hn::Zero(di)), bits + (i + v * Lf) / 8);
      const auto a = hn::BitCast(df, hn::And(xi, abs_mask));
      acc[2 * v] = hn::Add(acc[2 * v], hn::PromoteTo(dd, hn::LowerHalf(dh, a)));
      acc[2 * v + 1] = hn::Add(acc[2 * v + 1], hn::PromoteTo(dd, hn::UpperHalf(dh, a)));
    }
  }
  HWY_ALIGN double lanes[kLanes];
  if (i == n) {  // whole steps only: fold the widths w >= Ld as vectors
    for (size_t w = kLanes / 2; w >= Ld; w /= 2)
      for (size_t k = 0; k < w / Ld; ++k) acc[k] = hn::Add(acc[k], acc[k + w / Ld]);
    hn::Store(acc[0], dd, lanes);
    return scale_from_lanes_at(lanes, Ld / 2, n);
  }
  for (size_t k = 0; k < K; ++k) hn::Store(acc[k], dd, lanes + k * Ld);
  for (size_t j = 0; i + j < n; ++j) lanes[j] += static_cast<double>(f32_from_bits(f32_bits(x[i + j]) & 0x7fffffffu));
  SignBitsTail(x, i, n, bits);
  return scale_from_lanes(lanes, n);
}
#endif

void EncodeRange(uint32_t block, const float* HWY_RESTRICT x, uint64_t begin, uint64_t end, uint8_t* HWY_RESTRICT scales,
                 uint8_t* HWY_RESTRICT bits) {
  uint8_t* scale_out = scales + 4 * (begin / block);
#if HWY_TARGET != HWY_SCALAR
  const hn::ScalableTag<float> df;
  if constexpr (kOnePass<decltype(df)>) {
    if (hn::Lanes(df) == hn::MaxLanes(df) && block % 8 == 0) {  // every block starts on a byte of bits
      for (uint64_t b = begin; b < end; b += block, scale_out += 4) {
        const size_t n = static_cast<size_t>(end - b < block ? end - b : block);
        store_le32(scale_out, ScaleAndBits(df, x + (b - begin), n, bits + b / 8));
      }
      return;
    }
  }
#endif
  // Two passes per L2-sized sub-range (scales, then sign bits): blocks need not start on a byte.
  const uint64_t unit = std::lcm<uint64_t>(block, 64);
  const uint64_t sub = unit >= (1u << 14) ? unit : (1u << 14) / unit * unit;
  for (uint64_t s = begin; s < end; s += sub) {
    const uint64_t e = end - s < sub ? end : s + sub;
    for (uint64_t b = s; b < e; b += block, scale_out += 4) {
      const size_t n = static_cast<size_t>(e - b < block ? e - b : block);
      store_le32(scale_out, BlockScale(x + (b - begin), n));
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

// Element values for DecodeBlocksInOutputOrder: the scale with its sign bit flipped where the bit is 1.
struct DecodeKernel {
  const uint8_t* bits;
  uint64_t bits_bytes;

  HWY_INLINE hn::Vec<hn::ScalableTag<float>> Vector(uint64_t g, hn::Vec<hn::ScalableTag<uint32_t>> scale) const {
    const hn::ScalableTag<uint32_t> du;
    HWY_ALIGN static constexpr uint32_t kLaneBit[32] = {
        1u << 0,  1u << 1,  1u << 2,  1u << 3,  1u << 4,  1u << 5,  1u << 6,  1u << 7,  1u << 8,  1u << 9,  1u << 10,
        1u << 11, 1u << 12, 1u << 13, 1u << 14, 1u << 15, 1u << 16, 1u << 17, 1u << 18, 1u << 19, 1u << 20, 1u << 21,
        1u << 22, 1u << 23, 1u << 24, 1u << 25, 1u << 26, 1u << 27, 1u << 28, 1u << 29, 1u << 30, 1u << 31};
    const auto m = hn::TestBit(hn::Set(du, LoadBits(bits, bits_bytes, g)), hn::Load(du, kLaneBit));
    return hn::BitCast(hn::RebindToFloat<decltype(du)>(), hn::Xor(scale, hn::IfThenElseZero(m, hn::Set(du, 0x80000000u))));
  }
  HWY_INLINE float Scalar(uint64_t g, uint32_t scale) const { return decode_value(scale, (bits[g / 8] >> (g % 8)) & 1u); }
};

void DecodeRange(uint32_t block, const uint8_t* HWY_RESTRICT scales, const uint8_t* HWY_RESTRICT bits,
                 uint64_t bits_bytes, uint64_t begin, uint64_t end, float* HWY_RESTRICT out, bool accumulate) {
  static_assert(hn::MaxLanes(hn::ScalableTag<uint32_t>()) <= 32, "LoadBits gives 32 bits per vector");
  gwc::HWY_NAMESPACE::DecodeBlocksInOutputOrder(block, scales, begin, end, out, accumulate, DecodeKernel{bits, bits_bytes}, false);
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
