// The topk codec plugin: keeps the k largest magnitudes of a buffer (topk_select.hpp for the
// procedure, topk_body.hpp for the bytes). CPU always; CUDA tensors through topk_cuda.cu when the
// build has CUDA.
#include <gradwire/plugin.h>

#include <string>

#include "gw_codec/sparse_codec.hpp"
#include "topk_body.hpp"
#include "topk_cpu.hpp"
#include "topk_select.hpp"
#include "topk_cuda.hpp"

namespace gwtopk {
namespace {

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

class TopK final : public gwc::SparseCodec<CudaTopk> {
 public:
  TopK(const gw_host* host, gwc::ConfigReader& cfg)
      : SparseCodec(host, "topk", GW_CODEC_SPARSE), s_(read_settings(cfg)) {}

 private:
  static uint32_t key_limit(gw_dtype dtype) { return dtype == GW_DTYPE_F32 ? 0x80000000u : 0x8000u; }

  uint64_t body_bound(uint64_t count) const override {
    return max_body_bytes(s_.values, s_.indices, max_selected(count, gwc::sparse_target_count(count, s_.count)));
  }

  uint64_t encode_checked(const gw_codec_context&, const gw_tensor& in, void* body, uint64_t capacity) override {
    const uint64_t k = gwc::sparse_target_count(in.count, s_.count);
    if (in.memory == GW_MEMORY_CUDA) return cuda_.get().encode(*this, s_, k, in, body, capacity);
    cpu_.bind(in.data, in.dtype, in.count);
    const uint64_t m = select(cpu_, make_plan(in.count, k, s_.selection, key_limit(in.dtype)));
    const uint64_t bytes = body_bytes(s_.values, s_.indices, cpu_.indices(), m);
    gwc::check_capacity(*this, bytes, capacity, body);
    write_body(s_.values, s_.indices, in.dtype, cpu_.indices(), cpu_.bits(), m, static_cast<uint8_t*>(body));
    return bytes;
  }

  void decode_host(const uint8_t* body, uint64_t size, gw_tensor& out, bool accumulate) override {
    ParsedBody parsed;
    std::string error;
    if (!parse_body(body, size, out.count, parsed, error)) corrupt(error);
    gwc::scatter_sparse_values(parsed.values, parsed.value_bytes, parsed.index.data(), parsed.m, out.dtype,
                               out.data, out.count, accumulate);
  }

  Settings s_;
  CpuBackend cpu_{nullptr, GW_DTYPE_F32, 0};
};

constexpr gw_config_key kKeys[] = {
    gwc::kSparseRatioKey,
    gwc::kSparseKKey,
    {sizeof(gw_config_key), "selection", GW_CONFIG_STRING, "\"approx\"",
     "approx: sampled threshold, sends a count within 10 % of k; exact: exactly the k largest magnitudes.", 1.0,
     0.0, "approx|exact"},
    gwc::kSparseValuesKey,
    {sizeof(gw_config_key), "indices", GW_CONFIG_STRING, "\"delta\"",
     "Format of the kept indices: u32 each, or delta (varint of the gap to the previous index).", 1.0, 0.0,
     "u32|delta"},
};

constexpr gwc::CodecText kText = {"topk", "Sparse: keeps the k largest magnitudes with their indices.",
                                  "Top-k sparsification codec (CPU, CUDA when built with it)"};

}  // namespace
}  // namespace gwtopk

GW_PLUGIN_EXPORT const gw_plugin_descriptor* gw_plugin_entry(uint32_t host_abi_major, uint32_t) {
  return gwc::CodecPlugin<gwtopk::TopK, gwtopk::kText, gwtopk::kKeys>::entry(host_abi_major);
}
