// The logger the application passes at runtime creation, shared with every plugin through gw_host.
#pragma once

#include <gradwire/types.h>

#include <atomic>
#include <string>

namespace gw {

class Logger {
 public:
  Logger(gw_log_fn fn, void* user, gw_log_level level) : fn_(fn), user_(user), level_(level) {}
  bool enabled(gw_log_level level) const { return level <= level_.load(std::memory_order_relaxed); }
  void set_level(gw_log_level level) { level_.store(level, std::memory_order_relaxed); }
  void log(gw_log_level level, const char* component, const std::string& message) const;
  void warn(const char* component, const std::string& message) const { log(GW_LOG_WARN, component, message); }
  void info(const char* component, const std::string& message) const { log(GW_LOG_INFO, component, message); }
  void debug(const char* component, const std::string& message) const { log(GW_LOG_DEBUG, component, message); }

 private:
  gw_log_fn fn_;
  void* user_;
  std::atomic<gw_log_level> level_;
};

const char* log_level_name(gw_log_level level);

}  // namespace gw
