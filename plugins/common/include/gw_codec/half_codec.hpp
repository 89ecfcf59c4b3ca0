// gw_codec/half_codec.hpp — the fp16 and bf16 codecs (plugins/fp16, plugins/bf16) share this class.
//
// Body: count little-endian 16-bit values, element i at byte 2i, each round-to-nearest-even of
// x_i * s, where s = 1 / world_size with prediv and 1 without. Decoding multiplies by world_size
// again (prediv), so decode(encode(x)) ~ x and a sum of bodies decodes to the sum of the inputs.
// Bodies are summable elementwise in their own format (GW_CODEC_SUMMABLE, sum_dtype f16 / bf16).
//
//   half_encode / half_decode     the CPU kernels (gw_codec_simd, Highway dispatch)
//   HalfCudaOps                   the CUDA kernels a plugin built with CUDA passes in (else NULL)
//   HalfCodec                     the codec class; see make_codec_vtable in codec_base.hpp
//   HalfPlugin<F, text>::entry    the fp16 / bf16 plugin's descriptor (codec_base.hpp's CodecPlugin;
//                                 the one key is prediv; CUDA kernels from plugin_half_cuda_ops())
#pragma once

#include <cstring>
#include <string>
#include <vector>

#include "gw_codec/codec_base.hpp"
#include "gw_codec/convert.hpp"

namespace gwc {

enum class HalfFormat { kF16, kBF16 };

void half_encode(HalfFormat f, const float* in, uint16_t* out, size_t n, float scale);
void half_decode(HalfFormat f, const uint16_t* in, float* out, size_t n, float scale, bool accumulate);

// CUDA kernels, enqueued on `stream`; in/out dtype f32, f16 or bf16. Return a cudaError_t as int
// (0 = success) and write its name into `error` (capacity 128).
struct HalfCudaOps {
  int (*encode)(HalfFormat f, gw_dtype in_dtype, const void* in, uint16_t* out, uint64_t n, float scale,
                void* stream, char* error);
  int (*decode)(HalfFormat f, const uint16_t* in, gw_dtype out_dtype, void* out, uint64_t n, float scale,
                bool accumulate, void* stream, char* error);
};

template <HalfFormat F>
class HalfCodec : public CodecBase {
 public:
  static constexpr gw_dtype kBodyDtype = F == HalfFormat::kF16 ? GW_DTYPE_F16 : GW_DTYPE_BF16;

  HalfCodec(const gw_host* host, ConfigReader& config, const char* name, const HalfCudaOps* cuda)
      : CodecBase(host, name), prediv_(config.get_bool("prediv", false)), cuda_(cuda) {}

  gw_codec_properties properties() const override {
    gw_codec_properties p = GW_CODEC_PROPERTIES_INIT;
    p.flags = GW_CODEC_SUMMABLE | (cuda_ ? static_cast<uint32_t>(GW_CODEC_CUDA) : 0u);
    p.sum_dtype = kBodyDtype;
    p.dtypes = kDenseDtypes;
    return p;
  }

  void max_encoded_size(gw_dtype dtype, uint64_t count, uint64_t* body, uint64_t* workspace) const override {
    check_dtype(dtype);
    if (count > (UINT64_MAX >> 2)) fail(GW_ERR_INVALID_ARGUMENT, std::string(name()) + ": count too large");
    *body = 2 * count;
    *workspace = 0;
  }

  uint64_t encode(const gw_codec_context& ctx, const gw_tensor& in, void* body, uint64_t capacity) override {
    check_tensor(in, kDenseDtypes, "input");
    refuse_cuda(*this, in, cuda_);
    const uint64_t need = 2 * in.count;
    check_capacity(*this, need, capacity, body);
    const float scale = prediv_ ? 1.0f / static_cast<float>(ctx.world_size) : 1.0f;
    auto* out = static_cast<uint16_t*>(body);
    if (in.count == 0) return 0;
    if (in.memory == GW_MEMORY_CUDA) {
      char error[128] = "";
      if (int rc = cuda_->encode(F, in.dtype, in.data, out, in.count, scale, in.stream, error))
        fail_cuda(*this, "encode", rc, error);
      return need;
    }
    if (in.dtype == kBodyDtype && scale == 1.0f) {
      std::memcpy(out, in.data, need);
      return need;
    }
    for_each_f32_chunk(in.dtype, in.data, in.count, 1, scratch_, [&](const float* x, uint64_t b, uint64_t e) {
      half_encode(F, x, out + b, e - b, scale);
    });
    return need;
  }

  void decode(const gw_codec_context& ctx, const void* body, uint64_t size, gw_tensor& out,
              uint32_t flags) override {
    check_tensor(out, kDenseDtypes, "output");
    refuse_cuda(*this, out, cuda_);
    if (out.count > (UINT64_MAX >> 2) || size != 2 * out.count)
      corrupt("body has " + std::to_string(size) + " bytes but " + std::to_string(out.count) +
              " elements need exactly " + std::to_string(2 * out.count));
    const float scale = prediv_ ? static_cast<float>(ctx.world_size) : 1.0f;
    const bool acc = (flags & GW_DECODE_ACCUMULATE) != 0;
    const auto* in = static_cast<const uint16_t*>(body);
    if (out.count == 0) return;
    if (out.memory == GW_MEMORY_CUDA) {
      char error[128] = "";
      if (int rc = cuda_->decode(F, in, out.dtype, out.data, out.count, scale, acc, out.stream, error))
        fail_cuda(*this, "decode", rc, error);
      return;
    }
    if (out.dtype == kBodyDtype && scale == 1.0f && !acc) {
      std::memcpy(out.data, in, size);
      return;
    }
    for_each_f32_output_chunk(out.dtype, out.data, out.count, 1, scratch_, acc,
                              [&](float* y, uint64_t b, uint64_t e, bool add) {
                                half_decode(F, in + b, y, static_cast<size_t>(e - b), scale, add);
                              });
  }

 private:
  bool prediv_;
  const HalfCudaOps* cuda_;
  std::vector<float> scratch_;
};

// ---- the fp16 and bf16 plugins -----------------------------------------------------------------------

// The plugin's CUDA kernels: its cuda.cu returns cu::half_cuda_ops() (half_cuda.cuh). Defined only in a
// build with CUDA; see GW_CODEC_CUDA_OPS.
const HalfCudaOps* plugin_half_cuda_ops();

inline constexpr gw_config_key kHalfConfigKeys[] = {
    {sizeof(gw_config_key), "prediv", GW_CONFIG_BOOL, "false",
     "Divide by the world size before rounding (and multiply back when decoding) so that sums of encoded "
     "bodies cannot overflow; decode with the same world size.",
     1.0, 0.0, nullptr},
};

// The codec of the plugin named kText.name, with the plugin's CUDA kernels when it has them.
template <HalfFormat F, const CodecText& kText>
class HalfPluginCodec final : public HalfCodec<F> {
 public:
  HalfPluginCodec(const gw_host* host, ConfigReader& config)
      : HalfCodec<F>(host, config, kText.name, GW_CODEC_CUDA_OPS(plugin_half_cuda_ops())) {}
};

// The fp16 or bf16 plugin: its gw_plugin_entry returns HalfPlugin<F, kText>::entry(host_abi_major).
template <HalfFormat F, const CodecText& kText>
using HalfPlugin = CodecPlugin<HalfPluginCodec<F, kText>, kText, kHalfConfigKeys>;

}  // namespace gwc
