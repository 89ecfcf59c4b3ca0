// gw_codec/convert.hpp — dtype conversion of host arrays with Highway run-time dispatch
// (library gw_codec_simd). Same bytes as gw_codec/portable.h on every target.
//
//   gwc::convert_to_f32(dtype, in, out, n)            f32/f16/bf16 -> f32
//   gwc::convert_from_f32(dtype, in, out, n, acc)     f32 -> f32/f16/bf16; acc: out = round(out + in)
//   gwc::for_each_f32_chunk(...)                      see below: run an f32 kernel over any input dtype
#pragma once

#include <gradwire/types.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace gwc {

void convert_to_f32(gw_dtype dtype, const void* in, float* out, size_t n);
void convert_from_f32(gw_dtype dtype, const float* in, void* out, size_t n, bool accumulate);

// Elements per conversion chunk: small enough to stay in L2 between the conversion and the kernel.
inline constexpr size_t kChunkElements = 1u << 14;

// Calls fn(const float* chunk, begin, end) over [0, n) in chunks whose boundaries are multiples of
// `align` elements (the last one excepted). For f32 input the chunk points into the input; otherwise
// into `scratch`, converted first. align may exceed kChunkElements (then chunks are `align` long).
template <class Fn>
void for_each_f32_chunk(gw_dtype dtype, const void* in, uint64_t n, uint64_t align, std::vector<float>& scratch,
                        Fn&& fn) {
  const uint64_t step = std::max<uint64_t>(align, kChunkElements / align * align);
  if (dtype == GW_DTYPE_F32) {
    fn(static_cast<const float*>(in), uint64_t{0}, n);
    return;
  }
  scratch.resize(static_cast<size_t>(std::min(step, n)));
  const auto* bytes = static_cast<const uint8_t*>(in);
  for (uint64_t b = 0; b < n; b += step) {
    const uint64_t e = std::min(n, b + step);
    convert_to_f32(dtype, bytes + b * 2, scratch.data(), static_cast<size_t>(e - b));
    fn(scratch.data(), b, e);
  }
}

}  // namespace gwc
