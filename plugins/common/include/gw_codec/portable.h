/*
 * gw_codec/portable.h — scalar building blocks that give the same bits on the CPU and in CUDA.
 *
 * Every function is GW_HD (__host__ __device__ under nvcc, plain inline elsewhere), so a CPU kernel,
 * a CUDA kernel and a test all compute the same bytes from the same definition. API:
 *
 *   uint32_t gwc::f32_bits(float)              float  gwc::f32_from_bits(uint32_t)
 *   uint16_t gwc::f32_to_f16(float)            float  gwc::f16_to_f32(uint16_t)
 *   uint16_t gwc::f32_to_bf16(float)           float  gwc::bf16_to_f32(uint16_t)
 *       gradwire's one conversion (gw_kernels/fp16.h, also the runtime's): round to nearest even,
 *       overflow to +-inf (fp16: |x| >= 65520); a NaN keeps its sign and payload, quieted (F16C's
 *       rule, so the vector path may use it). f16/bf16 -> f32 is exact.
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

#include <gw_kernels/fp16.h> /* runtime/kernels/include: the conversions, shared with the runtime */
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

// The conversions are gradwire's one fp16/bf16 implementation, shared with the runtime's reductions.
using gw::kernels::add_rn;
using gw::kernels::bf16_to_f32;
using gw::kernels::f16_to_f32;
using gw::kernels::f32_bits;
using gw::kernels::f32_from_bits;
using gw::kernels::f32_to_bf16;
using gw::kernels::f32_to_f16;
using gw::kernels::mul_rn;

constexpr uint64_t ceil_div(uint64_t a, uint64_t b) { return a / b + (a % b != 0); }

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
