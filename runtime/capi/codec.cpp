// gw_codec_* of the C ABI: codecs on their own, without a communicator.
#include <gradwire/gradwire.h>

#include <cstring>
#include <vector>

#include "codec/codec.hpp"
#include "core/abi_struct.hpp"
#include "core/error.hpp"
#include "core/tensor.hpp"
#include "instance/runtime.hpp"

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

GW_API gw_status gw_codec_save_state(gw_codec* codec, void* buf, uint64_t capacity, uint64_t* size) {
  return gw::guard([&] {
    auto& c = get(codec);
    gw::require(size, "size");
    const std::vector<unsigned char> blob = c.save_state();
    *size = blob.size();
    if (buf == nullptr) return GW_OK;
    if (capacity < blob.size())
      gw::fail(GW_ERR_BUFFER_TOO_SMALL, "the codec state needs " + std::to_string(blob.size()) + " bytes, the buffer has " +
                                            std::to_string(capacity) + "; ask gw_codec_save_state with buf NULL first");
    std::memcpy(buf, blob.data(), blob.size());
    return GW_OK;
  });
}

GW_API gw_status gw_codec_load_state(gw_codec* codec, const void* buf, uint64_t size) {
  return gw::guard([&] {
    auto& c = get(codec);
    if (size > 0) gw::require(buf, "buf");
    c.load_state(static_cast<const unsigned char*>(buf), size);
    return GW_OK;
  });
}

}  // extern "C"
