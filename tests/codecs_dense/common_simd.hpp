// Dispatching wrappers over common_simd.cpp (whole vectors only: n is rounded down to the lanes).
#pragma once
#include <cstddef>
#include <cstdint>
namespace gwc_test {
void simd_to_f16(const float* in, uint16_t* out, size_t n);
void simd_from_f16(const uint16_t* in, float* out, size_t n);
void simd_to_bf16(const float* in, uint16_t* out, size_t n);
void simd_from_bf16(const uint16_t* in, float* out, size_t n);
}  // namespace gwc_test
