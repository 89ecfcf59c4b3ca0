// IEEE binary16 for tests, independent of gradwire's own conversions: the compiler's _Float16 where it
// has one (GCC 12 on x86-64), else the CPU's F16C instructions (clang 14 has no _Float16 on x86-64;
// every x86-64 CPU since 2012 has F16C). Both round to nearest even.
#pragma once

#include <cstdint>
#include <cstring>

#if defined(__FLT16_MANT_DIG__)
namespace gwtest {
inline uint16_t half_from_float(float f) {
  const _Float16 h = static_cast<_Float16>(f);
  uint16_t bits;
  std::memcpy(&bits, &h, 2);
  return bits;
}
inline float float_from_half(uint16_t bits) {
  _Float16 h;
  std::memcpy(&h, &bits, 2);
  return static_cast<float>(h);
}
}  // namespace gwtest
#elif defined(__x86_64__)
#include <immintrin.h>
namespace gwtest {
__attribute__((target("f16c"))) inline uint16_t half_from_float(float f) {
  const __m128i h = _mm_cvtps_ph(_mm_set_ss(f), _MM_FROUND_TO_NEAREST_INT);
  return static_cast<uint16_t>(_mm_cvtsi128_si32(h) & 0xffff);
}
__attribute__((target("f16c"))) inline float float_from_half(uint16_t bits) { return _cvtsh_ss(bits); }
}  // namespace gwtest
#else
#error "tests/support/half_oracle.hpp: this compiler has no _Float16 and this is not x86-64"
#endif
