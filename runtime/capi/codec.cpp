// gw_codec_* of the C ABI: codecs on their own, without a communicator.
#include <gradwire/gradwire.h>

#include "codec/codec.hpp"
#include "core/abi_struct.hpp"
#include "core/error.hpp"
#include "core/runtime.hpp"
#include "core/tensor.hpp"

namespace {

gw::Codec& get(gw_codec* codec) { return *gw::require(codec, "codec")->impl; }

gw_codec_context context_or_default(const gw_codec_context* ctx) { return gw::abi::read_or_default(ctx, "context"); }

}  // namespace

extern "C" {

GW_API gw_status gw_codec_create(gw_runtime* runtime, const char* name, gw_codec** codec) {
  return gw::guard([&] {
    gw::require(codec, "codec (output)");
    *codec = nullptr;
    auto impl = gw::require(runtime, "runtime")->impl.make_codec(name ? name : "");
    *codec = new gw_codec{std::move(impl)};
    return GW_OK;
  });
}

GW_API gw_status gw_codec_destroy(gw_codec* codec) {
  return gw::guard([&] {
    delete gw::require(codec, "codec");
    return GW_OK;
  });
}

GW_API const char* gw_codec_name(const gw_codec* codec) { return codec ? codec->impl->name().c_str() : ""; }

GW_API gw_status gw_codec_get_properties(gw_codec* codec, gw_codec_properties* properties) {
  return gw::guard([&] {
    const auto& p = get(codec).properties();
    gw::abi::write(properties, p, "properties");
    return GW_OK;
  });
}

GW_API gw_status gw_codec_max_encoded_size(gw_codec* codec, gw_dtype dtype, uint64_t count, uint64_t* bytes) {
  return gw::guard([&] {
    auto& c = get(codec);
    *gw::require(bytes, "bytes") = c.max_payload_size(dtype, count);
    return GW_OK;
  });
}

GW_API gw_status gw_codec_encode(gw_codec* codec, const gw_codec_context* context, const gw_tensor* in, void* payload,
                                 uint64_t capacity, uint64_t* size) {
  return gw::guard([&] {
    auto& c = get(codec);
    gw::require(size, "size");
    *size = c.encode(context_or_default(context), gw::read_tensor(in, "in"), payload, capacity);
    return GW_OK;
  });
}

GW_API gw_status gw_codec_decode(gw_codec* codec, const gw_codec_context* context, const void* payload, uint64_t size,
                                 gw_tensor* out, uint32_t flags) {
  return gw::guard([&] {
    auto& c = get(codec);
    gw_tensor o = gw::read_tensor(out, "out");
    c.decode(context_or_default(context), payload, size, o, flags);
    return GW_OK;
  });
}

}  // extern "C"
