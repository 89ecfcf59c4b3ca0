// The `gradwire` command: one file per subcommand, each adding its command line to the CLI11 app and
// calling the tool behind it (tools/, bench/suites/). The command is a client of libgradwire's C ABI
// only, like any application.
#pragma once

#include <CLI/CLI.hpp>

#include "support/tool.hpp"  // Failure, check, open_runtime (tools/support)

namespace gwcli {

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
