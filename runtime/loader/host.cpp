#include "loader/host.hpp"

#include "core/error.hpp"

namespace gw {
namespace {

thread_local std::string t_plugin_error;

void set_error(void*, const char* message) { t_plugin_error = message ? message : ""; }

template <class T>
gw_status get(const gw_config* config, const char* key, T* out, config::ValueType type) {
  if (config == nullptr || key == nullptr || out == nullptr) {
    t_plugin_error = "config getter called with a NULL argument";
    return GW_ERR_INVALID_ARGUMENT;
  }
  const config::KeySpec* spec = config->spec->key(key);
  if (spec == nullptr) {
    t_plugin_error = std::string("[") + config->spec->path + "] has no key '" + key + "'; declare it in the component's config_keys";
    return GW_ERR_NOT_FOUND;
  }
  if (spec->type != type) {
    t_plugin_error = std::string("[") + config->spec->path + "] " + key + " is a " + config::type_name(spec->type) +
                     ", not a " + config::type_name(type);
    return GW_ERR_INVALID_ARGUMENT;
  }
  const toml::node* node = config->values->get(key);
  if constexpr (std::is_same_v<T, const char*>) {
    *out = node->as_string()->get().c_str();
  } else if constexpr (std::is_same_v<T, int32_t>) {
    *out = node->value<bool>().value() ? 1 : 0;
  } else {
    *out = node->value<T>().value();
  }
  return GW_OK;
}

gw_status get_bool(const gw_config* c, const char* k, int32_t* out) { return get(c, k, out, config::ValueType::Bool); }
gw_status get_int(const gw_config* c, const char* k, int64_t* out) { return get(c, k, out, config::ValueType::Int); }
gw_status get_float(const gw_config* c, const char* k, double* out) { return get(c, k, out, config::ValueType::Float); }
gw_status get_string(const gw_config* c, const char* k, const char** out) { return get(c, k, out, config::ValueType::String); }
const void* no_extension(void*, const char*) { return nullptr; }

}  // namespace

HostServices::HostServices(std::shared_ptr<const Logger> logger, std::string plugin_file)
    : logger_(std::move(logger)), plugin_file_(std::move(plugin_file)) {
  host_ = gw_host{};
  host_.struct_size = sizeof(gw_host);
  host_.abi_major = GW_ABI_VERSION_MAJOR;
  host_.abi_minor = GW_ABI_VERSION_MINOR;
  host_.ctx = this;
  host_.log = &HostServices::log;
  host_.set_error = &set_error;
  host_.config_get_bool = &get_bool;
  host_.config_get_int = &get_int;
  host_.config_get_float = &get_float;
  host_.config_get_string = &get_string;
  host_.get_extension = &no_extension;
}

void HostServices::log(void* ctx, gw_log_level level, const char* component, const char* message) {
  auto* self = static_cast<HostServices*>(ctx);
  self->logger_->log(level, component ? component : self->plugin_file_.c_str(), message ? message : "");
}

std::string take_plugin_error() {
  std::string m = std::move(t_plugin_error);
  t_plugin_error.clear();
  return m;
}
void clear_plugin_error() { t_plugin_error.clear(); }

void check_plugin(gw_status status, const std::string& what) {
  if (status >= 0) return;
  std::string detail = take_plugin_error();
  if (detail.empty()) detail = std::string(status_name(status)) + " (the plugin gave no message)";
  fail(status, what + ": " + detail);
}

}  // namespace gw
