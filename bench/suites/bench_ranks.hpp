// Ranks for the communication suites (P3 - P6): this process forks N children, each a rank with GW_RANK,
// GW_WORLD_SIZE, GW_ROOT_ADDR/PORT set, its own runtime and communicator; rank 0's JSON result comes
// back through a pipe. A rank started by `gradwire run` (P5) makes its runtime and communicator the same
// way. And a subprocess runner for the peers (ucx_perftest, mpirun).
#pragma once

#include <gradwire/gradwire.h>

#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "support/process.hpp"

namespace gwcli::bench {

using Env = gwcli::Env;

// How a rank makes its runtime and communicator.
struct RankSetup {
  std::string config;       // TOML file handed to gw_runtime_create, or ""
  std::string config_text;  // TOML text used when config is "", or ""
  double timeout_s = 300;   // the communicator's timeout (rendezvous and every wait)
};

// What a rank runs; rank 0's result is the run's.
using RankBody = std::function<nlohmann::json(gw_runtime* runtime, gw_comm* comm)>;

// This process as one rank, its rank, world size and rendezvous from the GW_* environment: creates the
// runtime and the communicator, runs body, destroys them and returns what body returned. Throws
// std::runtime_error for an error status.
nlohmann::json run_rank(const RankSetup& setup, const RankBody& body);

// Runs body on n forked ranks (environment `env` added); returns what rank 0's body returned. Throws
// std::runtime_error when a rank fails.
nlohmann::json run_forked_ranks(int n, const Env& env, const RankSetup& setup, const RankBody& body);

// Runs argv (environment `env` added) and returns its exit status. Its stdout is captured into *out;
// with out NULL it goes to this process's stderr (so a suite's --json output stays clean).
int run_captured(const std::vector<std::string>& argv, const Env& env, std::string* out);

// An MPI peer (peers/mpi_allreduce.c, gradwire-mpi-allreduce; peers/mpi_shards.c, gradwire-mpi-shards)
// next to this executable; throws, naming `suite`, when it was not built.
std::string mpi_peer_path(const std::string& suite, const std::string& program = "gradwire-mpi-allreduce");

// `mpirun` and the options every MPI peer run takes: as root, no binding, and no hardware topology in
// shared memory (rtc_hwloc_vmhole none: Open MPI's daemons map it at an address they guess to be free,
// and now and then crashed there, in hwloc_shmem_topology_write). The suites append their own.
std::vector<std::string> mpirun_argv();

// The peer's JSON line ({"peer": ...}) in mpirun's output; throws "<what> failed (status S): <output>"
// when mpirun's exit status is not 0 or the line is missing.
nlohmann::json mpi_peer_result(int status, const std::string& output, const std::string& what);

// Throws std::runtime_error("what: gw_last_error()") for an error status.
void check_bench(gw_status s, const std::string& what);

// The slowest rank's value of `mine` (an allreduce max).
double slowest_rank(gw_comm* comm, double mine);

// `count` normally distributed values (mean 0, sd 1) from `seed`: the input of the allreduce suites.
std::vector<float> gaussian_input(uint64_t count, uint32_t seed);

// Codecs created by name (throwing, named, when one cannot be), destroyed with the set.
class CodecSet {
 public:
  CodecSet(gw_runtime* rt, std::vector<std::string> names, const std::string& suite);
  size_t size() const { return names_.size(); }
  const std::string& name(size_t i) const { return names_.at(i); }
  gw_codec* codec(size_t i) const { return owned_.at(i).get(); }

 private:
  struct Destroy {
    void operator()(gw_codec* c) const { gw_codec_destroy(c); }
  };
  std::vector<std::string> names_;
  std::vector<std::unique_ptr<gw_codec, Destroy>> owned_;
};

// The slowest rank's seconds of gw_allreduce_compressed(codec, avg) from `in` into `out` for each codec
// of the set (one list per codec, in its order), interleaved: one warm-up of each, then `repetitions`
// rounds that time each codec once in turn (barrier before each; codec seed 7, a new step each call).
// A stretch in which a shared machine runs slow then falls on every codec alike, not on whichever was
// being timed. Each timed call follows an untimed one of the same codec (the primer): the connections'
// congestion state is then a training step's, whatever codec ran before. `suite` names the suite in
// error messages ("P5"), with the codec. `before_round` (optional, collective) runs before each timed
// round: a measurement that should cover the same stretch of time.
std::vector<std::vector<double>> time_compressed_allreduces(gw_comm* comm, const CodecSet& codecs,
                                                            std::vector<float>& in, std::vector<float>& out,
                                                            int repetitions, const std::string& suite,
                                                            const std::function<void()>& before_round = {});

// A u8 tensor over `bytes` bytes at data (for gw_send / gw_recv).
gw_tensor bytes_tensor(void* data, uint64_t bytes);

}  // namespace gwcli::bench
