// Loads a codec plugin's shared library directly (dlopen + gw_plugin_entry) and drives its vtable with
// a minimal host, so device buffers can be passed where the C ABI's wire header would be written by
// the host. Configuration values come from a key -> TOML-literal map.
#pragma once

#include <dlfcn.h>
#include <gradwire/plugin.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

struct gw_config {
  std::map<std::string, std::string> values;
};

namespace gwgpu {

// n normal floats from a seed: the same inputs for the device and the host path.
inline std::vector<float> normal(uint64_t n, uint32_t seed) {
  std::mt19937 g(seed);
  std::normal_distribution<float> d;
  std::vector<float> v(n);
  for (float& x : v) x = d(g);
  return v;
}

// The two paths wrote the same bytes.
inline bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), 4 * a.size()) == 0);
}

inline thread_local std::string last_error;

inline gw_status get_bool(const gw_config* c, const char* key, int32_t* out) {
  auto it = c->values.find(key);
  if (it == c->values.end()) return GW_ERR_NOT_FOUND;
  *out = it->second == "true";
  return GW_OK;
}
inline gw_status get_int(const gw_config* c, const char* key, int64_t* out) {
  auto it = c->values.find(key);
  if (it == c->values.end()) return GW_ERR_NOT_FOUND;
  *out = std::strtoll(it->second.c_str(), nullptr, 10);
  return GW_OK;
}
inline gw_status get_float(const gw_config* c, const char* key, double* out) {
  auto it = c->values.find(key);
  if (it == c->values.end()) return GW_ERR_NOT_FOUND;
  *out = std::strtod(it->second.c_str(), nullptr);
  return GW_OK;
}
inline gw_status get_string(const gw_config* c, const char* key, const char** out) {
  auto it = c->values.find(key);
  if (it == c->values.end()) return GW_ERR_NOT_FOUND;
  *out = it->second.c_str();
  return GW_OK;
}

inline const gw_host* host() {
  static const gw_host h = [] {
    gw_host x{};
    x.struct_size = sizeof(gw_host);
    x.abi_major = GW_ABI_VERSION_MAJOR;
    x.abi_minor = GW_ABI_VERSION_MINOR;
    x.log = [](void*, gw_log_level, const char*, const char*) {};
    x.set_error = [](void*, const char* m) { last_error = m; };
    x.config_get_bool = get_bool;
    x.config_get_int = get_int;
    x.config_get_float = get_float;
    x.config_get_string = get_string;
    return x;
  }();
  return &h;
}

// One codec instance of plugin `name` (libgw-<name>.so in plugin_dir) with every key of its table
// given: the table's default unless `overrides` names it.
class DirectCodec {
 public:
  DirectCodec(const std::string& plugin_dir, const std::string& name, std::map<std::string, std::string> overrides = {}) {
    lib_ = dlopen((plugin_dir + "/libgw-" + name + ".so").c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!lib_) throw std::runtime_error(dlerror());
    auto entry = reinterpret_cast<gw_plugin_entry_fn>(dlsym(lib_, GW_PLUGIN_ENTRY_NAME));
    const gw_plugin_descriptor* d = entry(GW_ABI_VERSION_MAJOR, GW_ABI_VERSION_MINOR);
    const gw_component& c = d->components[0];
    gw_config cfg;
    for (uint32_t k = 0; k < c.num_config_keys; ++k) {
      std::string v = c.config_keys[k].default_value;
      if (v.size() >= 2 && v.front() == '"') v = v.substr(1, v.size() - 2);
      cfg.values[c.config_keys[k].name] = v;
    }
    for (auto& [k, v] : overrides) cfg.values[k] = v;
    vt_ = static_cast<const gw_codec_vtable*>(c.vtable);
    if (vt_->create(nullptr, host(), &cfg, &codec_) != GW_OK) throw std::runtime_error(last_error);
  }
  ~DirectCodec() {
    if (codec_) vt_->destroy(codec_);
  }
  DirectCodec(const DirectCodec&) = delete;
  DirectCodec& operator=(const DirectCodec&) = delete;

  const gw_codec_vtable* vt() const { return vt_; }
  void* codec() const { return codec_; }
  uint64_t max_body(gw_dtype dtype, uint64_t n) const {
    uint64_t b = 0, w = 0;
    if (vt_->max_encoded_size(codec_, dtype, n, &b, &w) != GW_OK) throw std::runtime_error(last_error);
    return b;
  }

 private:
  void* lib_ = nullptr;  // kept loaded for the process
  const gw_codec_vtable* vt_ = nullptr;
  void* codec_ = nullptr;
};

}  // namespace gwgpu
