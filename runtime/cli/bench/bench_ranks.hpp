// Ranks for the communication suites (P3, P4): this process forks N children, each a rank with GW_RANK,
// GW_WORLD_SIZE, GW_ROOT_ADDR/PORT set, its own runtime and communicator; rank 0's JSON result comes
// back through a pipe. And a subprocess runner for the peers (ucx_perftest, mpirun).
#pragma once

#include <gradwire/gradwire.h>

#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

namespace gwcli::bench {

using Env = std::vector<std::pair<std::string, std::string>>;

// Runs body(comm) on n forked ranks (environment `env` added, `config` a TOML file or ""); returns what
// rank 0's body returned. Throws std::runtime_error when a rank fails.
nlohmann::json run_forked_ranks(int n, const Env& env, const std::string& config,
                                const std::function<nlohmann::json(gw_comm*)>& body);

// A free TCP port below the ephemeral range.
int free_port_below_ephemeral();

// Runs argv (environment `env` added) and returns its exit status; its stdout is captured into *out.
int run_captured(const std::vector<std::string>& argv, const Env& env, std::string* out);

// Throws std::runtime_error("what: gw_last_error()") for an error status.
void check_bench(gw_status s, const std::string& what);

// The slowest rank's value of `mine` (an allreduce max).
double slowest_rank(gw_comm* comm, double mine);

}  // namespace gwcli::bench
