// gw_codec/sparse.hpp — the value half of the sparse codecs (topk, randomk): how a selected element
// is written as a body value and scattered back into a dense tensor. Header-only. API:
//
//   gwc::SparseValues { fp32 = 0, fp16 = 1 }    the value format byte of the body
//   gwc::sparse_value_bytes(f)                  4 or 2
//   gwc::parse_sparse_values(text, &f)          "fp32" | "fp16" -> f; false for anything else
//   gwc::element_to_f32(dtype, bits)  (GW_HD)   an f32/f16/bf16 element given by its bits, as float
//   gwc::sparse_value_bits(f, x)      (GW_HD)   the little-endian value of float x in format f
//                                               (fp16: round to nearest even; fp32: the bits of x)
//   gwc::read_sparse_value(f, p)                the float stored at p (host)
//   gwc::write_sparse_value(f, p, bits)         stores sparse_value_bits' result at p (host)
//   gwc::SparseCount{ratio, k}; gwc::read_sparse_count(cfg, codec)   the `ratio` and `k` keys, checked
//   gwc::read_sparse_values(cfg, codec)         the `values` key ("fp32" | "fp16"), checked
//   gwc::kSparseRatioKey, kSparseKKey, kSparseValuesKey   those keys' gw_config_key entries
//   gwc::sparse_target_count(n, count)          k for n elements: count.k when > 0, else
//                                               round(ratio * n); clamped to [1, n]; 0 when n == 0
//   gwc::scatter_sparse_values(f, values, index, m, dtype, out, n, accumulate)
//       out[index[i]] = value i (accumulate: out[index[i]] = round(out[index[i]] + value i)) for i < m,
//       and, without accumulate, every other element of out set to +0. index must be < n (checked
//       by the caller's parser).
#pragma once

#include <gradwire/types.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>

#include "gw_codec/codec_base.hpp"
#include "gw_codec/portable.h"

namespace gwc {

enum class SparseValues : uint8_t { fp32 = 0, fp16 = 1 };

inline uint32_t sparse_value_bytes(SparseValues f) { return f == SparseValues::fp32 ? 4u : 2u; }

inline bool parse_sparse_values(const std::string& text, SparseValues* f) {
  if (text == "fp32") *f = SparseValues::fp32;
  else if (text == "fp16") *f = SparseValues::fp16;
  else return false;
  return true;
}

struct SparseCount {
  double ratio = 0.01;
  int64_t k = 0;  // 0: use ratio
};

inline SparseCount read_sparse_count(const ConfigReader& cfg, const char* codec) {
  SparseCount c;
  c.ratio = cfg.get_float("ratio", c.ratio);
  c.k = cfg.get_int("k", c.k);
  if (c.k < 0) fail(GW_ERR_CONFIG, std::string("[codec.") + codec + "] k must be >= 0 (0 means: use ratio)");
  if (c.k == 0 && !(c.ratio > 0.0 && c.ratio <= 1.0))
    fail(GW_ERR_CONFIG, std::string("[codec.") + codec + "] ratio must be in (0, 1] (got " +
                            std::to_string(c.ratio) + "), or set k to a positive count");
  return c;
}

inline SparseValues read_sparse_values(const ConfigReader& cfg, const char* codec) {
  const std::string text = cfg.get_string("values", "fp32");
  SparseValues f = SparseValues::fp32;
  if (!parse_sparse_values(text, &f))
    fail(GW_ERR_CONFIG, std::string("[codec.") + codec + "] values must be \"fp32\" or \"fp16\", not \"" + text + "\"");
  return f;
}

inline constexpr gw_config_key kSparseRatioKey = {
    sizeof(gw_config_key), "ratio", GW_CONFIG_FLOAT, "0.01",
    "Fraction of the elements kept (k = round(ratio * n), at least 1); used when k is 0.", 0.0, 1.0, nullptr};
inline constexpr gw_config_key kSparseKKey = {
    sizeof(gw_config_key), "k", GW_CONFIG_INT, "0", "Number of elements kept; 0 means: use ratio.", 0.0,
    4294967295.0, nullptr};
inline constexpr gw_config_key kSparseValuesKey = {
    sizeof(gw_config_key), "values", GW_CONFIG_STRING, "\"fp32\"",
    "Format of the kept values in the payload: fp32, or fp16 rounded to nearest even.", 1.0, 0.0, "fp32|fp16"};

inline uint64_t sparse_target_count(uint64_t n, const SparseCount& c) {
  if (n == 0) return 0;
  const uint64_t k = c.k > 0 ? static_cast<uint64_t>(c.k)
                             : static_cast<uint64_t>(std::llround(c.ratio * static_cast<double>(n)));
  return std::clamp<uint64_t>(k, 1, n);
}

GW_HD float element_to_f32(gw_dtype dtype, uint32_t bits) {
  if (dtype == GW_DTYPE_F32) return f32_from_bits(bits);
  if (dtype == GW_DTYPE_F16) return f16_to_f32((uint16_t)bits);
  return bf16_to_f32((uint16_t)bits);
}

GW_HD uint32_t sparse_value_bits(SparseValues f, float x) {
  return f == SparseValues::fp32 ? f32_bits(x) : (uint32_t)f32_to_f16(x);
}

inline float read_sparse_value(SparseValues f, const uint8_t* p) {
  return f == SparseValues::fp32 ? f32_from_bits(load_le32(p)) : f16_to_f32(load_le16(p));
}

inline void write_sparse_value(SparseValues f, uint8_t* p, uint32_t bits) {
  if (f == SparseValues::fp32) store_le32(p, bits);
  else store_le16(p, (uint16_t)bits);
}

namespace detail {
inline void store_element(gw_dtype dtype, void* out, uint64_t i, float v) {
  if (dtype == GW_DTYPE_F32) std::memcpy(static_cast<float*>(out) + i, &v, 4);
  else {
    const uint16_t h = dtype == GW_DTYPE_F16 ? f32_to_f16(v) : f32_to_bf16(v);
    std::memcpy(static_cast<uint16_t*>(out) + i, &h, 2);
  }
}
inline float load_element(gw_dtype dtype, const void* out, uint64_t i) {
  if (dtype == GW_DTYPE_F32) {
    float v;
    std::memcpy(&v, static_cast<const float*>(out) + i, 4);
    return v;
  }
  uint16_t h;
  std::memcpy(&h, static_cast<const uint16_t*>(out) + i, 2);
  return element_to_f32(dtype, h);
}
}  // namespace detail

inline void scatter_sparse_values(SparseValues f, const uint8_t* values, const uint32_t* index, uint64_t m,
                                  gw_dtype dtype, void* out, uint64_t n, bool accumulate) {
  const uint32_t vb = sparse_value_bytes(f);
  if (!accumulate && n > 0) std::memset(out, 0, n * (dtype == GW_DTYPE_F32 ? 4 : 2));
  for (uint64_t i = 0; i < m; ++i) {
    float v = read_sparse_value(f, values + i * vb);
    if (accumulate) v = add_rn(detail::load_element(dtype, out, index[i]), v);
    detail::store_element(dtype, out, index[i], v);
  }
}

}  // namespace gwc
