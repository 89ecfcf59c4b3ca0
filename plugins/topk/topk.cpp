// The topk codec plugin: keeps the k largest magnitudes of a buffer (topk_select.hpp for the
// procedure, topk_body.hpp for the bytes). CPU always; CUDA tensors through topk_cuda.cu when the
// build has CUDA.
#include <gradwire/plugin.h>

#include <limits>
#include <memory>
#include <string>

#include "gw_codec/codec_base.hpp"
#include "topk_body.hpp"
#include "topk_cpu.hpp"
#include "topk_select.hpp"
#if defined(GW_CODEC_WITH_CUDA)
#include "topk_cuda.hpp"
#endif

namespace gwtopk {
namespace {

constexpr uint32_t kDtypes = (1u << GW_DTYPE_F32) | (1u << GW_DTYPE_F16) | (1u << GW_DTYPE_BF16);

Settings read_settings(const gwc::ConfigReader& cfg) {
  Settings s;
  s.count = gwc::read_sparse_count(cfg, "topk");
  s.values = gwc::read_sparse_values(cfg, "topk");
  const std::string selection = cfg.get_string("selection", "approx");
  if (selection == "approx") s.selection = Selection::approx;
  else if (selection == "exact") s.selection = Selection::exact;
  else gwc::fail(GW_ERR_CONFIG, "[codec.topk] selection must be \"approx\" or \"exact\", not \"" + selection + "\"");
  const std::string indices = cfg.get_string("indices", "delta");
  if (indices == "u32") s.indices = IndexFormat::u32;
  else if (indices == "delta") s.indices = IndexFormat::delta;
  else gwc::fail(GW_ERR_CONFIG, "[codec.topk] indices must be \"u32\" or \"delta\", not \"" + indices + "\"");
  return s;
}

class TopK final : public gwc::CodecBase {
 public:
  TopK(const gw_host* host, gwc::ConfigReader& cfg) : CodecBase(host, "topk"), s_(read_settings(cfg)) {}

  gw_codec_properties properties() const override {
    gw_codec_properties p = GW_CODEC_PROPERTIES_INIT;
    p.flags = GW_CODEC_SPARSE;
#if defined(GW_CODEC_WITH_CUDA)
    p.flags |= GW_CODEC_CUDA;
#endif
    p.dtypes = kDtypes;
    return p;
  }

  void max_encoded_size(gw_dtype dtype, uint64_t count, uint64_t* body, uint64_t* workspace) const override {
    check_dtype(dtype);
    check_count(count);
    *body = max_body_bytes(s_.values, s_.indices, max_selected(count, gwc::sparse_target_count(count, s_.count)));
    *workspace = 0;  // scratch is kept by the codec instance
  }

  uint64_t encode(const gw_codec_context&, const gw_tensor& in, void* body, uint64_t capacity) override {
    check_tensor(in, kDtypes, "input");
    check_count(in.count);
    const uint64_t k = gwc::sparse_target_count(in.count, s_.count);
    if (in.memory == GW_MEMORY_CUDA) return cuda().encode(*this, s_, k, in, body, capacity);
    cpu_.bind(in.data, in.dtype, in.count);
    const uint64_t m = select(cpu_, make_plan(in.count, k, s_.selection, key_limit(in.dtype)));
    const uint64_t bytes = body_bytes(s_.values, s_.indices, cpu_.indices(), m);
    gwc::check_capacity(*this, bytes, capacity, body);
    write_body(s_.values, s_.indices, in.dtype, cpu_.indices(), cpu_.bits(), m, static_cast<uint8_t*>(body));
    return bytes;
  }

  void decode(const gw_codec_context&, const void* body, uint64_t size, gw_tensor& out, uint32_t flags) override {
    check_tensor(out, kDtypes, "output");
    check_count(out.count);
    const bool accumulate = flags & GW_DECODE_ACCUMULATE;
    if (out.memory == GW_MEMORY_CUDA) return cuda().decode(*this, static_cast<const uint8_t*>(body), size, out, accumulate);
    ParsedBody parsed;
    std::string error;
    if (!parse_body(static_cast<const uint8_t*>(body), size, out.count, parsed, error)) corrupt(error);
    gwc::scatter_sparse_values(parsed.values, parsed.value_bytes, parsed.index.data(), parsed.m, out.dtype,
                               out.data, out.count, accumulate);
  }

