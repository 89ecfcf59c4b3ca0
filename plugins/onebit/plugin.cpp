// The onebit codec: the sign of each element plus one f32 scale per block (the block's mean |x|);
// meant to run with error feedback. Body layout: docs/wire-format.md, "onebit".
#include <gradwire/plugin.h>

#include "cpu.hpp"
#include "cuda.hpp"
#include "gw_codec/block_codec.hpp"

namespace {

using gwc::BlockLayout;
namespace ob = gwc::onebit;

// The CPU encoder writes the sign bits of 64 elements at a time.
constexpr uint64_t kEncodeAlign = 64;

class Codec final : public gwc::BlockCodec<ob::CudaOps> {
 public:
  Codec(const gw_host* host, gwc::ConfigReader& config)
      : BlockCodec(host, config, "onebit", ob::payload_bytes, kEncodeAlign, GW_CODEC_CUDA_OPS(ob::cuda_ops())) {}

 private:
  void encode_range(const gw_codec_context&, const float* x, uint64_t begin, uint64_t end, uint8_t* body,
                    const BlockLayout& l) override {
    ob::encode_range(block(), x, begin, end, body + l.scales_offset, body + l.payload_offset);
  }

  void decode_range(const uint8_t* body, const BlockLayout& l, uint64_t begin, uint64_t end, float* y,
                    bool accumulate) const override {
    ob::decode_range(static_cast<uint32_t>(l.block), body + l.scales_offset, body + l.payload_offset,
                     ob::payload_bytes(l.count), begin, end, y, accumulate);
  }

  int encode_cuda(const gw_codec_context&, const gw_tensor& in, uint8_t* body, const BlockLayout&,
                  char* error) const override {
    return cuda()->encode(block(), in.dtype, in.data, in.count, body, in.stream, error);
  }

  int decode_cuda(const uint8_t* body, const BlockLayout& l, const gw_tensor& out, bool accumulate,
                  char* error) const override {
    return cuda()->decode(static_cast<uint32_t>(l.block), body + l.scales_offset, body + l.payload_offset, out.count,
                          out.dtype, out.data, accumulate, out.stream, error);
  }
};

constexpr gw_config_key kKeys[] = {
    {sizeof(gw_config_key), "block_size", GW_CONFIG_INT, "256",
     "Elements that share one f32 scale (their mean magnitude).", 1.0, 16777216.0, nullptr},
};

constexpr gwc::CodecText kText = {
    "onebit", "Sign bits plus one mean-magnitude scale per block (about 1 bit per element); use with error feedback.",
    "1-bit sign codec with per-block scales"};

}  // namespace

GW_PLUGIN_EXPORT const gw_plugin_descriptor* gw_plugin_entry(uint32_t host_abi_major, uint32_t /*host_abi_minor*/) {
  return gwc::CodecPlugin<Codec, kText, kKeys>::entry(host_abi_major);
}
