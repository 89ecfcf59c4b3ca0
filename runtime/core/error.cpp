#include "core/error.hpp"

namespace gw {
namespace {
thread_local std::string t_last_error;
}

void fail(gw_status status, const std::string& message) { throw Error(status, message); }

const char* status_name(gw_status status) noexcept {
  switch (status) {
    case GW_OK: return "GW_OK";
    case GW_IN_PROGRESS: return "GW_IN_PROGRESS";
    case GW_MEMBERSHIP_CHANGED: return "GW_MEMBERSHIP_CHANGED";
    case GW_ERR_INVALID_ARGUMENT: return "GW_ERR_INVALID_ARGUMENT";
    case GW_ERR_NO_MEMORY: return "GW_ERR_NO_MEMORY";
    case GW_ERR_NOT_FOUND: return "GW_ERR_NOT_FOUND";
    case GW_ERR_PLUGIN: return "GW_ERR_PLUGIN";
    case GW_ERR_VERSION: return "GW_ERR_VERSION";
    case GW_ERR_CONFIG: return "GW_ERR_CONFIG";
    case GW_ERR_UNSUPPORTED: return "GW_ERR_UNSUPPORTED";
    case GW_ERR_TIMEOUT: return "GW_ERR_TIMEOUT";
    case GW_ERR_MISMATCH: return "GW_ERR_MISMATCH";
    case GW_ERR_TRANSPORT: return "GW_ERR_TRANSPORT";
    case GW_ERR_CORRUPT: return "GW_ERR_CORRUPT";
    case GW_ERR_ABORTED: return "GW_ERR_ABORTED";
    case GW_ERR_BUFFER_TOO_SMALL: return "GW_ERR_BUFFER_TOO_SMALL";
    case GW_ERR_STATE: return "GW_ERR_STATE";
    case GW_ERR_INTERNAL: return "GW_ERR_INTERNAL";
    case GW_STATUS_FORCE_32BIT: break;
  }
  return "GW_ERR_UNKNOWN";
}

void set_last_error(const std::string& message) noexcept {
  try {
    t_last_error = message;
  } catch (...) {
    t_last_error.clear();
  }
}
void clear_last_error() noexcept { t_last_error.clear(); }
const char* last_error() noexcept { return t_last_error.c_str(); }

}  // namespace gw
