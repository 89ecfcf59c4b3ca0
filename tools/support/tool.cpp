#include "support/tool.hpp"

namespace gwcli {

void check(gw_status status, const std::string& doing) {
  if (status < 0) throw Failure(status, doing.empty() ? std::string(gw_last_error()) : doing + ": " + gw_last_error());
}

RuntimePtr open_runtime(const std::string& config_path, uint32_t flags) {
  gw_runtime_options options = GW_RUNTIME_OPTIONS_INIT;
  options.config_path = config_path.empty() ? nullptr : config_path.c_str();
  options.flags = flags;
  gw_runtime* rt = nullptr;
  check(gw_runtime_create(&options, &rt), "");
  return RuntimePtr(rt);
}

}  // namespace gwcli
