// The int8 codec: blockwise absmax scaling to signed bytes, round to nearest or stochastic rounding
// from the shared Philox stream. Body layout: docs/wire-format.md, "int8".
#include <gradwire/plugin.h>

#include <string>
#include <vector>

#include "cpu.hpp"
#include "cuda.hpp"
#include "gw_codec/block_codec.hpp"

namespace {

using gwc::BlockLayout;
namespace q8 = gwc::int8;

uint64_t payload_bytes(uint64_t count) { return count; }

q8::Rounding read_rounding(const gwc::ConfigReader& config) {
  const std::string rounding = config.get_string("rounding", "nearest");
  if (rounding == "nearest") return q8::kNearest;
  if (rounding == "stochastic") return q8::kStochastic;
  gwc::fail(GW_ERR_CONFIG, "int8: rounding '" + rounding + "' is not one of nearest|stochastic");
}

class Codec final : public gwc::BlockCodec<q8::CudaOps> {
 public:
  Codec(const gw_host* host, gwc::ConfigReader& config)
      : BlockCodec(host, config, "int8", payload_bytes, 1, GW_CODEC_CUDA_OPS(q8::cuda_ops())),
        rounding_(read_rounding(config)) {}

 private:
  uint32_t extra_flags() const override {
    return rounding_ == q8::kStochastic ? static_cast<uint32_t>(GW_CODEC_STATEFUL) : 0u;
  }

  q8::EncodeArgs args(const gw_codec_context& ctx) const {
    q8::EncodeArgs a;
    a.block = block();
    a.rounding = rounding_;
    a.seed = ctx.seed;
    a.step = ctx.step;
    return a;
  }

  void encode_range(const gw_codec_context& ctx, const float* x, uint64_t begin, uint64_t end, uint8_t* body,
                    const BlockLayout& l) override {
    if (rounding_ == q8::kStochastic) uniform_.resize(block());
    q8::encode_range(args(ctx), x, begin, end, body + l.scales_offset,
                     reinterpret_cast<int8_t*>(body + l.payload_offset), uniform_.data());
  }

  void decode_range(const uint8_t* body, const BlockLayout& l, uint64_t begin, uint64_t end, float* y,
                    bool accumulate) const override {
    q8::decode_range(static_cast<uint32_t>(l.block), body + l.scales_offset,
                     reinterpret_cast<const int8_t*>(body + l.payload_offset), begin, end, y, accumulate);
  }

  int encode_cuda(const gw_codec_context& ctx, const gw_tensor& in, uint8_t* body, const BlockLayout& l,
                  char* error) const override {
    return cuda()->encode(args(ctx), in.dtype, in.data, in.count, body + l.scales_offset,
                          reinterpret_cast<int8_t*>(body + l.payload_offset), in.stream, error);
  }

  int decode_cuda(const uint8_t* body, const BlockLayout& l, const gw_tensor& out, bool accumulate,
                  char* error) const override {
    return cuda()->decode(static_cast<uint32_t>(l.block), body + l.scales_offset,
                          reinterpret_cast<const int8_t*>(body + l.payload_offset), out.count, out.dtype, out.data,
                          accumulate, out.stream, error);
  }

  q8::Rounding rounding_;
  std::vector<float> uniform_;
};

constexpr gw_config_key kKeys[] = {
    {sizeof(gw_config_key), "block_size", GW_CONFIG_INT, "256",
     "Elements that share one f32 scale (their largest magnitude).", 1.0, 16777216.0, nullptr},
    {sizeof(gw_config_key), "rounding", GW_CONFIG_STRING, "\"nearest\"",
     "nearest: round to nearest even; stochastic: unbiased random rounding from the seed and step of the call.",
     1.0, 0.0, "nearest|stochastic"},
};

constexpr gwc::CodecText kText = {"int8", "Blockwise absmax scaling to signed bytes (about 1 byte per element).",
                                  "Blockwise int8 quantization codec"};

}  // namespace

GW_PLUGIN_EXPORT const gw_plugin_descriptor* gw_plugin_entry(uint32_t host_abi_major, uint32_t /*host_abi_minor*/) {
  return gwc::CodecPlugin<Codec, kText, kKeys>::entry(host_abi_major);
}
