// gw_codec/convert.hpp — dtype conversion of host arrays with Highway run-time dispatch
// (library gw_codec_simd). Same bytes as gw_codec/portable.h on every target.
//
//   gwc::convert_to_f32(dtype, in, out, n)            f32/f16/bf16 -> f32
//   gwc::convert_from_f32(dtype, in, out, n, acc)     f32 -> f32/f16/bf16; acc: out = round(out + in)
//   gwc::for_each_f32_chunk(...)                      see below: run an f32 kernel over any input dtype
//   gwc::for_each_f32_output_chunk(...)               see below: an f32 kernel's output into any dtype
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

// Chunk length of for_each_f32_chunk and for_each_f32_output_chunk.
inline uint64_t chunk_step(uint64_t align) { return std::max<uint64_t>(align, kChunkElements / align * align); }

// Calls fn(const float* chunk, begin, end) over [0, n) in chunks whose boundaries are multiples of
// `align` elements (the last one excepted). For f32 input the chunk points into the input; otherwise
// into `scratch`, converted first. align may exceed kChunkElements (then chunks are `align` long).
template <class Fn>
void for_each_f32_chunk(gw_dtype dtype, const void* in, uint64_t n, uint64_t align, std::vector<float>& scratch,
                        Fn&& fn) {
  const uint64_t step = chunk_step(align);
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

// The decoding side: fn(float* y, begin, end, accumulate) writes elements [begin, end) of an output of n
// elements as f32 at y[0 .. end - begin), added to what y holds when accumulate is true. For f32 output
// it is called once over the whole output with the caller's accumulate; otherwise over chunks as in
// for_each_f32_chunk, into `scratch` with accumulate false, each chunk then converted into `out`
// (rounded once; added to what out holds when the caller accumulates).
template <class Fn>
void for_each_f32_output_chunk(gw_dtype dtype, void* out, uint64_t n, uint64_t align, std::vector<float>& scratch,
                               bool accumulate, Fn&& fn) {
  if (dtype == GW_DTYPE_F32) {
    fn(static_cast<float*>(out), uint64_t{0}, n, accumulate);
    return;
  }
  const uint64_t step = chunk_step(align);
  scratch.resize(static_cast<size_t>(std::min(step, n)));
  auto* bytes = static_cast<uint8_t*>(out);
  for (uint64_t b = 0; b < n; b += step) {
    const uint64_t e = std::min(n, b + step);
    fn(scratch.data(), b, e, false);
    convert_from_f32(dtype, scratch.data(), bytes + b * 2, static_cast<size_t>(e - b), accumulate);
  }
}

}  // namespace gwc
