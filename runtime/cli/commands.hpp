// The `gradwire` command: one file per subcommand, each adding itself to the CLI11 app. The command is
// a client of libgradwire's C ABI only, like any application.
#pragma once

#include <gradwire/gradwire.h>

#include <CLI/CLI.hpp>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

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

// Each subcommand registers itself; `exit_code` is set by the subcommand's callback.
void add_plugins_command(CLI::App& app, int& exit_code);
void add_config_command(CLI::App& app, int& exit_code);
void add_bench_command(CLI::App& app, int& exit_code);
void add_run_command(CLI::App& app, int& exit_code);
void add_train_command(CLI::App& app, int& exit_code);
void add_conformance_command(CLI::App& app, int& exit_code);
void add_calibrate_command(CLI::App& app, int& exit_code);  // cmd_calibrate.cpp
void add_simulate_command(CLI::App& app, int& exit_code);   // cmd_simulate.cpp

}  // namespace gwcli
