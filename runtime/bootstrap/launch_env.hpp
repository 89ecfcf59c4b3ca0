// Who this process is (rank, world size, local rank) and where the root's rendezvous listens, read from
// the conventions people launch with: gradwire's own GW_* variables, torchrun, Open MPI and Slurm.
#pragma once

#include <cstdint>
#include <string>

namespace gw::bootstrap {

struct LaunchInfo {
  uint32_t rank = 0;
  uint32_t world_size = 1;
  uint32_t local_rank = 0;
  uint32_t local_size = 1;   // ranks on this host, as the launcher says; 1 when it does not
  std::string root_address;  // empty: not given
  int32_t root_port = -1;    // -1: not given
  std::string source;        // where rank and size came from: "GW_RANK/GW_WORLD_SIZE", "torchrun", ...
};

// Values the application passed in gw_comm_options; negative / empty means "from the environment".
struct LaunchOverrides {
  int64_t rank = -1;
  int64_t world_size = -1;
  int64_t local_rank = -1;
  std::string root_address;
  int64_t root_port = -1;
};

// Order: the overrides, GW_RANK / GW_WORLD_SIZE / GW_LOCAL_RANK / GW_LOCAL_SIZE / GW_ROOT_ADDR /
// GW_ROOT_PORT, torchrun (RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT), Open MPI
// (OMPI_COMM_WORLD_RANK/SIZE/LOCAL_RANK/LOCAL_SIZE), Slurm (SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID; no
// local size: Slurm gives the tasks per node as a compressed list); none of them: a single rank.
// Throws GW_ERR_CONFIG naming the variable when a value is malformed or out of range.
LaunchInfo detect_launch(const LaunchOverrides& overrides);

}  // namespace gw::bootstrap
