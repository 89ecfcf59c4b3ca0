// gw_codec/simd_convert-inl.h — Highway vector forms of gw_codec/portable.h's conversions.
//
// Per-target header (include it after hwy/foreach_target.h or hwy/highway.h, like any *-inl.h).
// Every function gives the same bits as its scalar twin in portable.h on every target: AVX2 and
// AVX-512 use the F16C instructions (IEEE round to nearest even, NaN quieted — what portable.h
// specifies); other targets use integer arithmetic, because Highway 1.0's emulated fp16 demotion
// truncates. API, in namespace gwc::HWY_NAMESPACE, for a float descriptor df:
//
//   StoreF16(df, v, uint16_t* p)   stores Lanes(df) halves (unaligned)
//   LoadF16(df, const uint16_t* p) loads Lanes(df) halves as floats
//   StoreBF16 / LoadBF16           the same for bfloat16
//   ConvertToF32(dtype, const void* in, float* out, n)        f32/f16/bf16 array -> f32
//   ConvertFromF32(dtype, const float* in, void* out, n, acc)  f32 -> f32/f16/bf16 array,
//                                                               acc: out = out + in (rounded once)
#if defined(GW_CODEC_SIMD_CONVERT_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef GW_CODEC_SIMD_CONVERT_INL_H_
#undef GW_CODEC_SIMD_CONVERT_INL_H_
#else
#define GW_CODEC_SIMD_CONVERT_INL_H_
#endif

#include <gradwire/types.h>

#include "gw_codec/portable.h"
#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace gwc {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

#undef GW_CODEC_NATIVE_F16
#if HWY_TARGET <= HWY_AVX2 && HWY_ARCH_X86
#define GW_CODEC_NATIVE_F16 1
#else
#define GW_CODEC_NATIVE_F16 0
#endif

template <class DF>
HWY_INLINE void StoreF16(DF df, hn::Vec<DF> v, uint16_t* HWY_RESTRICT p) {
  const hn::Rebind<uint16_t, DF> du16;
#if GW_CODEC_NATIVE_F16
  const hn::Rebind<hwy::float16_t, DF> df16;
  hn::StoreU(hn::BitCast(du16, hn::DemoteTo(df16, v)), du16, p);
#else
  const hn::RebindToUnsigned<DF> du;
  const hn::RebindToSigned<DF> di;
  const auto u = hn::BitCast(du, v);
  const auto a = hn::And(u, hn::Set(du, 0x7fffffffu));
  const auto ai = hn::BitCast(di, a);
  const auto sign = hn::And(hn::ShiftRight<16>(u), hn::Set(du, 0x8000u));
  const auto r = hn::Sub(a, hn::Set(du, 0x38000000u));
  const auto normal = hn::ShiftRight<13>(
      hn::Add(hn::Add(r, hn::Set(du, 0xfffu)), hn::And(hn::ShiftRight<13>(r), hn::Set(du, 1u))));
  const auto sub = hn::Sub(hn::BitCast(du, hn::Add(hn::BitCast(df, a), hn::Set(df, 0.5f))),
                           hn::Set(du, 0x3f000000u));
  const auto nan = hn::Or(hn::Set(du, 0x7e00u), hn::And(hn::ShiftRight<13>(a), hn::Set(du, 0x3ffu)));
  auto h = hn::IfThenElse(hn::RebindMask(du, hn::Lt(ai, hn::Set(di, 0x38800000))), sub, normal);
  h = hn::IfThenElse(hn::RebindMask(du, hn::Gt(ai, hn::Set(di, 0x477fefff))), hn::Set(du, 0x7c00u), h);
  h = hn::IfThenElse(hn::RebindMask(du, hn::Gt(ai, hn::Set(di, 0x7f800000))), nan, h);
  h = hn::Or(h, sign);
  hn::StoreU(hn::DemoteTo(du16, hn::BitCast(di, h)), du16, p);
#endif
}

template <class DF>
HWY_INLINE hn::Vec<DF> LoadF16(DF df, const uint16_t* HWY_RESTRICT p) {
  const hn::Rebind<uint16_t, DF> du16;
#if GW_CODEC_NATIVE_F16
  const hn::Rebind<hwy::float16_t, DF> df16;
  return hn::PromoteTo(df, hn::BitCast(df16, hn::LoadU(du16, p)));
#else
  const hn::RebindToUnsigned<DF> du;
  const hn::RebindToSigned<DF> di;
  const auto h = hn::PromoteTo(du, hn::LoadU(du16, p));
  const auto e = hn::And(hn::ShiftRight<10>(h), hn::Set(du, 0x1fu));
  const auto m = hn::And(h, hn::Set(du, 0x3ffu));
  const auto sign = hn::ShiftLeft<16>(hn::And(h, hn::Set(du, 0x8000u)));
  const auto normal = hn::Or(hn::ShiftLeft<23>(hn::Add(e, hn::Set(du, 112u))), hn::ShiftLeft<13>(m));
  const auto sub = hn::BitCast(du, hn::Mul(hn::ConvertTo(df, hn::BitCast(di, m)),
                                           hn::Set(df, 5.9604644775390625e-8f)));
  const auto m_is_zero = hn::RebindMask(du, hn::Eq(hn::BitCast(di, m), hn::Zero(di)));
  const auto infnan = hn::IfThenElse(m_is_zero, hn::Set(du, 0x7f800000u),
                                     hn::Or(hn::Set(du, 0x7fc00000u), hn::ShiftLeft<13>(m)));
  const auto ei = hn::BitCast(di, e);
  auto u = hn::IfThenElse(hn::RebindMask(du, hn::Eq(ei, hn::Zero(di))), sub, normal);
  u = hn::IfThenElse(hn::RebindMask(du, hn::Eq(ei, hn::Set(di, 0x1f))), infnan, u);
  return hn::BitCast(df, hn::Or(u, sign));
#endif
}

