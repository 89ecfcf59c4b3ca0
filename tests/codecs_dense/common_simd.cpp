// Per-target entry points into gw_codec/simd_convert-inl.h for common_test.cpp: each target's vector
// conversions are run by the test and compared with the scalar definitions in portable.h.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "common_simd.cpp"
#include "hwy/foreach_target.h"  // IWYU pragma: keep

#include "gw_codec/simd_convert-inl.h"
#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace gwc_test {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

void ToF16(const float* in, uint16_t* out, size_t n) {
  const hn::ScalableTag<float> df;
  for (size_t i = 0; i + hn::Lanes(df) <= n; i += hn::Lanes(df))
    gwc::HWY_NAMESPACE::StoreF16(df, hn::LoadU(df, in + i), out + i);
}
void FromF16(const uint16_t* in, float* out, size_t n) {
  const hn::ScalableTag<float> df;
  for (size_t i = 0; i + hn::Lanes(df) <= n; i += hn::Lanes(df))
    hn::StoreU(gwc::HWY_NAMESPACE::LoadF16(df, in + i), df, out + i);
}
void ToBF16(const float* in, uint16_t* out, size_t n) {
  const hn::ScalableTag<float> df;
  for (size_t i = 0; i + hn::Lanes(df) <= n; i += hn::Lanes(df))
    gwc::HWY_NAMESPACE::StoreBF16(df, hn::LoadU(df, in + i), out + i);
}
void FromBF16(const uint16_t* in, float* out, size_t n) {
  const hn::ScalableTag<float> df;
  for (size_t i = 0; i + hn::Lanes(df) <= n; i += hn::Lanes(df))
    hn::StoreU(gwc::HWY_NAMESPACE::LoadBF16(df, in + i), df, out + i);
}

}  // namespace HWY_NAMESPACE
}  // namespace gwc_test
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include "common_simd.hpp"
namespace gwc_test {
HWY_EXPORT(ToF16);
HWY_EXPORT(FromF16);
HWY_EXPORT(ToBF16);
HWY_EXPORT(FromBF16);
void simd_to_f16(const float* in, uint16_t* out, size_t n) { HWY_DYNAMIC_DISPATCH(ToF16)(in, out, n); }
void simd_from_f16(const uint16_t* in, float* out, size_t n) { HWY_DYNAMIC_DISPATCH(FromF16)(in, out, n); }
void simd_to_bf16(const float* in, uint16_t* out, size_t n) { HWY_DYNAMIC_DISPATCH(ToBF16)(in, out, n); }
void simd_from_bf16(const uint16_t* in, float* out, size_t n) { HWY_DYNAMIC_DISPATCH(FromBF16)(in, out, n); }
}  // namespace gwc_test
#endif
