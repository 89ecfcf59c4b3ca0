/*
 * gw_codec/portable.h — scalar building blocks that give the same bits on the CPU and in CUDA.
 *
 * Every function is GW_HD (__host__ __device__ under nvcc, plain inline elsewhere), so a CPU kernel,
 * a CUDA kernel and a test all compute the same bytes from the same definition. API:
 *
 *   uint32_t gwc::f32_bits(float)              float  gwc::f32_from_bits(uint32_t)
 *   uint16_t gwc::f32_to_f16(float)            float  gwc::f16_to_f32(uint16_t)
 *   uint16_t gwc::f32_to_bf16(float)           float  gwc::bf16_to_f32(uint16_t)
 *       f32 -> f16/bf16 round to nearest, ties to even (IEEE 754 default). Overflow gives +-inf
 *       (fp16: |x| >= 65520). NaN stays NaN with the quiet bit set and the top mantissa bits kept,
 *       which is also what x86 F16C (vcvtps2ph) does, so the vector path may use it.
 *       f16/bf16 -> f32 is exact (a NaN comes back quieted, as vcvtph2ps does).
 *   float gwc::mul_rn(float, float), gwc::add_rn(float, float)
 *       a product / sum rounded once, never contracted into an FMA (nvcc fuses a*b+c by default).
 *   uint32_t gwc::load_le32(const void*), uint16_t gwc::load_le16, uint64_t gwc::load_le64,
 *   void gwc::store_le32(void*, uint32_t), store_le16, store_le64
 *       unaligned little-endian access to wire bytes (host code only).
 *   constexpr uint64_t gwc::ceil_div(uint64_t a, uint64_t b)
 *
 * The wire format is little-endian; the CPU kernels read and write element arrays in host order,
 * so the build refuses a big-endian host rather than produce bytes another rank misreads.
 */
#ifndef GW_CODEC_PORTABLE_H
#define GW_CODEC_PORTABLE_H

#include <stdint.h>

#include <cstring>

#if defined(__CUDACC__)
#define GW_HD __host__ __device__ __forceinline__
#else
#define GW_HD inline
#endif

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "gradwire codecs write little-endian wire bytes with host-order stores; port the load/store helpers first"
#endif

namespace gwc {

GW_HD uint32_t f32_bits(float f) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(f);
#else
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
#endif
}

GW_HD float f32_from_bits(uint32_t u) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(u);
#else
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
#endif
}

GW_HD float mul_rn(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fmul_rn(a, b);
#else
  return a * b;  // C++ host code is built with -ffp-contract=off semantics (ISO C++ mode)
#endif
}

GW_HD float add_rn(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fadd_rn(a, b);
#else
  return a + b;
#endif
}

constexpr uint64_t ceil_div(uint64_t a, uint64_t b) { return a / b + (a % b != 0); }

/* f32 -> f16, round to nearest even. Normal results round the rebiased bits (the carry into the
 * exponent is the correct result, up to infinity); subnormal results let the FPU round by adding
 * 0.5f, whose ulp is 2^-24, the fp16 subnormal step. */
GW_HD uint16_t f32_to_f16(float f) {
  const uint32_t u = f32_bits(f);
  const uint32_t sign = (u >> 16) & 0x8000u;
  const uint32_t a = u & 0x7fffffffu;
  uint32_t h;
  if (a >= 0x7f800000u) {
    h = a > 0x7f800000u ? (0x7e00u | ((a >> 13) & 0x3ffu)) : 0x7c00u;
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

GW_HD float f16_to_f32(uint16_t h) {
  const uint32_t sign = ((uint32_t)h & 0x8000u) << 16;
  const uint32_t e = ((uint32_t)h >> 10) & 0x1fu;
  const uint32_t m = (uint32_t)h & 0x3ffu;
  uint32_t u;
  if (e == 0x1fu) {
    u = m ? (0x7fc00000u | (m << 13)) : 0x7f800000u;
  } else if (e == 0) {
    // m * 2^-24, exact in fp32.
    return f32_from_bits(sign | f32_bits(mul_rn((float)m, 5.9604644775390625e-8f)));
  } else {
    u = ((e + 112u) << 23) | (m << 13);
  }
  return f32_from_bits(sign | u);
}

GW_HD uint16_t f32_to_bf16(float f) {
  const uint32_t u = f32_bits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40u);
  return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

GW_HD float bf16_to_f32(uint16_t b) { return f32_from_bits((uint32_t)b << 16); }

inline uint16_t load_le16(const void* p) {
  uint16_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
inline uint32_t load_le32(const void* p) {
  uint32_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
inline uint64_t load_le64(const void* p) {
  uint64_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
inline void store_le16(void* p, uint16_t v) { std::memcpy(p, &v, sizeof v); }
inline void store_le32(void* p, uint32_t v) { std::memcpy(p, &v, sizeof v); }
inline void store_le64(void* p, uint64_t v) { std::memcpy(p, &v, sizeof v); }

}  // namespace gwc

#endif /* GW_CODEC_PORTABLE_H */
