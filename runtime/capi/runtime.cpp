// gw_runtime_* of the C ABI.
#include <gradwire/gradwire.h>

#include <cstring>

#include "core/abi_struct.hpp"
#include "core/error.hpp"
#include "instance/runtime.hpp"

namespace {

gw::Runtime& get(gw_runtime* rt) { return gw::require(rt, "runtime")->impl; }

gw_status copy_out(const std::string& text, char* buf, size_t capacity, size_t* length) {
  *length = text.size();
  if (buf == nullptr) return GW_OK;
  if (capacity < text.size() + 1)
    gw::fail(GW_ERR_BUFFER_TOO_SMALL, "buffer of " + std::to_string(capacity) + " bytes is too small; " +
                                          std::to_string(text.size() + 1) + " are needed (call with buf NULL to ask)");
  std::memcpy(buf, text.c_str(), text.size() + 1);
  return GW_OK;
}

}  // namespace

extern "C" {

GW_API gw_status gw_runtime_create(const gw_runtime_options* options, gw_runtime** runtime) {
  return gw::guard([&] {
    gw::require(runtime, "runtime (output)");
    *runtime = nullptr;
    const gw_runtime_options o = gw::abi::read(options, "options");
    options = &o;
    *runtime = new gw_runtime(*options);
    return GW_OK;
  });
}

GW_API gw_status gw_runtime_destroy(gw_runtime* runtime) {
  return gw::guard([&] {
    delete gw::require(runtime, "runtime");
    return GW_OK;
  });
}

GW_API gw_status gw_runtime_config_dump(gw_runtime* runtime, gw_config_format format, char* buf, size_t capacity,
                                        size_t* length) {
  return gw::guard([&] {
    const auto& config = get(runtime).config();
    gw::require(length, "length");
    switch (format) {
      case GW_CONFIG_FORMAT_TOML: return copy_out(config.dump_toml(), buf, capacity, length);
      case GW_CONFIG_FORMAT_REFERENCE: return copy_out(config.reference_markdown(), buf, capacity, length);
      default: gw::fail(GW_ERR_INVALID_ARGUMENT, "unknown gw_config_format " + std::to_string(int(format)));
    }
  });
}

GW_API gw_status gw_runtime_plugin_count(gw_runtime* runtime, uint32_t* count) {
  return gw::guard([&] {
    *gw::require(count, "count") = static_cast<uint32_t>(get(runtime).registry().candidates().size());
    return GW_OK;
  });
}

GW_API gw_status gw_runtime_plugin_info(gw_runtime* runtime, uint32_t index, gw_plugin_info* info) {
  return gw::guard([&] {
    const auto& candidates = get(runtime).registry().candidates();
    gw::abi::require(info, "info");
    if (index >= candidates.size())
      gw::fail(GW_ERR_INVALID_ARGUMENT, "plugin index " + std::to_string(index) + " is out of range (" +
                                            std::to_string(candidates.size()) + " plugins)");
    const auto& c = candidates[index];
    gw_plugin_info value = GW_PLUGIN_INFO_INIT;
    value.path = c.path.c_str();
    value.status = c.status;
    value.error = c.error.c_str();
    value.name = value.version = value.description = "";
    if (c.plugin) {
      const auto& d = c.plugin->descriptor();
      value.name = d.name;
      value.version = d.version;
      value.description = d.description ? d.description : "";
      value.abi_major = d.abi_major;
      value.abi_minor = d.abi_minor;
      value.num_components = d.num_components;
    }
    gw::abi::write(info, value, "info");
    return GW_OK;
  });
}

GW_API gw_status gw_runtime_component_info(gw_runtime* runtime, uint32_t plugin_index, uint32_t component_index,
                                           gw_component_info* info) {
  return gw::guard([&] {
    const auto& candidates = get(runtime).registry().candidates();
    gw::abi::require(info, "info");
    if (plugin_index >= candidates.size() || !candidates[plugin_index].plugin)
      gw::fail(GW_ERR_INVALID_ARGUMENT, "plugin index " + std::to_string(plugin_index) + " is not a loaded plugin");
    const auto& d = candidates[plugin_index].plugin->descriptor();
    if (component_index >= d.num_components)
      gw::fail(GW_ERR_INVALID_ARGUMENT, "component index " + std::to_string(component_index) + " is out of range (" +
                                            std::to_string(d.num_components) + " components)");
    const gw_component& c = d.components[component_index];
    gw_component_info value = GW_COMPONENT_INFO_INIT;
    value.kind = static_cast<uint32_t>(c.kind);
    value.name = c.name;
    value.help = c.help;
    gw::abi::write(info, value, "info");
    return GW_OK;
  });
}

GW_API gw_status gw_runtime_search_path_count(gw_runtime* runtime, uint32_t* count) {
  return gw::guard([&] {
    *gw::require(count, "count") = static_cast<uint32_t>(get(runtime).registry().search_paths().size());
    return GW_OK;
  });
}

GW_API gw_status gw_runtime_search_path(gw_runtime* runtime, uint32_t index, const char** path) {
  return gw::guard([&] {
    const auto& paths = get(runtime).registry().search_paths();
    gw::require(path, "path");
    if (index >= paths.size())
      gw::fail(GW_ERR_INVALID_ARGUMENT, "search path index " + std::to_string(index) + " is out of range");
    *path = paths[index].c_str();
    return GW_OK;
  });
}

}  // extern "C"