 private:
  static uint32_t key_limit(gw_dtype dtype) { return dtype == GW_DTYPE_F32 ? 0x80000000u : 0x8000u; }

  void check_dtype(gw_dtype dtype) const {
    if (dtype < 0 || dtype > 31 || !(kDtypes & (1u << dtype)))
      gwc::fail(GW_ERR_UNSUPPORTED, std::string("topk codec does not accept dtype ") + gwc::dtype_name(dtype) +
                                        "; use f32, f16 or bf16");
  }
  static void check_count(uint64_t count) {
    if (count > std::numeric_limits<uint32_t>::max())
      gwc::fail(GW_ERR_UNSUPPORTED, "topk codec handles at most 2^32 - 1 elements per buffer (got " +
                                        std::to_string(count) + "); use smaller buckets");
  }

#if defined(GW_CODEC_WITH_CUDA)
  CudaTopk& cuda() {
    if (!cuda_) cuda_ = std::make_unique<CudaTopk>();
    return *cuda_;
  }
  std::unique_ptr<CudaTopk> cuda_;
#else
  struct NoCuda {
    [[noreturn]] static void refuse() {
      gwc::fail(GW_ERR_UNSUPPORTED, "topk was built without CUDA; pass host tensors or rebuild with GW_WITH_CUDA=ON");
    }
    template <class... A> uint64_t encode(A&&...) { refuse(); }
    template <class... A> void decode(A&&...) { refuse(); }
  };
  NoCuda cuda() { return {}; }
#endif

  Settings s_;
  CpuBackend cpu_{nullptr, GW_DTYPE_F32, 0};
};

const gw_codec_vtable kVtable = gwc::make_codec_vtable<TopK>();

const gw_config_key kKeys[] = {
    {sizeof(gw_config_key), "ratio", GW_CONFIG_FLOAT, "0.01",
     "Fraction of the elements kept (k = round(ratio * n), at least 1); used when k is 0.", 0.0, 1.0, nullptr},
    {sizeof(gw_config_key), "k", GW_CONFIG_INT, "0", "Number of elements kept; 0 means: use ratio.", 0.0,
     4294967295.0, nullptr},
    {sizeof(gw_config_key), "selection", GW_CONFIG_STRING, "\"approx\"",
     "approx: sampled threshold, sends a count within 10 % of k; exact: exactly the k largest magnitudes.", 1.0,
     0.0, "approx|exact"},
    {sizeof(gw_config_key), "values", GW_CONFIG_STRING, "\"fp32\"",
     "Format of the kept values in the payload: fp32, or fp16 rounded to nearest even.", 1.0, 0.0, "fp32|fp16"},
    {sizeof(gw_config_key), "indices", GW_CONFIG_STRING, "\"delta\"",
     "Format of the kept indices: u32 each, or delta (varint of the gap to the previous index).", 1.0, 0.0,
     "u32|delta"},
};

const gw_component kComponents[] = {{sizeof(gw_component), GW_COMPONENT_CODEC, "topk",
                                     "Sparse: keeps the k largest magnitudes with their indices.", kKeys,
                                     sizeof(kKeys) / sizeof(kKeys[0]), &kVtable}};

const gw_plugin_descriptor kDescriptor = {
    sizeof(gw_plugin_descriptor), GW_ABI_VERSION_MAJOR, GW_ABI_VERSION_MINOR, "topk", "1.0.0",
    "Top-k sparsification codec (CPU, CUDA when built with it)", nullptr, nullptr, kComponents, 1, nullptr};

}  // namespace
}  // namespace gwtopk

GW_PLUGIN_EXPORT const gw_plugin_descriptor* gw_plugin_entry(uint32_t host_abi_major, uint32_t) {
  return host_abi_major == GW_ABI_VERSION_MAJOR ? &gwtopk::kDescriptor : nullptr;
}
