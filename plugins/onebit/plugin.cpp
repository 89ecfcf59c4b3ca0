// The onebit codec: the sign of each element plus one f32 scale per block (the block's mean |x|);
// meant to run with error feedback. Body layout: docs/wire-format.md, "onebit".
#include <gradwire/plugin.h>

#include <numeric>
#include <string>
#include <vector>

#include "cpu.hpp"
#include "gw_codec/block_body.hpp"
#include "gw_codec/codec_base.hpp"
#include "gw_codec/convert.hpp"
#include "cuda.hpp"
#include "gw_codec/half_codec.hpp"

namespace {

using gwc::BlockLayout;
namespace ob = gwc::onebit;

class Codec final : public gwc::CodecBase {
 public:
  Codec(const gw_host* host, gwc::ConfigReader& config) : CodecBase(host, "onebit") {
    const int64_t block = config.get_int("block_size", 256);
    if (block < 1 || block > static_cast<int64_t>(gwc::kMaxBlockSize))
      gwc::fail(GW_ERR_CONFIG, "onebit: block_size " + std::to_string(block) + " is outside [1, 16777216]");
    block_ = static_cast<uint32_t>(block);
#if defined(GW_CODEC_WITH_CUDA)
    cuda_ = ob::cuda_ops();
#endif
  }

  gw_codec_properties properties() const override {
    gw_codec_properties p = GW_CODEC_PROPERTIES_INIT;
    p.flags = cuda_ ? static_cast<uint32_t>(GW_CODEC_CUDA) : 0u;
    p.sum_dtype = GW_DTYPE_F32;
    p.dtypes = gwc::kDenseDtypes;
    return p;
  }

  void max_encoded_size(gw_dtype dtype, uint64_t count, uint64_t* body, uint64_t* workspace) const override {
    if (dtype < 0 || dtype > 31 || !(gwc::kDenseDtypes & (1u << dtype)))
      gwc::fail(GW_ERR_UNSUPPORTED, std::string("onebit codec does not accept dtype ") + gwc::dtype_name(dtype) +
                                        "; use f32, f16 or bf16");
    if (count > (UINT64_MAX >> 4)) gwc::fail(GW_ERR_INVALID_ARGUMENT, "onebit: count too large");
    *body = BlockLayout::make(count, block_, ob::payload_bytes).size;
    *workspace = 0;
  }

  uint64_t encode(const gw_codec_context&, const gw_tensor& in, void* body, uint64_t capacity) override {
    check_tensor(in, gwc::kDenseDtypes, "input");
    gwc::refuse_cuda(*this, in, cuda_);
    if (in.count > (UINT64_MAX >> 4)) gwc::fail(GW_ERR_INVALID_ARGUMENT, "onebit: count too large");
    const BlockLayout l = BlockLayout::make(in.count, block_, ob::payload_bytes);
    gwc::check_capacity(*this, l.size, capacity, body);
    auto* bytes = static_cast<uint8_t*>(body);
#if defined(GW_CODEC_WITH_CUDA)
    if (in.memory == GW_MEMORY_CUDA) {
      gwc::require_cuda_alignment(*this, body);
      char error[128] = "";
      if (int rc = cuda_->encode(block_, in.dtype, in.data, in.count, bytes, in.stream, error))
        gwc::fail_cuda(*this, "encode", rc, error);
      return l.size;
    }
#endif
    gwc::write_block_header(body, block_);
    gwc::for_each_f32_chunk(in.dtype, in.data, in.count, std::lcm<uint64_t>(block_, 64), scratch_,
                            [&](const float* x, uint64_t b, uint64_t e) {
                              ob::encode_range(block_, x, b, e, bytes + l.scales_offset, bytes + l.payload_offset);
                            });
    return l.size;
  }

  void decode(const gw_codec_context&, const void* body, uint64_t size, gw_tensor& out, uint32_t flags) override {
    check_tensor(out, gwc::kDenseDtypes, "output");
    gwc::refuse_cuda(*this, out, cuda_);
    const bool acc = (flags & GW_DECODE_ACCUMULATE) != 0;
    const auto* bytes = static_cast<const uint8_t*>(body);
#if defined(GW_CODEC_WITH_CUDA)
    if (out.memory == GW_MEMORY_CUDA) {
      uint8_t header[gwc::kBlockBodyHeader] = {};
      char error[128] = "";
      if (size >= sizeof header) {
        if (int rc = cuda_->read_bytes(body, header, sizeof header, out.stream, error))
          gwc::fail_cuda(*this, "decode", rc, error);
      }
      const BlockLayout l = gwc::parse_block_body(*this, header, size, out.count, ob::payload_bytes);
      if (out.count == 0) return;
      gwc::require_cuda_alignment(*this, body);
      if (int rc = cuda_->decode(static_cast<uint32_t>(l.block), bytes + l.scales_offset, bytes + l.payload_offset,
                                 out.count, out.dtype, out.data, acc, out.stream, error))
        gwc::fail_cuda(*this, "decode", rc, error);
      return;
    }
#endif
    const BlockLayout l = gwc::parse_block_body(*this, body, size, out.count, ob::payload_bytes);
    const auto block = static_cast<uint32_t>(l.block);
    const auto* scales = bytes + l.scales_offset;
    const auto* bits = bytes + l.payload_offset;
    const uint64_t bits_bytes = ob::payload_bytes(out.count);
    if (out.dtype == GW_DTYPE_F32) {
      ob::decode_range(block, scales, bits, bits_bytes, 0, out.count, static_cast<float*>(out.data), acc);
      return;
    }
    const uint64_t step = std::max<uint64_t>(block, gwc::kChunkElements / block * block);
    scratch_.resize(static_cast<size_t>(std::min(step, out.count)));
    auto* dst = static_cast<uint8_t*>(out.data);
    for (uint64_t b = 0; b < out.count; b += step) {
      const uint64_t e = std::min(out.count, b + step);
      ob::decode_range(block, scales, bits, bits_bytes, b, e, scratch_.data(), false);
      gwc::convert_from_f32(out.dtype, scratch_.data(), dst + 2 * b, static_cast<size_t>(e - b), acc);
    }
  }

 private:
  uint32_t block_ = 256;
  const ob::CudaOps* cuda_ = nullptr;
  std::vector<float> scratch_;
};

const gw_config_key kKeys[] = {
    {sizeof(gw_config_key), "block_size", GW_CONFIG_INT, "256",
     "Elements that share one f32 scale (their mean magnitude).", 1.0, 16777216.0, nullptr},
};

const gw_codec_vtable kVtable = gwc::make_codec_vtable<Codec>();

const gw_component kComponents[] = {
    {sizeof(gw_component), GW_COMPONENT_CODEC, "onebit",
     "Sign bits plus one mean-magnitude scale per block (about 1 bit per element); use with error feedback.",
     kKeys, sizeof kKeys / sizeof kKeys[0], &kVtable},
};

const gw_plugin_descriptor kDescriptor = {
    sizeof(gw_plugin_descriptor), GW_ABI_VERSION_MAJOR, GW_ABI_VERSION_MINOR, "onebit", "1.0.0",
    "1-bit sign codec with per-block scales", nullptr, nullptr, kComponents,
    sizeof kComponents / sizeof kComponents[0], nullptr};

}  // namespace

GW_PLUGIN_EXPORT const gw_plugin_descriptor* gw_plugin_entry(uint32_t host_abi_major, uint32_t /*host_abi_minor*/) {
  return host_abi_major == GW_ABI_VERSION_MAJOR ? &kDescriptor : nullptr;
}
