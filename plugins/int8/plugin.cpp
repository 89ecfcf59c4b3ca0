// The int8 codec: blockwise absmax scaling to signed bytes, round to nearest or stochastic rounding
// from the shared Philox stream. Body layout: docs/wire-format.md, "int8".
#include <gradwire/plugin.h>

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
namespace q8 = gwc::int8;

uint64_t payload_bytes(uint64_t count) { return count; }

class Codec final : public gwc::CodecBase {
 public:
  Codec(const gw_host* host, gwc::ConfigReader& config) : CodecBase(host, "int8") {
    args_.block = static_cast<uint32_t>(config.get_int("block_size", 256));
    const std::string rounding = config.get_string("rounding", "nearest");
    if (rounding == "nearest") {
      args_.rounding = q8::kNearest;
    } else if (rounding == "stochastic") {
      args_.rounding = q8::kStochastic;
    } else {
      gwc::fail(GW_ERR_CONFIG, "int8: rounding '" + rounding + "' is not one of nearest|stochastic");
    }
    if (args_.block < 1 || args_.block > gwc::kMaxBlockSize)
      gwc::fail(GW_ERR_CONFIG, "int8: block_size " + std::to_string(args_.block) + " is outside [1, 16777216]");
#if defined(GW_CODEC_WITH_CUDA)
    cuda_ = q8::cuda_ops();
#endif
  }

  gw_codec_properties properties() const override {
    gw_codec_properties p = GW_CODEC_PROPERTIES_INIT;
    p.flags = (cuda_ ? static_cast<uint32_t>(GW_CODEC_CUDA) : 0u) |
              (args_.rounding == q8::kStochastic ? static_cast<uint32_t>(GW_CODEC_STATEFUL) : 0u);
    p.sum_dtype = GW_DTYPE_F32;
    p.dtypes = gwc::kDenseDtypes;
    return p;
  }

  void max_encoded_size(gw_dtype dtype, uint64_t count, uint64_t* body, uint64_t* workspace) const override {
    if (dtype < 0 || dtype > 31 || !(gwc::kDenseDtypes & (1u << dtype)))
      gwc::fail(GW_ERR_UNSUPPORTED, std::string("int8 codec does not accept dtype ") + gwc::dtype_name(dtype) +
                                        "; use f32, f16 or bf16");
    if (count > (UINT64_MAX >> 4)) gwc::fail(GW_ERR_INVALID_ARGUMENT, "int8: count too large");
    *body = BlockLayout::make(count, args_.block, payload_bytes).size;
    *workspace = 0;
  }

  uint64_t encode(const gw_codec_context& ctx, const gw_tensor& in, void* body, uint64_t capacity) override {
    check_tensor(in, gwc::kDenseDtypes, "input");
    gwc::refuse_cuda(*this, in, cuda_);
    if (in.count > (UINT64_MAX >> 4)) gwc::fail(GW_ERR_INVALID_ARGUMENT, "int8: count too large");
    const BlockLayout l = BlockLayout::make(in.count, args_.block, payload_bytes);
    gwc::check_capacity(*this, l.size, capacity, body);
    q8::EncodeArgs args = args_;
    args.seed = ctx.seed;
    args.step = ctx.step;
    auto* bytes = static_cast<uint8_t*>(body);
    auto* scales = bytes + l.scales_offset;
    auto* q = reinterpret_cast<int8_t*>(bytes + l.payload_offset);
#if defined(GW_CODEC_WITH_CUDA)
    if (in.memory == GW_MEMORY_CUDA) {
      gwc::require_cuda_alignment(*this, body);
      char error[128] = "";
      if (int rc = cuda_->encode(args, in.dtype, in.data, in.count, scales, q, in.stream, error))
        gwc::fail_cuda(*this, "encode", rc, error);
      return l.size;
    }
#endif
    gwc::write_block_header(body, args.block);
    if (args.rounding == q8::kStochastic) uniform_.resize(args.block);
    gwc::for_each_f32_chunk(in.dtype, in.data, in.count, args.block, scratch_,
                            [&](const float* x, uint64_t b, uint64_t e) {
                              q8::encode_range(args, x, b, e, scales, q, uniform_.data());
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
      const BlockLayout l = gwc::parse_block_body(*this, header, size, out.count, payload_bytes);
      if (out.count == 0) return;
      gwc::require_cuda_alignment(*this, body);
      if (int rc = cuda_->decode(static_cast<uint32_t>(l.block), bytes + l.scales_offset,
                                 reinterpret_cast<const int8_t*>(bytes + l.payload_offset), out.count, out.dtype,
                                 out.data, acc, out.stream, error))
        gwc::fail_cuda(*this, "decode", rc, error);
      return;
    }
#endif
    const BlockLayout l = gwc::parse_block_body(*this, body, size, out.count, payload_bytes);
    const auto block = static_cast<uint32_t>(l.block);
    const auto* scales = bytes + l.scales_offset;
    const auto* q = reinterpret_cast<const int8_t*>(bytes + l.payload_offset);
    if (out.dtype == GW_DTYPE_F32) {
      q8::decode_range(block, scales, q, 0, out.count, static_cast<float*>(out.data), acc);
      return;
    }
    const uint64_t step = std::max<uint64_t>(block, gwc::kChunkElements / block * block);
    scratch_.resize(static_cast<size_t>(std::min(step, out.count)));
    auto* dst = static_cast<uint8_t*>(out.data);
    for (uint64_t b = 0; b < out.count; b += step) {
      const uint64_t e = std::min(out.count, b + step);
      q8::decode_range(block, scales, q, b, e, scratch_.data(), false);
      gwc::convert_from_f32(out.dtype, scratch_.data(), dst + 2 * b, static_cast<size_t>(e - b), acc);
    }
  }

 private:
  q8::EncodeArgs args_;
  const q8::CudaOps* cuda_ = nullptr;
  std::vector<float> scratch_;
  std::vector<float> uniform_;
};

const gw_config_key kKeys[] = {
    {sizeof(gw_config_key), "block_size", GW_CONFIG_INT, "256",
     "Elements that share one f32 scale (their largest magnitude).", 1.0, 16777216.0, nullptr},
    {sizeof(gw_config_key), "rounding", GW_CONFIG_STRING, "\"nearest\"",
     "nearest: round to nearest even; stochastic: unbiased random rounding from the seed and step of the call.",
     1.0, 0.0, "nearest|stochastic"},
};

const gw_codec_vtable kVtable = gwc::make_codec_vtable<Codec>();

const gw_component kComponents[] = {
    {sizeof(gw_component), GW_COMPONENT_CODEC, "int8",
     "Blockwise absmax scaling to signed bytes (about 1 byte per element).", kKeys, sizeof kKeys / sizeof kKeys[0],
     &kVtable},
};

const gw_plugin_descriptor kDescriptor = {
    sizeof(gw_plugin_descriptor), GW_ABI_VERSION_MAJOR, GW_ABI_VERSION_MINOR, "int8", "1.0.0",
    "Blockwise int8 quantization codec", nullptr, nullptr, kComponents, sizeof kComponents / sizeof kComponents[0],
    nullptr};

}  // namespace

GW_PLUGIN_EXPORT const gw_plugin_descriptor* gw_plugin_entry(uint32_t host_abi_major, uint32_t /*host_abi_minor*/) {
  return host_abi_major == GW_ABI_VERSION_MAJOR ? &kDescriptor : nullptr;
}
