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

#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "gw_codec/codec_base.hpp"
#include "gw_codec/sparse.hpp"
#include "randomk_body.hpp"
#include "randomk_coords.hpp"
#if defined(GW_CODEC_WITH_CUDA)
#include "randomk_cuda.hpp"
#endif

namespace gwrandomk {
namespace {

constexpr uint32_t kDtypes = (1u << GW_DTYPE_F32) | (1u << GW_DTYPE_F16) | (1u << GW_DTYPE_BF16);

uint32_t element_bits(const void* data, gw_dtype dtype, uint64_t i) {
  if (dtype == GW_DTYPE_F32) return gwc::load_le32(static_cast<const uint8_t*>(data) + 4 * i);
  return gwc::load_le16(static_cast<const uint8_t*>(data) + 2 * i);
}

// Calls fn(j, stratum) for j in [0, k), one Philox block per four coordinates.
template <class Fn>
void for_each_coordinate(const Preamble& p, uint64_t n, Fn&& fn) {
  const gwc::RandomStream stream = coordinate_stream(p.seed, p.step);
  uint32_t words[4];
  for (uint64_t j = 0; j < p.k; ++j) {
    if ((j & 3u) == 0) stream.block(j >> 2, words);
    fn(j, stratum(j, n, p.k, words[j & 3u]));
  }
}

class RandomK final : public gwc::CodecBase {
 public:
  RandomK(const gw_host* host, gwc::ConfigReader& cfg)
      : CodecBase(host, "randomk"),
        count_(gwc::read_sparse_count(cfg, "randomk")),
        values_(gwc::read_sparse_values(cfg, "randomk")),
        rescale_(cfg.get_bool("rescale", false)) {}

  gw_codec_properties properties() const override {
    gw_codec_properties p = GW_CODEC_PROPERTIES_INIT;
    p.flags = GW_CODEC_SPARSE | GW_CODEC_SHARED_INDICES | GW_CODEC_STATEFUL;
#if defined(GW_CODEC_WITH_CUDA)
    p.flags |= GW_CODEC_CUDA;
#endif
    p.dtypes = kDtypes;
    return p;
  }

  void max_encoded_size(gw_dtype dtype, uint64_t count, uint64_t* body, uint64_t* workspace) const override {
    if (dtype < 0 || dtype > 31 || !(kDtypes & (1u << dtype)))
      gwc::fail(GW_ERR_UNSUPPORTED, std::string("randomk codec does not accept dtype ") + gwc::dtype_name(dtype) +
                                        "; use f32, f16 or bf16");
    check_count(count);
    *body = body_bytes(values_, gwc::sparse_target_count(count, count_));
    *workspace = 0;
  }

  uint64_t encode(const gw_codec_context& ctx, const gw_tensor& in, void* body, uint64_t capacity) override {
    check_tensor(in, kDtypes, "input");
    check_count(in.count);
    Preamble p;
    p.values = values_;
    p.rescaled = rescale_;
    p.k = gwc::sparse_target_count(in.count, count_);
    p.seed = ctx.seed;
    p.step = ctx.step;
    const uint64_t bytes = body_bytes(values_, p.k);
    gwc::check_capacity(*this, bytes, capacity, body);
    if (in.memory == GW_MEMORY_CUDA) {
      cuda().encode(*this, p, in, body);
      return bytes;
    }
    auto* out = static_cast<uint8_t*>(body);
    write_preamble(p, out);
    uint8_t* values = out + kPreambleBytes;
    const uint32_t vb = gwc::sparse_value_bytes(values_);
    for_each_coordinate(p, in.count, [&](uint64_t j, Stratum s) {
      float v = gwc::element_to_f32(in.dtype, element_bits(in.data, in.dtype, s.position));
      if (rescale_) v = gwc::mul_rn(v, static_cast<float>(s.length));
      gwc::write_sparse_value(values_, values + vb * j, gwc::sparse_value_bits(values_, v));
    });
    return bytes;
  }

