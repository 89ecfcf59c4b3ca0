// CPU kernels of the fp16 and bf16 codecs (gw_codec/half_codec.hpp), Highway dispatch.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "half_kernels.cpp"
#include "hwy/foreach_target.h"  // IWYU pragma: keep

#include "gw_codec/simd_convert-inl.h"
#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace gwc {
namespace HWY_NAMESPACE {

template <bool kBF16>
HWY_INLINE void StoreHalf(hn::ScalableTag<float> df, hn::Vec<hn::ScalableTag<float>> v, uint16_t* p) {
  if constexpr (kBF16) {
    StoreBF16(df, v, p);
  } else {
    StoreF16(df, v, p);
  }
}
template <bool kBF16>
HWY_INLINE hn::Vec<hn::ScalableTag<float>> LoadHalf(hn::ScalableTag<float> df, const uint16_t* p) {
  if constexpr (kBF16) {
    return LoadBF16(df, p);
  } else {
    return LoadF16(df, p);
  }
}

template <bool kBF16>
HWY_INLINE uint16_t ToHalf(float f) {
  return kBF16 ? f32_to_bf16(f) : f32_to_f16(f);
}
template <bool kBF16>
HWY_INLINE float FromHalf(uint16_t h) {
  return kBF16 ? bf16_to_f32(h) : f16_to_f32(h);
}

// x * s, but a NaN passes unchanged so its payload is the same on every target and in CUDA.
template <class DF>
HWY_INLINE hn::Vec<DF> ScaleKeepNaN(DF df, hn::Vec<DF> x, hn::Vec<DF> s) {
  (void)df;
  return hn::IfThenElse(hn::IsNaN(x), x, hn::Mul(x, s));
}

// out[i] = half(in[i] * scale); scale == 1 skips the product (x * 1 == x, also for NaN payloads).
template <bool kBF16>
HWY_INLINE void EncodeHalfImpl(const float* HWY_RESTRICT in, uint16_t* HWY_RESTRICT out, size_t n, float scale) {
  const hn::ScalableTag<float> df;
  const size_t L = hn::Lanes(df);
  const auto vs = hn::Set(df, scale);
  size_t i = 0;
  if (scale == 1.0f) {
    for (; i + 2 * L <= n; i += 2 * L) {
      StoreHalf<kBF16>(df, hn::LoadU(df, in + i), out + i);
      StoreHalf<kBF16>(df, hn::LoadU(df, in + i + L), out + i + L);
    }
    for (; i < n; ++i) out[i] = ToHalf<kBF16>(in[i]);
  } else {
    for (; i + L <= n; i += L) StoreHalf<kBF16>(df, ScaleKeepNaN(df, hn::LoadU(df, in + i), vs), out + i);
    for (; i < n; ++i) out[i] = ToHalf<kBF16>(in[i] != in[i] ? in[i] : in[i] * scale);
  }
}

template <bool kBF16>
HWY_INLINE void DecodeHalfImpl(const uint16_t* HWY_RESTRICT in, float* HWY_RESTRICT out, size_t n, float scale,
                               bool accumulate) {
  const hn::ScalableTag<float> df;
  const size_t L = hn::Lanes(df);
  const auto vs = hn::Set(df, scale);
  const bool scaled = scale != 1.0f;
  size_t i = 0;
  for (; i + L <= n; i += L) {
    auto v = LoadHalf<kBF16>(df, in + i);
    if (scaled) v = ScaleKeepNaN(df, v, vs);
    if (accumulate) v = hn::Add(hn::LoadU(df, out + i), v);
    hn::StoreU(v, df, out + i);
  }
  for (; i < n; ++i) {
    float v = FromHalf<kBF16>(in[i]);
    if (scaled && v == v) v = v * scale;
    out[i] = accumulate ? out[i] + v : v;
  }
}

void EncodeHalf(bool bf16, const float* in, uint16_t* out, size_t n, float scale) {
  bf16 ? EncodeHalfImpl<true>(in, out, n, scale) : EncodeHalfImpl<false>(in, out, n, scale);
}
void DecodeHalf(bool bf16, const uint16_t* in, float* out, size_t n, float scale, bool accumulate) {
  bf16 ? DecodeHalfImpl<true>(in, out, n, scale, accumulate) : DecodeHalfImpl<false>(in, out, n, scale, accumulate);
}

}  // namespace HWY_NAMESPACE
}  // namespace gwc
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include "gw_codec/half_codec.hpp"

namespace gwc {
HWY_EXPORT(EncodeHalf);
HWY_EXPORT(DecodeHalf);

void half_encode(HalfFormat f, const float* in, uint16_t* out, size_t n, float scale) {
  HWY_DYNAMIC_DISPATCH(EncodeHalf)(f == HalfFormat::kBF16, in, out, n, scale);
}
void half_decode(HalfFormat f, const uint16_t* in, float* out, size_t n, float scale, bool accumulate) {
  HWY_DYNAMIC_DISPATCH(DecodeHalf)(f == HalfFormat::kBF16, in, out, n, scale, accumulate);
}
}  // namespace gwc
#endif
