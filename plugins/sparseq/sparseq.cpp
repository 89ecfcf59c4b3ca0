// The sparseq codec plugin: the k largest magnitudes of a buffer (topk's selection, exact) with their
// values quantised to 2, 3 or 4 bits per entry (sparseq_body.hpp for the bytes). Lossy: the runtime's
// error feedback keeps what was not sent. CPU only: device tensors are refused.
#include <gradwire/plugin.h>

#include <cmath>
#include <string>
#include <vector>

#include "gw_codec/sparse.hpp"
#include "gw_codec/sparse_codec.hpp"
#include "sparseq_body.hpp"
#include "topk_cpu.hpp"
#include "topk_select.hpp"

namespace gwsparseq {
namespace {

struct Settings {
  gwc::SparseCount count;
  uint32_t bits = 2;
  uint32_t group = 128;
};

Settings read_settings(const gwc::ConfigReader& cfg) {
  Settings s;
  s.count = gwc::read_sparse_count(cfg, "sparseq");
  const int64_t bits = cfg.get_int("bits", s.bits);
  if (bits < 2 || bits > 4)
    gwc::fail(GW_ERR_CONFIG, "[codec.sparseq] bits must be 2, 3 or 4 (got " + std::to_string(bits) + ")");
  s.bits = static_cast<uint32_t>(bits);
  const int64_t group = cfg.get_int("group", s.group);
  if (group < 1 || group > (int64_t{1} << 24))
    gwc::fail(GW_ERR_CONFIG, "[codec.sparseq] group must be in [1, 16777216] entries per scale pair (got " +
                                 std::to_string(group) + ")");
  s.group = static_cast<uint32_t>(group);
  return s;
}

// Declared only: the plugin has no CUDA half (check_memory refuses device tensors first).
struct NoCuda;

class SparseQ final : public gwc::SparseCodec<NoCuda> {
 public:
  SparseQ(const gw_host* host, gwc::ConfigReader& cfg)
      : SparseCodec(host, "sparseq", GW_CODEC_SPARSE), s_(read_settings(cfg)) {}

 private:
  void check_memory(const gw_tensor& t, const char* role) const override {
    if (t.memory == GW_MEMORY_CUDA)
      gwc::fail(GW_ERR_UNSUPPORTED, std::string("sparseq codec is CPU-only and got a CUDA ") + role +
                                        " tensor; pass host tensors, or use topk for device tensors");
  }

  uint64_t body_bound(uint64_t count) const override {
    return max_body_bytes(s_.bits, s_.group, gwc::sparse_target_count(count, s_.count));
  }

  uint64_t encode_checked(const gw_codec_context&, const gw_tensor& in, void* body, uint64_t capacity) override {
    const uint64_t k = gwc::sparse_target_count(in.count, s_.count);
    cpu_.bind(in.data, in.dtype, in.count);
    const uint32_t key_limit = in.dtype == GW_DTYPE_F32 ? 0x80000000u : 0x8000u;
    const uint64_t m = gwtopk::select(cpu_, gwtopk::make_plan(in.count, k, gwtopk::Selection::exact, key_limit));
    values_.resize(m);
    const uint32_t* idx = cpu_.indices();
    const uint32_t* bits = cpu_.bits();
    for (uint64_t j = 0; j < m; ++j) {
      values_[j] = gwc::element_to_f32(in.dtype, bits[j]);
      if (!std::isfinite(values_[j]))
        gwc::fail(GW_ERR_INVALID_ARGUMENT, "sparseq cannot quantise the non-finite value at element " +
                                               std::to_string(idx[j]) +
                                               "; check the gradients for overflow before encoding");
    }
    gwc::check_capacity(*this, max_body_bytes(s_.bits, s_.group, m), capacity, body);
    return write_body(s_.bits, s_.group, idx, values_.data(), m, static_cast<uint8_t*>(body));
  }

  void decode_host(const uint8_t* body, uint64_t size, gw_tensor& out, bool accumulate) override {
    std::string error;
    if (!parse_body(body, size, out.count, parsed_, error)) corrupt(error);
    gwc::scatter_sparse_values(gwc::SparseValues::fp32, reinterpret_cast<const uint8_t*>(parsed_.values.data()),
                               parsed_.index.data(), parsed_.m, out.dtype, out.data, out.count, accumulate);
  }

  Settings s_;
  gwtopk::CpuBackend cpu_{nullptr, GW_DTYPE_F32, 0};
  std::vector<float> values_;
  ParsedBody parsed_;
};

constexpr gw_config_key kKeys[] = {
    gwc::kSparseRatioKey,
    gwc::kSparseKKey,
    {sizeof(gw_config_key), "bits", GW_CONFIG_INT, "2",
     "Bits per kept value: one sign bit and bits - 1 bits of magnitude level (2, 3 or 4).", 2.0, 4.0, nullptr},
    {sizeof(gw_config_key), "group", GW_CONFIG_INT, "128",
     "Kept entries (in index order) that share one scale pair: the floor and step of their magnitudes.", 1.0,
     16777216.0, nullptr},
};

constexpr gwc::CodecText kText = {"sparseq", "Sparse and quantised: the k largest magnitudes, 2-4 bits each.",
                                  "Sparse and quantised codec: top-k with 2-4 bit values (CPU only)"};

}  // namespace
}  // namespace gwsparseq

GW_PLUGIN_EXPORT const gw_plugin_descriptor* gw_plugin_entry(uint32_t host_abi_major, uint32_t) {
  return gwc::CodecPlugin<gwsparseq::SparseQ, gwsparseq::kText, gwsparseq::kKeys>::entry(host_abi_major);
}
