// The extensible structs of the C ABI (docs/abi.md, "Extensible structs"), read and written the one way
// that keeps old and new binaries working together:
//   - each struct has a first version: the bytes up to the end of the last member it had in ABI 1.0
//     (Struct<T>::first). A struct_size below it is refused; any struct_size at or above it is accepted;
//   - reading a caller's (or a plugin's) struct gives this library's version of it: the members its
//     struct_size covers, the *_INIT defaults for the rest (read / widen);
//   - writing into a caller's struct writes min(its struct_size, ours) bytes and keeps its struct_size
//     (write).
// Everything past the C ABI then works with full structs of this library's version only.
#pragma once

#include <gradwire/gradwire.h>
#include <gradwire/plugin.h>

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <string>

#include "core/error.hpp"

namespace gw::abi {

template <class T>
struct Struct;  // first: bytes of the first version; defaults(): the values of a member that is absent

// `last` is the last member of the struct's first version. When a struct grows, `last` stays.
#define GW_ABI_FIRST_VERSION(T, last, ...)                                                 \
  template <>                                                                              \
  struct Struct<T> {                                                                       \
    static constexpr uint32_t first = uint32_t(offsetof(T, last) + sizeof(T::last));       \
    static T defaults() {                                                                  \
      T d = __VA_ARGS__;                                                                   \
      d.struct_size = uint32_t(sizeof(T));                                                 \
      return d;                                                                            \
    }                                                                                      \
  }

// Application structs (gradwire.h, types.h).
GW_ABI_FIRST_VERSION(gw_tensor, stream, GW_TENSOR_INIT);
GW_ABI_FIRST_VERSION(gw_codec_properties, dtypes, GW_CODEC_PROPERTIES_INIT);
GW_ABI_FIRST_VERSION(gw_codec_context, workspace_bytes, GW_CODEC_CONTEXT_INIT);
GW_ABI_FIRST_VERSION(gw_runtime_options, flags, GW_RUNTIME_OPTIONS_INIT);
GW_ABI_FIRST_VERSION(gw_plugin_info, num_components, GW_PLUGIN_INFO_INIT);
GW_ABI_FIRST_VERSION(gw_component_info, help, GW_COMPONENT_INFO_INIT);
GW_ABI_FIRST_VERSION(gw_comm_options, timeout_s, GW_COMM_OPTIONS_INIT);
GW_ABI_FIRST_VERSION(gw_sync_options, flags, GW_SYNC_OPTIONS_INIT);
GW_ABI_FIRST_VERSION(gw_sync_bucket_info, flags, GW_SYNC_BUCKET_INFO_INIT);
GW_ABI_FIRST_VERSION(gw_sync_stats, syncs, GW_SYNC_STATS_INIT);
GW_ABI_FIRST_VERSION(gw_ps_options, flags, GW_PS_OPTIONS_INIT);
GW_ABI_FIRST_VERSION(gw_ps_stats, flags, GW_PS_STATS_INIT);
GW_ABI_FIRST_VERSION(gw_cache_options, flags, GW_CACHE_OPTIONS_INIT);
GW_ABI_FIRST_VERSION(gw_cache_stats, flags, GW_CACHE_STATS_INIT);
// Plugin structs (plugin.h). Structs without an *_INIT macro default to zero: an absent function
// pointer is NULL, i.e. an absent optional member.
GW_ABI_FIRST_VERSION(gw_config_key, choices, GW_CONFIG_KEY_INIT);
GW_ABI_FIRST_VERSION(gw_component, vtable, GW_COMPONENT_INIT);
GW_ABI_FIRST_VERSION(gw_plugin_descriptor, get_extension, GW_PLUGIN_DESCRIPTOR_INIT);
GW_ABI_FIRST_VERSION(gw_transport_init, timeout_s, GW_TRANSPORT_INIT_INIT);
GW_ABI_FIRST_VERSION(gw_codec_vtable, get_extension, {});
GW_ABI_FIRST_VERSION(gw_codec_round_plan, wire_codec, GW_CODEC_ROUND_PLAN_INIT);  // since 1.4
GW_ABI_FIRST_VERSION(gw_transport_vtable, get_extension, {});
GW_ABI_FIRST_VERSION(gw_schedule_vtable, get_extension, {});
GW_ABI_FIRST_VERSION(gw_schedule_runtime, keep_local, {});
GW_ABI_FIRST_VERSION(gw_host, get_extension, {});

#undef GW_ABI_FIRST_VERSION

template <class T>
constexpr uint32_t first_size() {
  return Struct<T>::first;
}

// The message for a struct_size below the first version, naming the struct and the fix.
inline std::string too_small(const char* what, uint32_t struct_size, uint32_t first) {
  return std::string(what) + "->struct_size is " + std::to_string(struct_size) + ", below the " +
         std::to_string(first) + " bytes of the struct's first version; initialize the struct with its *_INIT macro";
}

// This library's version of a struct whose struct_size was checked (>= first): the members it covers,
// the defaults for the rest.
template <class T>
T widen(const T& s) {
  T out = Struct<T>::defaults();
  std::memcpy(static_cast<void*>(&out), static_cast<const void*>(&s), std::min<size_t>(s.struct_size, sizeof(T)));
  out.struct_size = uint32_t(sizeof(T));
  return out;
}

// Throws GW_ERR_INVALID_ARGUMENT when `s` is NULL or its struct_size is below the first version.
template <class T>
void require(const T* s, const char* what) {
  gw::require(s, what);
  if (s->struct_size < first_size<T>()) fail(GW_ERR_INVALID_ARGUMENT, too_small(what, s->struct_size, first_size<T>()));
}

// A caller's input struct as this library's version (require + widen).
template <class T>
T read(const T* s, const char* what) {
  require(s, what);
  return widen(*s);
}

// A caller's optional input struct: NULL gives the defaults.
template <class T>
T read_or_default(const T* s, const char* what) {
  return s == nullptr ? Struct<T>::defaults() : read(s, what);
}

// Fills a caller's output struct with `value`: min(its struct_size, ours) bytes; its struct_size is kept.
template <class T>
void write(T* out, const T& value, const char* what) {
  require(out, what);
  const uint32_t size = out->struct_size;
  std::memcpy(static_cast<void*>(out), static_cast<const void*>(&value), std::min<size_t>(size, sizeof(T)));
  out->struct_size = size;
}

// Element i of an array of extensible structs a plugin declared: the plugin's struct_size is the
// array's stride (its sizeof, set by the *_INIT macro), which may differ from ours.
template <class T>
const T& element(const T* array, uint32_t stride, uint32_t i) {
  return *reinterpret_cast<const T*>(reinterpret_cast<const unsigned char*>(array) + size_t(stride) * i);
}

}  // namespace gw::abi