  void decode(const gw_codec_context&, const void* body, uint64_t size, gw_tensor& out, uint32_t flags) override {
    check_tensor(out, kDtypes, "output");
    check_count(out.count);
    const bool accumulate = flags & GW_DECODE_ACCUMULATE;
    if (out.memory == GW_MEMORY_CUDA) return cuda().decode(*this, static_cast<const uint8_t*>(body), size, out, accumulate);
    Preamble p;
    std::string error;
    if (!parse_preamble(static_cast<const uint8_t*>(body), size, out.count, p, error)) corrupt(error);
    index_.resize(p.k);
    for_each_coordinate(p, out.count, [&](uint64_t j, Stratum s) { index_[j] = static_cast<uint32_t>(s.position); });
    gwc::scatter_sparse_values(p.values, static_cast<const uint8_t*>(body) + kPreambleBytes, index_.data(), p.k,
                               out.dtype, out.data, out.count, accumulate);
  }

 private:
  static void check_count(uint64_t count) {
    if (count > std::numeric_limits<uint32_t>::max())
      gwc::fail(GW_ERR_UNSUPPORTED, "randomk codec handles at most 2^32 - 1 elements per buffer (got " +
                                        std::to_string(count) + "); use smaller buckets");
  }

#if defined(GW_CODEC_WITH_CUDA)
  CudaRandomK& cuda() {
    if (!cuda_) cuda_ = std::make_unique<CudaRandomK>();
    return *cuda_;
  }
  std::unique_ptr<CudaRandomK> cuda_;
#else
  struct NoCuda {
    [[noreturn]] static void refuse() {
      gwc::fail(GW_ERR_UNSUPPORTED, "randomk was built without CUDA; pass host tensors or rebuild with GW_WITH_CUDA=ON");
    }
    template <class... A> void encode(A&&...) { refuse(); }
    template <class... A> void decode(A&&...) { refuse(); }
  };
  NoCuda cuda() { return {}; }
#endif

  gwc::SparseCount count_;
  gwc::SparseValues values_;
  bool rescale_;
  std::vector<uint32_t> index_;
};

const gw_codec_vtable kVtable = gwc::make_codec_vtable<RandomK>();

const gw_config_key kKeys[] = {
    {sizeof(gw_config_key), "ratio", GW_CONFIG_FLOAT, "0.01",
     "Fraction of the elements kept (k = round(ratio * n), at least 1); used when k is 0.", 0.0, 1.0, nullptr},
    {sizeof(gw_config_key), "k", GW_CONFIG_INT, "0", "Number of elements kept; 0 means: use ratio.", 0.0,
     4294967295.0, nullptr},
    {sizeof(gw_config_key), "values", GW_CONFIG_STRING, "\"fp32\"",
     "Format of the kept values in the payload: fp32, or fp16 rounded to nearest even.", 1.0, 0.0, "fp32|fp16"},
    {sizeof(gw_config_key), "rescale", GW_CONFIG_BOOL, "false",
     "Scale each kept value by its stratum length (about n / k) so the decoded tensor is unbiased.", 1.0, 0.0,
     nullptr},
};

const gw_component kComponents[] = {{sizeof(gw_component), GW_COMPONENT_CODEC, "randomk",
                                     "Sparse: keeps k coordinates drawn from the shared seed; sends values only.",
                                     kKeys, sizeof(kKeys) / sizeof(kKeys[0]), &kVtable}};

const gw_plugin_descriptor kDescriptor = {
    sizeof(gw_plugin_descriptor), GW_ABI_VERSION_MAJOR, GW_ABI_VERSION_MINOR, "randomk", "1.0.0",
    "Random-k sparsification codec with shared-seed coordinates (CPU, CUDA when built with it)", nullptr, nullptr,
    kComponents, 1, nullptr};

}  // namespace
}  // namespace gwrandomk

GW_PLUGIN_EXPORT const gw_plugin_descriptor* gw_plugin_entry(uint32_t host_abi_major, uint32_t) {
  return host_abi_major == GW_ABI_VERSION_MAJOR ? &gwrandomk::kDescriptor : nullptr;
}
