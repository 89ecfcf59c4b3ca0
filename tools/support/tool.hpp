// What every tool of the `gradwire` command shares (the trainer, the conformance kit, the benchmark
// suites, calibrate and simulate): a failed C ABI call as an exception, and a runtime opened from a TOML
// file. The tools are clients of libgradwire's C ABI only, like any application.
#pragma once

#include <gradwire/gradwire.h>

#include <memory>
#include <stdexcept>
#include <string>

namespace gwcli {

// A failed gradwire call: the status and gw_last_error(), printed by main before exiting non-zero.
struct Failure : std::runtime_error {
  Failure(gw_status s, const std::string& what) : std::runtime_error(what), status(s) {}
  gw_status status;
};

// Throws Failure when `status` is an error.
void check(gw_status status, const std::string& doing);

struct RuntimeDeleter {
  void operator()(gw_runtime* rt) const { gw_runtime_destroy(rt); }
};
using RuntimePtr = std::unique_ptr<gw_runtime, RuntimeDeleter>;

// Creates a runtime from an optional TOML file.
RuntimePtr open_runtime(const std::string& config_path, uint32_t flags = 0);

}  // namespace gwcli
