// Shared by the rank programs of tests/faults (fault_rank, soak_rank): failing loudly, wall-clock
// stamps the driver can subtract across processes, runtime and communicator setup. C ABI only.
#pragma once

#include <gradwire/gradwire.h>

#include <time.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "../support/rank_setup.hpp"

namespace faults {

using gwrank::check;
using gwrank::die;
using gwrank::env_or;
using gwrank::g_rank;
using gwrank::g_size;
using gwrank::init_rank_from_env;
using gwrank::make_comm;
using gwrank::tensor;

// Seconds since the epoch (CLOCK_REALTIME): every rank runs on this host, so the driver can subtract a
// stamp one rank printed from a stamp another printed.
inline double wall_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return double(ts.tv_sec) + double(ts.tv_nsec) * 1e-9;
}

inline void say(const std::string& line) {
  std::printf("%s\n", line.c_str());
  std::fflush(stdout);
}

// A runtime whose [runtime] timeout_s is FAULT_TIMEOUT_S (default 60), plus `toml`.
inline gw_runtime* make_runtime(const std::string& toml) { return gwrank::make_runtime(toml, "FAULT_TIMEOUT_S"); }

}  // namespace faults
