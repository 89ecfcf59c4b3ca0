// CPU kernels of the int8 codec: per block, the largest magnitude (integer max of the |x| bits, so
// the order of lanes does not matter), then the quantization of int8_math.h, vector by vector
// (round to nearest by the 1.5 * 2^23 addition, four vectors packed into one int8 store on AVX2);
// elements past the last whole vector of a block use the scalar definition itself. Decoding walks
// the output in memory order (gw_codec/block_decode-inl.h).
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "cpu.cpp"
#include "hwy/foreach_target.h"  // IWYU pragma: keep

#include "cpu.hpp"
#include "gw_codec/block_decode-inl.h"
#include "gw_codec/philox.h"
#include "hwy/cache_control.h"
#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace gwc {
namespace int8 {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

HWY_INLINE uint32_t AbsMaxBits(const float* HWY_RESTRICT x, size_t n) {
  const hn::ScalableTag<float> df;
  const hn::RebindToSigned<decltype(df)> di;
  const size_t L = hn::Lanes(df);
  const auto mask = hn::Set(di, 0x7fffffff);
  auto m0 = hn::Zero(di), m1 = hn::Zero(di);
  size_t i = 0;
  for (; i + 2 * L <= n; i += 2 * L) {
    m0 = hn::Max(m0, hn::And(hn::BitCast(di, hn::LoadU(df, x + i)), mask));
    m1 = hn::Max(m1, hn::And(hn::BitCast(di, hn::LoadU(df, x + i + L)), mask));
  }
  for (; i + L <= n; i += L) m0 = hn::Max(m0, hn::And(hn::BitCast(di, hn::LoadU(df, x + i)), mask));
  uint32_t m = static_cast<uint32_t>(hn::GetLane(hn::MaxOfLanes(di, hn::Max(m0, m1))));
  for (; i < n; ++i) {
    const uint32_t a = f32_bits(x[i]) & 0x7fffffffu;
    m = a > m ? a : m;
  }
  return m;
}

// Stores four int32 vectors (values in [-127, 127]) as 4 * Lanes int8 at q. On AVX2 the four are
// packed together (two packs, one lane permutation, one 32-byte store); elsewhere one demotion each.
template <class DI>
HWY_INLINE void StoreI8x4(DI di, hn::Vec<DI> a, hn::Vec<DI> b, hn::Vec<DI> c, hn::Vec<DI> d, int8_t* HWY_RESTRICT q) {
#if HWY_TARGET == HWY_AVX2
  (void)di;
  const __m256i ab = _mm256_packs_epi32(a.raw, b.raw);  // per 128-bit half: a 4, b 4 (int16)
  const __m256i cd = _mm256_packs_epi32(c.raw, d.raw);
  const __m256i abcd = _mm256_packs_epi16(ab, cd);  // per half: a 4, b 4, c 4, d 4 (int8)
  const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(q), _mm256_permutevar8x32_epi32(abcd, order));
#else
  const hn::Rebind<int8_t, DI> d8;
  const size_t L = hn::Lanes(di);
  hn::StoreU(hn::DemoteTo(d8, a), d8, q);
  hn::StoreU(hn::DemoteTo(d8, b), d8, q + L);
  hn::StoreU(hn::DemoteTo(d8, c), d8, q + 2 * L);
  hn::StoreU(hn::DemoteTo(d8, d), d8, q + 3 * L);
#endif
}

#if HWY_TARGET == HWY_AVX2
// StoreI8x4 with a non-temporal store; q is 32-byte aligned.
template <class DI>
HWY_INLINE void StreamI8x4(DI, hn::Vec<DI> a, hn::Vec<DI> b, hn::Vec<DI> c, hn::Vec<DI> d, int8_t* HWY_RESTRICT q) {
  const __m256i abcd = _mm256_packs_epi16(_mm256_packs_epi32(a.raw, b.raw), _mm256_packs_epi32(c.raw, d.raw));
  const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
  _mm256_stream_si256(reinterpret_cast<__m256i*>(q), _mm256_permutevar8x32_epi32(abcd, order));
}
constexpr bool kCanStream = true;
#else
constexpr bool kCanStream = false;
#endif

