// What every multi-process rank program of the tests starts with: its rank from the launcher's
// variables, failing loudly ("FAIL rank R: ..." and exit 1, which the drivers look for), tensors, and a
// runtime and communicator made from a TOML text. C ABI only. The programs' own headers
// (tests/sync/common.hpp, tests/faults/common.hpp) bring these names into their namespaces.
#pragma once

#include <gradwire/gradwire.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace gwrank {

inline int g_rank = 0;
inline int g_size = 1;
inline gw_comm* g_comm = nullptr;  // the rank's communicator once make_comm made it

[[noreturn]] inline void die(const std::string& what) {
  std::printf("FAIL rank %d: %s\n", g_rank, what.c_str());
  std::fflush(stdout);
  std::exit(1);
}

inline void check(gw_status st, const std::string& what) {
  if (st != GW_OK) die(what + ": " + gw_status_string(st) + ": " + gw_last_error());
}

inline gw_tensor tensor(gw_dtype dt, void* data, uint64_t count) {
  gw_tensor t = GW_TENSOR_INIT;
  t.dtype = dt;
  t.data = data;
  t.count = count;
  return t;
}

inline std::string env_or(const char* name, const char* fallback) {
  const char* v = std::getenv(name);
  return v ? v : fallback;
}

inline void init_rank_from_env() {
  g_rank = std::atoi(env_or("GW_RANK", "0").c_str());
  g_size = std::atoi(env_or("GW_WORLD_SIZE", "1").c_str());
}

// A runtime whose [runtime] timeout_s is the environment variable `timeout_variable` (default 60), then
// `toml`; the runtime ignores GRADWIRE_* overrides so a test's configuration is exactly its text.
inline gw_runtime* make_runtime(const std::string& toml, const char* timeout_variable) {
  const std::string text = "[runtime]\ntimeout_s = " + env_or(timeout_variable, "60") + "\n" + toml;
  gw_runtime_options ro = GW_RUNTIME_OPTIONS_INIT;
  ro.config_text = text.c_str();
  ro.flags = GW_RUNTIME_NO_ENV_OVERRIDES;
  gw_runtime* rt = nullptr;
  check(gw_runtime_create(&ro, &rt), "gw_runtime_create with\n" + text);
  return rt;
}

// The communicator of the launcher's variables; its rank and size must be GW_RANK / GW_WORLD_SIZE.
inline gw_comm* make_comm(gw_runtime* rt) {
  gw_comm_options co = GW_COMM_OPTIONS_INIT;
  gw_comm* comm = nullptr;
  check(gw_comm_create(rt, &co, &comm), "gw_comm_create");
  if (gw_comm_rank(comm) != uint32_t(g_rank) || gw_comm_size(comm) != uint32_t(g_size))
    die("rank/size differ from GW_RANK/GW_WORLD_SIZE");
  g_comm = comm;
  return comm;
}

}  // namespace gwrank
