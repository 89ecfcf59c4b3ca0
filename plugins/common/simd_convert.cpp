// Dispatch entry points of gw_codec/convert.hpp.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "simd_convert.cpp"
#include "hwy/foreach_target.h"  // IWYU pragma: keep

#include "gw_codec/simd_convert-inl.h"
#include "hwy/highway.h"

#if HWY_ONCE
#include "gw_codec/convert.hpp"

namespace gwc {
HWY_EXPORT(ConvertToF32);
HWY_EXPORT(ConvertFromF32);

void convert_to_f32(gw_dtype dtype, const void* in, float* out, size_t n) {
  HWY_DYNAMIC_DISPATCH(ConvertToF32)(dtype, in, out, n);
}
void convert_from_f32(gw_dtype dtype, const float* in, void* out, size_t n, bool accumulate) {
  HWY_DYNAMIC_DISPATCH(ConvertFromF32)(dtype, in, out, n, accumulate);
}
}  // namespace gwc
#endif
