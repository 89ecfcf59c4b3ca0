// The bf16 codec: each element rounded to bfloat16 (nearest even), summable in encoded form; optional
// pre-division by the world size (prediv). Body layout: docs/wire-format.md, "bf16".
#include <gradwire/plugin.h>

#include "gw_codec/half_codec.hpp"

namespace {

constexpr gwc::CodecText kText = {
    "bf16", "Rounds each element to bfloat16; summable in encoded form (2 bytes per element).", "bfloat16 codec"};

}  // namespace

GW_PLUGIN_EXPORT const gw_plugin_descriptor* gw_plugin_entry(uint32_t host_abi_major, uint32_t /*host_abi_minor*/) {
  return gwc::HalfPlugin<gwc::HalfFormat::kBF16, kText>::entry(host_abi_major);
}
