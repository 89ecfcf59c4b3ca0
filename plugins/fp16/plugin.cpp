// The fp16 codec: each element rounded to IEEE half precision (nearest even), summable in encoded form; optional
// pre-division by the world size (prediv). Body layout: docs/wire-format.md, "fp16".
#include <gradwire/plugin.h>

#include "gw_codec/half_codec.hpp"

namespace {

constexpr gwc::CodecText kText = {
    "fp16", "Rounds each element to IEEE half precision; summable in encoded form (2 bytes per element).",
    "IEEE half precision codec"};

}  // namespace

GW_PLUGIN_EXPORT const gw_plugin_descriptor* gw_plugin_entry(uint32_t host_abi_major, uint32_t /*host_abi_minor*/) {
  return gwc::HalfPlugin<gwc::HalfFormat::kF16, kText>::entry(host_abi_major);
}