template <class DF>
HWY_INLINE void StoreBF16(DF df, hn::Vec<DF> v, uint16_t* HWY_RESTRICT p) {
  (void)df;
  const hn::Rebind<uint16_t, DF> du16;
  const hn::RebindToUnsigned<DF> du;
  const hn::RebindToSigned<DF> di;
  const auto u = hn::BitCast(du, v);
  const auto rounded = hn::ShiftRight<16>(
      hn::Add(hn::Add(u, hn::Set(du, 0x7fffu)), hn::And(hn::ShiftRight<16>(u), hn::Set(du, 1u))));
  const auto nan = hn::Or(hn::ShiftRight<16>(u), hn::Set(du, 0x40u));
  const auto is_nan = hn::Gt(hn::BitCast(di, hn::And(u, hn::Set(du, 0x7fffffffu))), hn::Set(di, 0x7f800000));
  const auto b = hn::IfThenElse(hn::RebindMask(du, is_nan), nan, rounded);
  hn::StoreU(hn::DemoteTo(du16, hn::BitCast(di, b)), du16, p);
}

template <class DF>
HWY_INLINE hn::Vec<DF> LoadBF16(DF df, const uint16_t* HWY_RESTRICT p) {
  const hn::Rebind<uint16_t, DF> du16;
  const hn::RebindToUnsigned<DF> du;
  return hn::BitCast(df, hn::ShiftLeft<16>(hn::PromoteTo(du, hn::LoadU(du16, p))));
}

// f32/f16/bf16 array -> f32 array.
inline void ConvertToF32(gw_dtype dtype, const void* HWY_RESTRICT in, float* HWY_RESTRICT out, size_t n) {
  const hn::ScalableTag<float> df;
  const size_t L = hn::Lanes(df);
  size_t i = 0;
  if (dtype == GW_DTYPE_F32) {
    const float* src = static_cast<const float*>(in);
    for (; i < n; ++i) out[i] = src[i];
    return;
  }
  const uint16_t* src = static_cast<const uint16_t*>(in);
  if (dtype == GW_DTYPE_F16) {
    for (; i + L <= n; i += L) hn::StoreU(LoadF16(df, src + i), df, out + i);
    for (; i < n; ++i) out[i] = f16_to_f32(src[i]);
  } else {
    for (; i + L <= n; i += L) hn::StoreU(LoadBF16(df, src + i), df, out + i);
    for (; i < n; ++i) out[i] = bf16_to_f32(src[i]);
  }
}

// f32 array -> f32/f16/bf16 array; with accumulate, out = round(out + in).
inline void ConvertFromF32(gw_dtype dtype, const float* HWY_RESTRICT in, void* HWY_RESTRICT out, size_t n,
                           bool accumulate) {
  const hn::ScalableTag<float> df;
  const size_t L = hn::Lanes(df);
  size_t i = 0;
  if (dtype == GW_DTYPE_F32) {
    float* dst = static_cast<float*>(out);
    if (accumulate) {
      for (; i < n; ++i) dst[i] += in[i];
    } else {
      for (; i < n; ++i) dst[i] = in[i];
    }
    return;
  }
  uint16_t* dst = static_cast<uint16_t*>(out);
  if (dtype == GW_DTYPE_F16) {
    for (; i + L <= n; i += L) {
      auto v = hn::LoadU(df, in + i);
      if (accumulate) v = hn::Add(LoadF16(df, dst + i), v);
      StoreF16(df, v, dst + i);
    }
    for (; i < n; ++i) dst[i] = f32_to_f16(accumulate ? f16_to_f32(dst[i]) + in[i] : in[i]);
  } else {
    for (; i + L <= n; i += L) {
      auto v = hn::LoadU(df, in + i);
      if (accumulate) v = hn::Add(LoadBF16(df, dst + i), v);
      StoreBF16(df, v, dst + i);
    }
    for (; i < n; ++i) dst[i] = f32_to_bf16(accumulate ? bf16_to_f32(dst[i]) + in[i] : in[i]);
  }
}

}  // namespace HWY_NAMESPACE
}  // namespace gwc
HWY_AFTER_NAMESPACE();

#endif  // GW_CODEC_SIMD_CONVERT_INL_H_
