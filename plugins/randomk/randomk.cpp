// The randomk codec plugin: keeps k coordinates drawn from the seed all ranks share
// (randomk_coords.hpp), so the body carries values only. CPU always; CUDA tensors through
// randomk_cuda.cu when the build has CUDA.
//
// Body (docs/wire-format.md, "randomk"), little-endian:
//   offset 0  u8   value format (0 fp32, 1 fp16)
//   offset 1  u8   flags: bit 0 = values were scaled by their stratum length (rescale = true)
//   offset 2  u16  reserved, 0
//   offset 4  u32  k
//   offset 8  u64  seed   } the coordinates' stream: the decoder draws from these, not from its
//   offset 16 u64  step   } own context, so any rank decodes any payload
//   offset 24 k values, 4 or 2 bytes each, in coordinate order
#include <gradwire/plugin.h>

#include <algorithm>
#include <string>
#include <vector>

#include "gw_codec/sparse.hpp"
#include "gw_codec/sparse_codec.hpp"
#include "randomk_body.hpp"
#include "randomk_coords.hpp"
#include "randomk_cuda.hpp"

namespace gwrandomk {
namespace {

uint32_t element_bits(const void* data, gw_dtype dtype, uint64_t i) {
  if (dtype == GW_DTYPE_F32) return gwc::load_le32(static_cast<const uint8_t*>(data) + 4 * i);
  return gwc::load_le16(static_cast<const uint8_t*>(data) + 2 * i);
}

// The coordinates in order, as stratum() draws them (randomk_coords.hpp, which the CUDA kernels call),
// one Philox block per four. The strata's bounds floor(j n / k) advance by quotient and remainder
// instead of two divisions per coordinate.
class Coordinates {
 public:
  Coordinates(const Preamble& p, uint64_t n)
      : stream_(coordinate_stream(p.seed, p.step)), k_(p.k), step_(k_ ? n / k_ : 0), extra_(k_ ? n % k_ : 0) {}

  Stratum next() {
    if ((j_ & 3u) == 0) stream_.block(j_ >> 2, words_);
    uint64_t end = start_ + step_;
    remainder_ += extra_;
    if (remainder_ >= k_) remainder_ -= k_, ++end;
    const Stratum s = draw(start_, end - start_, words_[j_++ & 3u]);
    start_ = end;
    return s;
  }

 private:
  gwc::RandomStream stream_;
  uint64_t k_, step_, extra_;
  uint64_t j_ = 0, start_ = 0, remainder_ = 0;  // start_ = floor(j n / k), remainder_ = j n mod k
  uint32_t words_[4] = {};
};

// Calls fn(j, stratum) for j in [0, k).
template <class Fn>
void for_each_coordinate(const Preamble& p, uint64_t n, Fn&& fn) {
  Coordinates c(p, n);
  for (uint64_t j = 0; j < p.k; ++j) fn(j, c.next());
}

// As for_each_coordinate, with each coordinate's element of `in` prefetched a block of coordinates
// ahead. One element is kept per stratum, n / k elements apart: read as they are drawn, each load misses
// the caches and waits for the one before (encoding was bound by memory latency). Drawn a block ahead,
// the block's loads are in flight together.
template <class Fn>
void for_each_coordinate_prefetched(const Preamble& p, const gw_tensor& in, Fn&& fn) {
  constexpr uint64_t kBlock = 64;
  Stratum block[kBlock];
  const uint64_t size = gwc::dtype_size(in.dtype);
  const auto* data = static_cast<const uint8_t*>(in.data);
  Coordinates c(p, in.count);
  for (uint64_t first = 0; first < p.k; first += kBlock) {
    const uint64_t m = std::min(kBlock, p.k - first);
    for (uint64_t i = 0; i < m; ++i) {
      block[i] = c.next();
#if defined(__GNUC__) || defined(__clang__)
      __builtin_prefetch(data + size * block[i].position);
#endif
    }
    for (uint64_t i = 0; i < m; ++i) fn(first + i, block[i]);
  }
}

class RandomK final : public gwc::SparseCodec<CudaRandomK> {
 public:
  RandomK(const gw_host* host, gwc::ConfigReader& cfg)
      : SparseCodec(host, "randomk", GW_CODEC_SPARSE | GW_CODEC_SHARED_INDICES | GW_CODEC_STATEFUL),
        count_(gwc::read_sparse_count(cfg, "randomk")),
        values_(gwc::read_sparse_values(cfg, "randomk")),
        rescale_(cfg.get_bool("rescale", false)) {}

 private:
  uint64_t body_bound(uint64_t count) const override {
    return body_bytes(values_, gwc::sparse_target_count(count, count_));
  }

  uint64_t encode_checked(const gw_codec_context& ctx, const gw_tensor& in, void* body, uint64_t capacity) override {
    Preamble p;
    p.values = values_;
    p.rescaled = rescale_;
    p.k = gwc::sparse_target_count(in.count, count_);
    p.seed = ctx.seed;
    p.step = ctx.step;
    const uint64_t bytes = body_bytes(values_, p.k);
    gwc::check_capacity(*this, bytes, capacity, body);
    if (in.memory == GW_MEMORY_CUDA) {
      cuda_.get().encode(*this, p, in, body);
      return bytes;
    }
    auto* out = static_cast<uint8_t*>(body);
    write_preamble(p, out);
    uint8_t* values = out + kPreambleBytes;
    const uint32_t vb = gwc::sparse_value_bytes(values_);
    for_each_coordinate_prefetched(p, in, [&](uint64_t j, Stratum s) {
      float v = gwc::element_to_f32(in.dtype, element_bits(in.data, in.dtype, s.position));
      if (rescale_) v = gwc::mul_rn(v, static_cast<float>(s.length));
      gwc::write_sparse_value(values_, values + vb * j, gwc::sparse_value_bits(values_, v));
    });
    return bytes;
  }

  void decode_host(const uint8_t* body, uint64_t size, gw_tensor& out, bool accumulate) override {
    Preamble p;
    std::string error;
    if (!parse_preamble(body, size, out.count, p, error)) corrupt(error);
    index_.resize(p.k);
    for_each_coordinate(p, out.count, [&](uint64_t j, Stratum s) { index_[j] = static_cast<uint32_t>(s.position); });
    gwc::scatter_sparse_values(p.values, body + kPreambleBytes, index_.data(), p.k, out.dtype, out.data, out.count,
                               accumulate);
  }

  gwc::SparseCount count_;
  gwc::SparseValues values_;
  bool rescale_;
  std::vector<uint32_t> index_;
};

constexpr gw_config_key kKeys[] = {
    gwc::kSparseRatioKey,
    gwc::kSparseKKey,
    gwc::kSparseValuesKey,
    {sizeof(gw_config_key), "rescale", GW_CONFIG_BOOL, "false",
     "Scale each kept value by its stratum length (about n / k) so the decoded tensor is unbiased.", 1.0, 0.0,
     nullptr},
};

constexpr gwc::CodecText kText = {
    "randomk", "Sparse: keeps k coordinates drawn from the shared seed; sends values only.",
    "Random-k sparsification codec with shared-seed coordinates (CPU, CUDA when built with it)"};

}  // namespace
}  // namespace gwrandomk

GW_PLUGIN_EXPORT const gw_plugin_descriptor* gw_plugin_entry(uint32_t host_abi_major, uint32_t) {
  return gwc::CodecPlugin<gwrandomk::RandomK, gwrandomk::kText, gwrandomk::kKeys>::entry(host_abi_major);
}
