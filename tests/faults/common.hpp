// Shared by the rank programs of tests/faults (fault_rank, soak_rank): failing loudly, wall-clock
// stamps the driver can subtract across processes, runtime and communicator setup. C ABI only.
#pragma once

#include <gradwire/gradwire.h>

#include <time.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace faults {

inline int g_rank = 0;
inline int g_size = 1;

[[noreturn]] inline void die(const std::string& what) {
  std::printf("FAIL rank %d: %s\n", g_rank, what.c_str());
  std::fflush(stdout);
  std::exit(1);
}

inline void check(gw_status st, const std::string& what) {
  if (st != GW_OK) die(what + ": " + gw_status_string(st) + ": " + gw_last_error());
}

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

inline std::string env_or(const char* name, const char* fallback) {
  const char* v = std::getenv(name);
  return v ? v : fallback;
}

inline void init_rank_from_env() {
  g_rank = std::atoi(env_or("GW_RANK", "0").c_str());
  g_size = std::atoi(env_or("GW_WORLD_SIZE", "1").c_str());
}

// A runtime whose [runtime] timeout_s is FAULT_TIMEOUT_S (default 60), plus `toml`.
inline gw_runtime* make_runtime(const std::string& toml) {
  const std::string text = "[runtime]\ntimeout_s = " + env_or("FAULT_TIMEOUT_S", "60") + "\n" + toml;
  gw_runtime_options ro = GW_RUNTIME_OPTIONS_INIT;
  ro.config_text = text.c_str();
  ro.flags = GW_RUNTIME_NO_ENV_OVERRIDES;
  gw_runtime* rt = nullptr;
  check(gw_runtime_create(&ro, &rt), "gw_runtime_create with\n" + text);
  return rt;
}

inline gw_comm* make_comm(gw_runtime* rt) {
  gw_comm_options co = GW_COMM_OPTIONS_INIT;
  gw_comm* comm = nullptr;
  check(gw_comm_create(rt, &co, &comm), "gw_comm_create");
  if (gw_comm_rank(comm) != uint32_t(g_rank) || gw_comm_size(comm) != uint32_t(g_size))
    die("rank/size differ from GW_RANK/GW_WORLD_SIZE");
  return comm;
}

inline gw_tensor tensor(gw_dtype dt, void* data, uint64_t count) {
  gw_tensor t = GW_TENSOR_INIT;
  t.dtype = dt;
  t.data = data;
  t.count = count;
  return t;
}

}  // namespace faults