// Round to nearest (ties to even) of y in [-127, 127] as int32: adding 1.5 * 2^23 leaves the integer
// part in the low mantissa bits, rounded by the addition itself (the default IEEE mode), which is
// what std::nearbyint does. Clamping before rounding equals clamping after: the bounds are integers.
template <class DF>
HWY_INLINE hn::Vec<hn::RebindToSigned<DF>> NearestClamped(DF df, hn::Vec<DF> v) {
  const hn::RebindToSigned<DF> di;
  const auto magic = hn::Set(df, 12582912.0f);
  const auto y = hn::Min(hn::Max(v, hn::Set(df, -127.0f)), hn::Set(df, 127.0f));
  return hn::Sub(hn::BitCast(di, hn::Add(y, magic)), hn::BitCast(di, magic));
}

HWY_INLINE void QuantizeBlock(const float* HWY_RESTRICT x, size_t n, uint32_t scale, Rounding rounding,
                              const float* HWY_RESTRICT u, int8_t* HWY_RESTRICT q) {
  const hn::ScalableTag<float> df;
  const hn::RebindToSigned<decltype(df)> di;
  const hn::Rebind<int8_t, decltype(df)> d8;
  const size_t L = hn::Lanes(df);
  size_t i = 0;
  if (!quantizes(scale)) {
    for (; i < n; ++i) q[i] = 0;
    return;
  }
  const float inv = inverse(scale);
  const auto vinv = hn::Set(df, inv);
  if (rounding == kNearest) {
    for (; i + 4 * L <= n; i += 4 * L) {
      StoreI8x4(di, NearestClamped(df, hn::Mul(hn::LoadU(df, x + i), vinv)),
                NearestClamped(df, hn::Mul(hn::LoadU(df, x + i + L), vinv)),
                NearestClamped(df, hn::Mul(hn::LoadU(df, x + i + 2 * L), vinv)),
                NearestClamped(df, hn::Mul(hn::LoadU(df, x + i + 3 * L), vinv)), q + i);
    }
    for (; i + L <= n; i += L)
      hn::StoreU(hn::DemoteTo(d8, NearestClamped(df, hn::Mul(hn::LoadU(df, x + i), vinv))), d8, q + i);
    for (; i < n; ++i) q[i] = quantize_nearest(x[i], inv);
  } else {
    const auto hi = hn::Set(df, 127.0f), lo = hn::Set(df, -127.0f);
    const auto vscale = hn::BitCast(di, hn::Set(hn::RebindToUnsigned<decltype(df)>(), scale));
    const auto absmask = hn::Set(di, 0x7fffffff);
    for (; i + L <= n; i += L) {
      const auto v = hn::LoadU(df, x + i);
      auto y = hn::Min(hn::Max(hn::Floor(hn::Add(hn::Mul(v, vinv), hn::LoadU(df, u + i))), lo), hi);
      const auto at_max = hn::RebindMask(df, hn::Eq(hn::And(hn::BitCast(di, v), absmask), vscale));
      y = hn::IfThenElse(at_max, hn::CopySignToAbs(hi, v), y);
      hn::StoreU(hn::DemoteTo(d8, hn::ConvertTo(di, y)), d8, q + i);
    }
    for (; i < n; ++i) q[i] = quantize_stochastic(x[i], inv, scale, u[i]);
  }
}

// Round-to-nearest quantization in output order. The scales of a sub-range of blocks (a short run
// of whole blocks) come first; then its elements, a group of four vectors at a time in memory
// order, each lane with its block's 127 / scale (a group may straddle two blocks: its vectors blend
// the two), so the int8 stores can be aligned — and, for large outputs on AVX2, non-temporal:
// measured here, streaming the payload skips reading each output line before writing it and takes
// the encoder from about 21 to about 18 ms on 64 Mi elements. Elements of blocks whose scale does
// not quantize (0 or NaN) are masked to 0. Same bytes as QuantizeBlock (the tests check every target).
struct BlockQuant {
  float inv;     // 127 / scale, or 0
  int32_t keep;  // -1 if the block quantizes, else 0
};

HWY_INLINE BlockQuant BlockQuantOf(const uint8_t* HWY_RESTRICT scales, uint64_t blk) {
  const uint32_t s = load_le32(scales + 4 * blk);
  return quantizes(s) ? BlockQuant{inverse(s), -1} : BlockQuant{0.0f, 0};
}

HWY_INLINE int8_t QuantizeOne(float x, const BlockQuant& b) { return b.keep ? quantize_nearest(x, b.inv) : int8_t{0}; }

