// gw_runtime: the validated configuration and the loaded plugins.
#pragma once

#include <gradwire/gradwire.h>

#include <memory>
#include <string>

#include "codec/codec.hpp"
#include "config/config.hpp"
#include "core/log.hpp"
#include "loader/registry.hpp"

namespace gw {

class Runtime {
 public:
  explicit Runtime(const gw_runtime_options& options);

  const Logger& logger() const { return *logger_; }
  std::shared_ptr<Logger> shared_logger() const { return logger_; }
  const Registry& registry() const { return *registry_; }
  const config::Config& config() const { return *config_; }

  // A codec by name (empty: the configured [codec] name).
  std::unique_ptr<Codec> make_codec(const std::string& name) const;

 private:
  void check_component_names() const;

  std::shared_ptr<Logger> logger_;
  std::unique_ptr<Registry> registry_;
  std::unique_ptr<config::Config> config_;
};

}  // namespace gw

struct gw_runtime {
  explicit gw_runtime(const gw_runtime_options& options) : impl(options) {}
  gw::Runtime impl;
};
