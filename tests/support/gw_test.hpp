// Helpers shared by the GoogleTest suites: runtimes from TOML text, temporary files, running commands,
// launching rank programs and checking that every rank finished.
#pragma once

#include <gradwire/gradwire.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace gwtest {

// gw_runtime_create from TOML text with extra plugin paths; returns the status, sets *out.
inline gw_status create_runtime(const std::string& toml, gw_runtime** out, std::vector<std::string> paths = {},
                                uint32_t flags = GW_RUNTIME_NO_ENV_OVERRIDES) {
  std::vector<const char*> raw;
  for (const auto& p : paths) raw.push_back(p.c_str());
  gw_runtime_options o = GW_RUNTIME_OPTIONS_INIT;
  o.config_text = toml.empty() ? nullptr : toml.c_str();
  o.plugin_paths = raw.empty() ? nullptr : raw.data();
  o.num_plugin_paths = static_cast<uint32_t>(raw.size());
  o.flags = flags;
  o.log_level = GW_LOG_ERROR;
  return gw_runtime_create(&o, out);
}

struct Runtime {
  gw_runtime* rt = nullptr;
  explicit Runtime(const std::string& toml = "", std::vector<std::string> paths = {}) {
    const gw_status s = create_runtime(toml, &rt, std::move(paths));
    EXPECT_EQ(s, GW_OK) << gw_last_error();
  }
  ~Runtime() {
    if (rt) gw_runtime_destroy(rt);
  }
  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;
};

// A fresh temporary folder, removed at the end of the test.
struct TempDir {
  std::filesystem::path path;
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "gwtest-XXXXXX").string();
    path = mkdtemp(tmpl.data());
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  std::string write(const std::string& name, const std::string& text) const {
    std::ofstream(path / name) << text;
    return (path / name).string();
  }
};

struct CommandResult {
  int exit_code = -1;
  std::string output;  // stdout and stderr together
};

// Runs a shell command, capturing its output and exit status.
inline CommandResult run_command(const std::string& command) {
  CommandResult r;
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  if (!pipe) return r;
  std::array<char, 4096> buf{};
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), pipe)) > 0) r.output.append(buf.data(), n);
  const int status = pclose(pipe);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return r;
}

// The drivers of rank programs (tests/ps, tests/cache, tests/sync, tests/autocodec): `gradwire run`
// starts `program args` on `ranks` local ranks (`run_options`: more options of `gradwire run`, such as
// --ranks-per-node 2), each rank's waits bounded by MP_TIMEOUT_S = timeout_s.
#ifdef GW_CLI
inline std::string launch_command(int ranks, const std::string& program, const std::string& args,
                                  const std::string& run_options = "", int timeout_s = 60) {
  return "MP_TIMEOUT_S=" + std::to_string(timeout_s) + " " + std::string(GW_CLI) + " run -n " +
         std::to_string(ranks) + " " + run_options + " -- " + program + " " + args;
}
#endif

// Every rank of a launch finished: the launcher exited 0 and rank r printed "OK rank r", for each r.
inline void expect_every_rank_ok(const CommandResult& r, int ranks) {
  EXPECT_EQ(r.exit_code, 0) << r.output;
  for (int rank = 0; rank < ranks; ++rank)
    EXPECT_NE(r.output.find("OK rank " + std::to_string(rank)), std::string::npos)
        << "rank " << rank << " did not finish:\n" << r.output;
}

inline std::string read_file(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

}  // namespace gwtest