// Elements per scales sub-range (2 KiB of f32, read again from L1 by the quantization). Measured on
// 64 Mi elements: 512 beat 256, 1024, 2048 and 4096 (longer quantization stretches leave the memory
// idle; software prefetching the next sub-range did not help).
constexpr uint64_t kSubRange = 512;

// Groups of 4 vectors of elements [j, limit) (relative to begin) while whole groups remain; scales
// of every block up to limit are written. Requires block >= 4 * Lanes (a group spans two blocks at
// most). Returns the first element not written.
template <bool kStream>
HWY_INLINE uint64_t QuantizeGroups(uint32_t block, const float* HWY_RESTRICT x, uint64_t begin, uint64_t j,
                                   uint64_t limit, const uint8_t* HWY_RESTRICT scales, int8_t* HWY_RESTRICT q) {
  const hn::ScalableTag<float> df;
  const hn::RebindToSigned<decltype(df)> di;
  const size_t L = hn::Lanes(df);
  const size_t G = 4 * L;
  if (j + G > limit) return j;
  uint64_t blk = (begin + j) / block;
  uint64_t next = (blk + 1) * block - begin;  // relative index of the next block's first element
  BlockQuant a = BlockQuantOf(scales, blk);
  auto vinv = hn::Set(df, a.inv);
  auto vkeep = hn::Set(di, a.keep);
  const auto put = [&](uint64_t k, hn::Vec<decltype(df)> i0, hn::Vec<decltype(df)> i1, hn::Vec<decltype(df)> i2,
                       hn::Vec<decltype(df)> i3, hn::Vec<decltype(di)> k0, hn::Vec<decltype(di)> k1,
                       hn::Vec<decltype(di)> k2, hn::Vec<decltype(di)> k3) {
    const auto v0 = hn::And(NearestClamped(df, hn::Mul(hn::LoadU(df, x + k), i0)), k0);
    const auto v1 = hn::And(NearestClamped(df, hn::Mul(hn::LoadU(df, x + k + L), i1)), k1);
    const auto v2 = hn::And(NearestClamped(df, hn::Mul(hn::LoadU(df, x + k + 2 * L), i2)), k2);
    const auto v3 = hn::And(NearestClamped(df, hn::Mul(hn::LoadU(df, x + k + 3 * L), i3)), k3);
#if HWY_TARGET == HWY_AVX2
    if constexpr (kStream) {
      StreamI8x4(di, v0, v1, v2, v3, q + k);
      return;
    }
#endif
    StoreI8x4(di, v0, v1, v2, v3, q + k);
  };
  while (j + G <= limit) {
    const uint64_t stop = next < limit ? next : limit;
    for (; j + G <= stop; j += G) put(j, vinv, vinv, vinv, vinv, vkeep, vkeep, vkeep, vkeep);
    if (j + G > limit) break;
    const BlockQuant b = BlockQuantOf(scales, ++blk);  // the group at j reaches into (or starts) it
    const auto winv = hn::Set(df, b.inv);
    const auto wkeep = hn::Set(di, b.keep);
    if (j < next) {
      hn::Vec<decltype(df)> inv[4];
      hn::Vec<decltype(di)> keep[4];
      for (size_t k = 0; k < 4; ++k) {
        const uint64_t first = j + k * L;  // lanes before `next` belong to block blk - 1
        const size_t in_a = next > first ? static_cast<size_t>(next - first < L ? next - first : L) : 0;
        const auto m = hn::FirstN(df, in_a);
        inv[k] = hn::IfThenElse(m, vinv, winv);
        keep[k] = hn::IfThenElse(hn::RebindMask(di, m), vkeep, wkeep);
      }
      put(j, inv[0], inv[1], inv[2], inv[3], keep[0], keep[1], keep[2], keep[3]);
      j += G;
    }
    vinv = winv;
    vkeep = wkeep;
    next += block;
  }
  return j;
}

