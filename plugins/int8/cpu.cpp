// CPU kernels of the int8 codec: per block, the largest magnitude (integer max of the |x| bits, so
// the order of lanes does not matter), then the quantization of int8_math.h, vector by vector;
// elements past the last whole vector of a block use the scalar definition itself.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "cpu.cpp"
#include "hwy/foreach_target.h"  // IWYU pragma: keep

#include "cpu.hpp"
#include "gw_codec/philox.h"
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
  const auto hi = hn::Set(df, 127.0f), lo = hn::Set(df, -127.0f);
  if (rounding == kNearest) {
    for (; i + L <= n; i += L) {
      const auto y = hn::Min(hn::Max(hn::Round(hn::Mul(hn::LoadU(df, x + i), vinv)), lo), hi);
      hn::StoreU(hn::DemoteTo(d8, hn::ConvertTo(di, y)), d8, q + i);
    }
    for (; i < n; ++i) q[i] = quantize_nearest(x[i], inv);
  } else {
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

void EncodeRange(const EncodeArgs& args, const float* HWY_RESTRICT x, uint64_t begin, uint64_t end,
                 uint8_t* HWY_RESTRICT scales, int8_t* HWY_RESTRICT q, float* HWY_RESTRICT uniform) {
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

void DecodeRange(uint32_t block, const uint8_t* HWY_RESTRICT scales, const int8_t* HWY_RESTRICT q, uint64_t begin,
                 uint64_t end, float* HWY_RESTRICT out, bool accumulate) {
  const hn::ScalableTag<float> df;
  const hn::RebindToSigned<decltype(df)> di;
  const hn::Rebind<int8_t, decltype(df)> d8;
  const size_t L = hn::Lanes(df);
  const auto r = hn::Set(df, kInv127);
  for (uint64_t b = begin; b < end; b += block) {
    const size_t n = static_cast<size_t>(end - b < block ? end - b : block);
    const float scale = f32_from_bits(load_le32(scales + 4 * (b / block)));
    const auto vs = hn::Set(df, scale);
    const int8_t* qb = q + b;
    float* ob = out + (b - begin);
    size_t i = 0;
    for (; i + L <= n; i += L) {
      auto v = hn::Mul(hn::Mul(hn::ConvertTo(df, hn::PromoteTo(di, hn::LoadU(d8, qb + i))), r), vs);
      if (accumulate) v = hn::Add(hn::LoadU(df, ob + i), v);
      hn::StoreU(v, df, ob + i);
    }
    for (; i < n; ++i) ob[i] = accumulate ? ob[i] + dequantize(qb[i], scale) : dequantize(qb[i], scale);
  }
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
