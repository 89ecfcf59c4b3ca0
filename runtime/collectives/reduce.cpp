#include "collectives/reduce.hpp"

#include <algorithm>
#include <bit>
#include <cstring>

#include "core/error.hpp"

namespace gw::coll {

float half_to_float(uint16_t h) {
  const uint32_t sign = uint32_t(h & 0x8000u) << 16;
  const uint32_t shifted = uint32_t(h & 0x7fffu) << 13;  // exponent and mantissa in float position
  const uint32_t exponent = shifted & 0x0f800000u;
  uint32_t bits = shifted + ((127u - 15u) << 23);
  if (exponent == 0x0f800000u) {
    bits += (128u - 16u) << 23;  // inf / NaN keep an all-ones exponent
  } else if (exponent == 0) {    // subnormal: renormalize through a float subtraction
    bits += 1u << 23;
    bits = std::bit_cast<uint32_t>(std::bit_cast<float>(bits) - std::bit_cast<float>(113u << 23));
  }
  return std::bit_cast<float>(bits | sign);
}

uint16_t float_to_half(float f) {
  constexpr uint32_t kInfinity = 255u << 23;
  constexpr uint32_t kHalfOverflow = (127u + 16u) << 23;         // first float too large for a half
  constexpr uint32_t kDenormMagic = ((127u - 15u) + (23u - 10u) + 1u) << 23;
  uint32_t u = std::bit_cast<uint32_t>(f);
  const uint32_t sign = u & 0x80000000u;
  u ^= sign;
  uint16_t out;
  if (u >= kHalfOverflow) {
    out = u > kInfinity ? 0x7e00 : 0x7c00;  // NaN stays NaN, the rest overflows to inf
  } else if (u < (113u << 23)) {            // result is subnormal: let float addition round it
    const float rounded = std::bit_cast<float>(u) + std::bit_cast<float>(kDenormMagic);
    out = uint16_t(std::bit_cast<uint32_t>(rounded) - kDenormMagic);
  } else {
    const uint32_t odd = (u >> 13) & 1u;  // round to nearest, ties to even
    u += ((15u - 127u) << 23) + 0xfffu + odd;
    out = uint16_t(u >> 13);
  }
  return uint16_t(out | (sign >> 16));
}

float bf16_to_float(uint16_t h) { return std::bit_cast<float>(uint32_t(h) << 16); }

uint16_t float_to_bf16(float f) {
  const uint32_t u = std::bit_cast<uint32_t>(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return uint16_t((u >> 16) | 0x40u);  // quiet NaN
  return uint16_t((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

namespace {

struct Sum {
  template <class T>
  T operator()(T a, T b) const { return a + b; }
};
struct Min {
  template <class T>
  T operator()(T a, T b) const { return b < a ? b : a; }
};
struct Max {
  template <class T>
  T operator()(T a, T b) const { return a < b ? b : a; }
};

template <class T, class Op>
void combine(T* dst, const T* a, const T* b, uint64_t n, Op op) {
  for (uint64_t i = 0; i < n; ++i) dst[i] = op(a[i], b[i]);
}

// Halves: widen a block to fp32, combine, narrow once.
template <class Op, float (*Widen)(uint16_t), uint16_t (*Narrow)(float)>
void combine_half(uint16_t* dst, const uint16_t* a, const uint16_t* b, uint64_t n, Op op) {
  constexpr uint64_t kBlock = 256;
  float fa[kBlock], fb[kBlock];
  for (uint64_t start = 0; start < n; start += kBlock) {
    const uint64_t len = std::min(kBlock, n - start);
    for (uint64_t i = 0; i < len; ++i) fa[i] = Widen(a[start + i]);
    for (uint64_t i = 0; i < len; ++i) fb[i] = Widen(b[start + i]);
    for (uint64_t i = 0; i < len; ++i) dst[start + i] = Narrow(op(fa[i], fb[i]));
  }
}

template <class Op>
void dispatch(void* dst, const void* a, const void* b, uint64_t n, gw_dtype dtype, Op op) {
  switch (dtype) {
    case GW_DTYPE_F32: return combine(static_cast<float*>(dst), static_cast<const float*>(a), static_cast<const float*>(b), n, op);
    case GW_DTYPE_F64: return combine(static_cast<double*>(dst), static_cast<const double*>(a), static_cast<const double*>(b), n, op);
    case GW_DTYPE_I32: return combine(static_cast<int32_t*>(dst), static_cast<const int32_t*>(a), static_cast<const int32_t*>(b), n, op);
    case GW_DTYPE_I64: return combine(static_cast<int64_t*>(dst), static_cast<const int64_t*>(a), static_cast<const int64_t*>(b), n, op);
    case GW_DTYPE_F16:
      return combine_half<Op, half_to_float, float_to_half>(static_cast<uint16_t*>(dst), static_cast<const uint16_t*>(a),
                                                            static_cast<const uint16_t*>(b), n, op);
    case GW_DTYPE_BF16:
      return combine_half<Op, bf16_to_float, float_to_bf16>(static_cast<uint16_t*>(dst), static_cast<const uint16_t*>(a),
                                                            static_cast<const uint16_t*>(b), n, op);
    default: fail(GW_ERR_UNSUPPORTED, std::string("reductions do not support dtype ") + gw_dtype_name(dtype));
  }
}

template <class T>
void divide_ints(T* p, uint64_t n, uint32_t d) {
  for (uint64_t i = 0; i < n; ++i) p[i] = T(p[i] / T(d));
}

}  // namespace

void reduce(void* dst, const void* a, const void* b, uint64_t count, gw_dtype dtype, gw_reduce_op op) {
  switch (op) {
    case GW_REDUCE_SUM:
    case GW_REDUCE_AVG: return dispatch(dst, a, b, count, dtype, Sum{});
    case GW_REDUCE_MIN: return dispatch(dst, a, b, count, dtype, Min{});
    case GW_REDUCE_MAX: return dispatch(dst, a, b, count, dtype, Max{});
    default: fail(GW_ERR_INVALID_ARGUMENT, "unknown reduce op " + std::to_string(int(op)));
  }
}

void divide(void* buf, uint64_t count, gw_dtype dtype, uint32_t n) {
  switch (dtype) {
    // Dividing by a power of two and multiplying by its inverse have the same exact value, so they round
    // alike: the multiplication (several times the throughput of a division) gives the same bits.
    case GW_DTYPE_F32: {
      auto* p = static_cast<float*>(buf);
      if (std::has_single_bit(n)) {
        const float inverse = 1.0f / float(n);
        for (uint64_t i = 0; i < count; ++i) p[i] *= inverse;
      } else {
        for (uint64_t i = 0; i < count; ++i) p[i] /= float(n);
      }
      return;
    }
    case GW_DTYPE_F64: {
      auto* p = static_cast<double*>(buf);
      if (std::has_single_bit(n)) {
        const double inverse = 1.0 / double(n);
        for (uint64_t i = 0; i < count; ++i) p[i] *= inverse;
      } else {
        for (uint64_t i = 0; i < count; ++i) p[i] /= double(n);
      }
      return;
    }
    case GW_DTYPE_I32: return divide_ints(static_cast<int32_t*>(buf), count, n);
    case GW_DTYPE_I64: return divide_ints(static_cast<int64_t*>(buf), count, n);
    case GW_DTYPE_F16: {
      auto* p = static_cast<uint16_t*>(buf);
      for (uint64_t i = 0; i < count; ++i) p[i] = float_to_half(half_to_float(p[i]) / float(n));
      return;
    }
    case GW_DTYPE_BF16: {
      auto* p = static_cast<uint16_t*>(buf);
      for (uint64_t i = 0; i < count; ++i) p[i] = float_to_bf16(bf16_to_float(p[i]) / float(n));
      return;
    }
    default: fail(GW_ERR_UNSUPPORTED, std::string("reductions do not support dtype ") + gw_dtype_name(dtype));
  }
}

}  // namespace gw::coll
