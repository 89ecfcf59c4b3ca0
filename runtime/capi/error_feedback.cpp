// gw_error_feedback_* of the C ABI (gradwire.h, "Error feedback").
#include <gradwire/gradwire.h>

#include "codec/codec.hpp"
#include "core/abi_struct.hpp"
#include "core/error.hpp"
#include "core/tensor.hpp"
#include "ef/error_feedback.hpp"

namespace {

gw::ErrorFeedback& get(gw_error_feedback* ef) { return gw::require(ef, "error feedback")->impl; }

}  // namespace

extern "C" {

GW_API gw_status gw_error_feedback_create(gw_codec* codec, gw_error_feedback** ef) {
  return gw::guard([&] {
    gw::require(ef, "ef (output)");
    *ef = nullptr;
    *ef = new gw_error_feedback{gw::ErrorFeedback(*gw::require(codec, "codec")->impl)};
    return GW_OK;
  });
}

GW_API gw_status gw_error_feedback_destroy(gw_error_feedback* ef) {
  return gw::guard([&] {
    delete gw::require(ef, "error feedback");
    return GW_OK;
  });
}

GW_API gw_status gw_error_feedback_encode(gw_error_feedback* ef, uint64_t buffer_id, const gw_codec_context* context,
                                          const gw_tensor* in, void* payload, uint64_t capacity, uint64_t* size) {
  return gw::guard([&] {
    auto& e = get(ef);
    gw::require(size, "size");
    const gw_codec_context ctx = gw::abi::read_or_default(context, "context");
    *size = e.encode(buffer_id, ctx, gw::read_tensor(in, "in"), payload, capacity);
    return GW_OK;
  });
}

GW_API gw_status gw_error_feedback_reset(gw_error_feedback* ef) {
  return gw::guard([&] {
    get(ef).reset();
    return GW_OK;
  });
}

GW_API gw_status gw_error_feedback_state_size(gw_error_feedback* ef, uint64_t* size) {
  return gw::guard([&] {
    *gw::require(size, "size") = get(ef).state_size();
    return GW_OK;
  });
}

GW_API gw_status gw_error_feedback_save(gw_error_feedback* ef, void* buf, uint64_t capacity, uint64_t* size) {
  return gw::guard([&] {
    auto& e = get(ef);
    *gw::require(size, "size") = e.save(buf, capacity);
    return GW_OK;
  });
}

GW_API gw_status gw_error_feedback_load(gw_error_feedback* ef, const void* buf, uint64_t size) {
  return gw::guard([&] {
    get(ef).load(buf, size);
    return GW_OK;
  });
}

}  // extern "C"
