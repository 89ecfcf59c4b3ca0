#include "core/log.hpp"

#include <cstdio>

namespace gw {

const char* log_level_name(gw_log_level level) {
  switch (level) {
    case GW_LOG_ERROR: return "error";
    case GW_LOG_WARN: return "warn";
    case GW_LOG_INFO: return "info";
    case GW_LOG_DEBUG: return "debug";
    case GW_LOG_TRACE: return "trace";
    case GW_LOG_FORCE_32BIT: break;
  }
  return "?";
}

void Logger::log(gw_log_level level, const char* component, const std::string& message) const {
  if (!enabled(level)) return;
  if (fn_ != nullptr) {
    fn_(user_, level, component, message.c_str());
    return;
  }
  std::fprintf(stderr, "gradwire %s [%s] %s\n", log_level_name(level), component, message.c_str());
}

}  // namespace gw
