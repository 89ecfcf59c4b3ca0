// The fp16 codec: each element rounded to IEEE half precision (nearest even), summable in encoded form; optional
// pre-division by the world size (prediv). Body layout: docs/wire-format.md, "fp16".
#include <gradwire/plugin.h>

#include "gw_codec/half_codec.hpp"

#if defined(GW_CODEC_WITH_CUDA)
const gwc::HalfCudaOps* gwc_fp16_cuda_ops();  // cuda.cu
#endif

namespace {

#if defined(GW_CODEC_WITH_CUDA)
const gwc::HalfCudaOps* cuda_ops() { return gwc_fp16_cuda_ops(); }
#else
const gwc::HalfCudaOps* cuda_ops() { return nullptr; }
#endif

class Codec final : public gwc::HalfCodec<gwc::HalfFormat::kF16> {
 public:
  Codec(const gw_host* host, gwc::ConfigReader& config) : HalfCodec(host, config, "fp16", cuda_ops()) {}
};

const gw_config_key kKeys[] = {
    {sizeof(gw_config_key), "prediv", GW_CONFIG_BOOL, "false",
     "Divide by the world size before rounding (and multiply back when decoding) so that sums of encoded "
     "bodies cannot overflow; decode with the same world size.",
     1.0, 0.0, nullptr},
};

const gw_codec_vtable kVtable = gwc::make_codec_vtable<Codec>();

const gw_component kComponents[] = {
    {sizeof(gw_component), GW_COMPONENT_CODEC, "fp16",
     "Rounds each element to IEEE half precision; summable in encoded form (2 bytes per element).", kKeys,
     sizeof kKeys / sizeof kKeys[0], &kVtable},
};

const gw_plugin_descriptor kDescriptor = {
    sizeof(gw_plugin_descriptor), GW_ABI_VERSION_MAJOR, GW_ABI_VERSION_MINOR, "fp16", "1.0.0",
    "IEEE half precision codec", nullptr, nullptr, kComponents, sizeof kComponents / sizeof kComponents[0], nullptr};

}  // namespace

GW_PLUGIN_EXPORT const gw_plugin_descriptor* gw_plugin_entry(uint32_t host_abi_major, uint32_t /*host_abi_minor*/) {
  return host_abi_major == GW_ABI_VERSION_MAJOR ? &kDescriptor : nullptr;
}
