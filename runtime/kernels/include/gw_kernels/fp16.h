/*
 * gw_kernels/fp16.h — the one fp16/bf16 <-> fp32 conversion of gradwire, shared by the runtime (its
 * reductions and codec staging) and the codec plugins (gw_codec/portable.h), header-only, the same bits
 * on the CPU and in CUDA (every function is __host__ __device__ under nvcc, plain inline elsewhere).
 *
 *   uint16_t gw::kernels::f32_to_f16(float)    float gw::kernels::f16_to_f32(uint16_t)
 *   uint16_t gw::kernels::f32_to_bf16(float)   float gw::kernels::bf16_to_f32(uint16_t)
 *   uint32_t gw::kernels::f32_bits(float)      float gw::kernels::f32_from_bits(uint32_t)
 *   float gw::kernels::mul_rn(float, float), add_rn(float, float): rounded once, never fused into an FMA
 *
 * Rounding: f32 -> f16/bf16 round to nearest, ties to even (IEEE 754's default); fp16 overflows to
 * +-inf from |x| >= 65520. f16/bf16 -> f32 is exact.
 *
 * NaN, one rule (docs/wire-format.md): a NaN stays a NaN of the same sign and keeps its payload, quieted
 * the IEEE way. f32 -> f16 keeps the top 10 payload bits and sets the quiet bit (0x0200); f32 -> bf16
 * keeps the top 7 and sets 0x0040; f16 -> f32 sets the f32 quiet bit (0x00400000) over the payload. This
 * is what x86 F16C (vcvtps2ph / vcvtph2ps) does, so vector paths may use it and give the same bits.
 * bf16 -> f32 is the exact widening (a shift) and leaves the quiet bit as it was: fp32 arithmetic quiets
 * a signalling NaN, and the conversion back to bf16 sets the bit in any case.
 */
#ifndef GW_KERNELS_FP16_H
#define GW_KERNELS_FP16_H

#include <stdint.h>

#include <cstring>

#if defined(__CUDACC__)
#define GW_KERNEL_HD __host__ __device__ __forceinline__
#else
#define GW_KERNEL_HD inline
#endif

namespace gw {
namespace kernels {

GW_KERNEL_HD uint32_t f32_bits(float f) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(f);
#else
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
#endif
}

GW_KERNEL_HD float f32_from_bits(uint32_t u) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(u);
#else
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
#endif
}

GW_KERNEL_HD float mul_rn(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fmul_rn(a, b);
#else
  return a * b;  // host code: no FMA contraction (-ffp-contract=off where a target could fuse)
#endif
}

GW_KERNEL_HD float add_rn(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fadd_rn(a, b);
#else
  return a + b;
#endif
}

/* f32 -> f16, round to nearest even. Normal results round the rebiased bits (the carry into the
 * exponent is the correct result, up to infinity); subnormal results let the FPU round by adding
 * 0.5f, whose ulp is 2^-24, the fp16 subnormal step. */
GW_KERNEL_HD uint16_t f32_to_f16(float f) {
  const uint32_t u = f32_bits(f);
  const uint32_t sign = (u >> 16) & 0x8000u;
  const uint32_t a = u & 0x7fffffffu;
  uint32_t h;
  if (a >= 0x7f800000u) {
    h = a > 0x7f800000u ? (0x7e00u | ((a >> 13) & 0x3ffu)) : 0x7c00u;  // NaN: quiet, payload kept
  } else if (a >= 0x477ff000u) {  // >= 65520: rounds to infinity
    h = 0x7c00u;
  } else if (a < 0x38800000u) {  // below 2^-14: subnormal or zero
    h = f32_bits(add_rn(f32_from_bits(a), 0.5f)) - 0x3f000000u;
  } else {
    const uint32_t r = a - 0x38000000u;  // exponent bias 127 -> 15
    h = (r + 0xfffu + ((r >> 13) & 1u)) >> 13;
  }
  return (uint16_t)(sign | h);
}

GW_KERNEL_HD float f16_to_f32(uint16_t h) {
  const uint32_t sign = ((uint32_t)h & 0x8000u) << 16;
  const uint32_t e = ((uint32_t)h >> 10) & 0x1fu;
  const uint32_t m = (uint32_t)h & 0x3ffu;
  uint32_t u;
  if (e == 0x1fu) {
    u = m ? (0x7fc00000u | (m << 13)) : 0x7f800000u;  // NaN: quiet, payload kept
  } else if (e == 0) {
    // m * 2^-24, exact in fp32.
    return f32_from_bits(sign | f32_bits(mul_rn((float)m, 5.9604644775390625e-8f)));
  } else {
    u = ((e + 112u) << 23) | (m << 13);
  }
  return f32_from_bits(sign | u);
}

GW_KERNEL_HD uint16_t f32_to_bf16(float f) {
  const uint32_t u = f32_bits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40u);  // NaN: quiet, payload kept
  return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

GW_KERNEL_HD float bf16_to_f32(uint16_t b) { return f32_from_bits((uint32_t)b << 16); }

}  // namespace kernels
}  // namespace gw

#endif /* GW_KERNELS_FP16_H */
