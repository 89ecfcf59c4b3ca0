// The gw_host services a plugin receives: logging, error text, configuration getters, extensions.
#pragma once

#include <gradwire/plugin.h>

#include <memory>
#include <string>

#include "config/schema.hpp"
#include "config/toml.hpp"
#include "core/log.hpp"

// The opaque gw_config of plugin.h: a component's effective section and its key table.
struct gw_config {
  const toml::table* values;
  const gw::config::SectionSpec* spec;
};

namespace gw {

// Per-plugin host context; lives as long as the plugin library is loaded.
class HostServices {
 public:
  HostServices(std::shared_ptr<const Logger> logger, std::string plugin_file);
  const gw_host* host() const { return &host_; }

 private:
  static void log(void* ctx, gw_log_level level, const char* component, const char* message);
  std::shared_ptr<const Logger> logger_;
  std::string plugin_file_;
  gw_host host_;
};

// The message a plugin gave with host->set_error on this thread since the last take (cleared by it).
std::string take_plugin_error();
void clear_plugin_error();

// Calls a plugin function returning gw_status; on an error status throws gw::Error with `what`, the
// plugin's own message (or the status name) appended.
void check_plugin(gw_status status, const std::string& what);
// The same with `what` = kind + " '" + name + "'" + detail, built only on failure: for calls made per
// message or per piece (transport test and progress, codec encode and decode, a schedule's step).
inline void check_plugin(gw_status status, const char* kind, const std::string& name, const char* detail) {
  if (status >= 0) return;
  check_plugin(status, std::string(kind) + " '" + name + "'" + detail);
}

}  // namespace gw