void EncodeNearestInOrder(uint32_t block, const float* HWY_RESTRICT x, uint64_t begin, uint64_t end,
                          uint8_t* HWY_RESTRICT scales, int8_t* HWY_RESTRICT q) {
  const size_t G = 4 * hn::Lanes(hn::ScalableTag<float>());
  const uint64_t count = end - begin;
  int8_t* HWY_RESTRICT qo = q + begin;  // qo[j]: element begin + j
  const bool stream = kCanStream && count >= gwc::HWY_NAMESPACE::kStreamMinBytes;  // (int8: 1 byte each)
  const uint64_t head = stream ? ((G - reinterpret_cast<uintptr_t>(qo) % G) % G) : 0;  // to a G-byte boundary
  const uint64_t sub = block >= kSubRange ? block : kSubRange / block * block;
  const auto scalar = [&](uint64_t j) { qo[j] = QuantizeOne(x[j], BlockQuantOf(scales, (begin + j) / block)); };
  uint64_t j = 0;  // elements [0, j) written
  for (uint64_t s = 0; s < count; s += sub) {
    const uint64_t e = count - s < sub ? count : s + sub;
    for (uint64_t b = s; b < e; b += block) {
      const size_t n = static_cast<size_t>(e - b < block ? e - b : block);
      store_le32(scales + 4 * ((begin + b) / block), scale_bits(AbsMaxBits(x + b, n)));
    }
    for (; j < head && j < e; ++j) scalar(j);
    j = stream ? QuantizeGroups<true>(block, x, begin, j, e, scales, qo)
               : QuantizeGroups<false>(block, x, begin, j, e, scales, qo);
  }
  for (; j < count; ++j) scalar(j);
  if (stream) hwy::FlushStream();
}

void EncodeRange(const EncodeArgs& args, const float* HWY_RESTRICT x, uint64_t begin, uint64_t end,
                 uint8_t* HWY_RESTRICT scales, int8_t* HWY_RESTRICT q, float* HWY_RESTRICT uniform) {
  if (args.rounding == kNearest && args.block >= 4 * hn::Lanes(hn::ScalableTag<float>())) {
    EncodeNearestInOrder(args.block, x, begin, end, scales, q);
    return;
  }
  const RandomStream stream{args.seed, args.step, kStreamInt8Rounding};
  for (uint64_t b = begin; b < end; b += args.block) {
    const size_t n = static_cast<size_t>(end - b < args.block ? end - b : args.block);
    const float* xb = x + (b - begin);
    const uint32_t scale = scale_bits(AbsMaxBits(xb, n));
    store_le32(scales + 4 * (b / args.block), scale);
    if (args.rounding == kStochastic && quantizes(scale)) fill_uniform01(stream, b, n, uniform);
    QuantizeBlock(xb, n, scale, args.rounding, uniform, q + b);
  }
}

// Element values for DecodeBlocksInOutputOrder: (q * (1/127)) * scale.
struct DecodeKernel {
  const int8_t* q;

  HWY_INLINE hn::Vec<hn::ScalableTag<float>> Vector(uint64_t g, hn::Vec<hn::ScalableTag<uint32_t>> scale) const {
    const hn::ScalableTag<float> df;
    const hn::RebindToSigned<decltype(df)> di;
    const hn::Rebind<int8_t, decltype(df)> d8;
    const auto v = hn::ConvertTo(df, hn::PromoteTo(di, hn::LoadU(d8, q + g)));
    return hn::Mul(hn::Mul(v, hn::Set(df, kInv127)), hn::BitCast(df, scale));
  }
  HWY_INLINE float Scalar(uint64_t g, uint32_t scale) const { return dequantize(q[g], f32_from_bits(scale)); }
};

void DecodeRange(uint32_t block, const uint8_t* HWY_RESTRICT scales, const int8_t* HWY_RESTRICT q, uint64_t begin,
                 uint64_t end, float* HWY_RESTRICT out, bool accumulate) {
  gwc::HWY_NAMESPACE::DecodeBlocksInOutputOrder(block, scales, begin, end, out, accumulate, DecodeKernel{q}, true);
}

}  // namespace HWY_NAMESPACE
}  // namespace int8
}  // namespace gwc
HWY_AFTER_NAMESPACE();

#if HWY_ONCE

namespace gwc {
namespace int8 {
HWY_EXPORT(EncodeRange);
HWY_EXPORT(DecodeRange);

void encode_range(const EncodeArgs& args, const float* x, uint64_t begin, uint64_t end, uint8_t* scales, int8_t* q,
                  float* uniform_scratch) {
  HWY_DYNAMIC_DISPATCH(EncodeRange)(args, x, begin, end, scales, q, uniform_scratch);
}
void decode_range(uint32_t block, const uint8_t* scales, const int8_t* q, uint64_t begin, uint64_t end, float* out,
                  bool accumulate) {
  HWY_DYNAMIC_DISPATCH(DecodeRange)(block, scales, q, begin, end, out, accumulate);
}
}  // namespace int8
}  // namespace gwc
#endif
