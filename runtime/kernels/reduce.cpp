#include "kernels/reduce.hpp"

#include <algorithm>
#include <bit>
#include <cstring>

#include "core/error.hpp"

namespace gw::coll {

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
      return combine_half<Op, kernels::f16_to_f32, kernels::f32_to_f16>(static_cast<uint16_t*>(dst), static_cast<const uint16_t*>(a),
                                                            static_cast<const uint16_t*>(b), n, op);
    case GW_DTYPE_BF16:
      return combine_half<Op, kernels::bf16_to_f32, kernels::f32_to_bf16>(static_cast<uint16_t*>(dst), static_cast<const uint16_t*>(a),
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
      for (uint64_t i = 0; i < count; ++i) p[i] = kernels::f32_to_f16(kernels::f16_to_f32(p[i]) / float(n));
      return;
    }
    case GW_DTYPE_BF16: {
      auto* p = static_cast<uint16_t*>(buf);
      for (uint64_t i = 0; i < count; ++i) p[i] = kernels::f32_to_bf16(kernels::bf16_to_f32(p[i]) / float(n));
      return;
    }
    default: fail(GW_ERR_UNSUPPORTED, std::string("reductions do not support dtype ") + gw_dtype_name(dtype));
  }
}

}  // namespace gw::coll
