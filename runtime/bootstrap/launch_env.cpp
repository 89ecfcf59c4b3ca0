#include "bootstrap/launch_env.hpp"

#include <cerrno>
#include <cstdlib>
#include <optional>

#include "core/error.hpp"

namespace gw::bootstrap {
namespace {

std::optional<std::string> env(const char* name) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return std::nullopt;
  return std::string(v);
}

int64_t parse_int(const std::string& text, const char* name, int64_t min, int64_t max) {
  char* end = nullptr;
  errno = 0;
  const long long v = std::strtoll(text.c_str(), &end, 10);
  if (errno != 0 || end == text.c_str() || *end != '\0' || v < min || v > max)
    fail(GW_ERR_CONFIG, std::string(name) + "='" + text + "' is not an integer in [" + std::to_string(min) + ", " +
                            std::to_string(max) + "]");
  return v;
}

struct Convention {
  const char* source;
  const char* rank;
  const char* size;
  const char* local_rank;
  const char* local_size;    // nullptr: the convention has none
  const char* root_address;  // nullptr: the convention has none (GW_ROOT_ADDR is used)
  const char* root_port;
};

constexpr Convention kConventions[] = {
    {"GW_RANK/GW_WORLD_SIZE", "GW_RANK", "GW_WORLD_SIZE", "GW_LOCAL_RANK", "GW_LOCAL_SIZE", "GW_ROOT_ADDR",
     "GW_ROOT_PORT"},
    {"torchrun (RANK/WORLD_SIZE)", "RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "MASTER_ADDR",
     "MASTER_PORT"},
    {"Open MPI (OMPI_COMM_WORLD_*)", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK",
     "OMPI_COMM_WORLD_LOCAL_SIZE", nullptr, nullptr},
    {"Slurm (SLURM_PROCID/SLURM_NTASKS)", "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID", nullptr, nullptr, nullptr},
};

constexpr int64_t kMaxRanks = 1 << 24;

}  // namespace

LaunchInfo detect_launch(const LaunchOverrides& o) {
  LaunchInfo info;
  info.source = "single process (no launcher variables)";
  for (const Convention& c : kConventions) {
    const auto rank = env(c.rank);
    const auto size = env(c.size);
    if (!rank && !size) continue;
    if (!rank || !size)
      fail(GW_ERR_CONFIG, std::string(rank ? c.size : c.rank) + " is not set but " + (rank ? c.rank : c.size) +
                              " is; a " + c.source + " launch needs both");
    info.world_size = uint32_t(parse_int(*size, c.size, 1, kMaxRanks));
    info.rank = uint32_t(parse_int(*rank, c.rank, 0, info.world_size - 1));
    if (const auto local = env(c.local_rank)) info.local_rank = uint32_t(parse_int(*local, c.local_rank, 0, kMaxRanks));
    if (c.local_size != nullptr)
      if (const auto local = env(c.local_size))
        info.local_size = uint32_t(parse_int(*local, c.local_size, 1, info.world_size));
    if (c.root_address != nullptr) {
      if (const auto a = env(c.root_address)) info.root_address = *a;
      if (const auto p = env(c.root_port)) {
        info.root_port = int32_t(parse_int(*p, c.root_port, 1, 65535));
        // torchrun's own store (and torch.distributed's) listens on MASTER_PORT on the root's host:
        // gradwire's rendezvous takes the port after it.
        if (std::string(c.root_port) == "MASTER_PORT") {
          if (info.root_port == 65535)
            fail(GW_ERR_CONFIG, "MASTER_PORT is 65535; gradwire's rendezvous listens on MASTER_PORT + 1: pick a lower "
                                "MASTER_PORT or set GW_ROOT_PORT");
          info.root_port += 1;
        }
      }
    }
    info.source = c.source;
    break;
  }
  // GW_ROOT_* name the root for every convention, and win over MASTER_*.
  if (const auto a = env("GW_ROOT_ADDR")) info.root_address = *a;
  if (const auto p = env("GW_ROOT_PORT")) info.root_port = int32_t(parse_int(*p, "GW_ROOT_PORT", 1, 65535));

  if (o.world_size >= 0) {
    if (o.world_size < 1 || o.world_size > kMaxRanks)
      fail(GW_ERR_INVALID_ARGUMENT, "gw_comm_options.world_size " + std::to_string(o.world_size) + " is out of range");
    info.world_size = uint32_t(o.world_size);
    info.source = "gw_comm_options";
  }
  if (o.rank >= 0) {
    info.rank = uint32_t(o.rank);
    info.source = "gw_comm_options";
  }
  if (o.local_rank >= 0) info.local_rank = uint32_t(o.local_rank);
  if (!o.root_address.empty()) info.root_address = o.root_address;
  if (o.root_port >= 0) {
    if (o.root_port < 1 || o.root_port > 65535)
      fail(GW_ERR_INVALID_ARGUMENT, "gw_comm_options.root_port " + std::to_string(o.root_port) + " is not a port");
    info.root_port = int32_t(o.root_port);
  }
  // The launcher counted the ranks of its own job; a communicator the application sized otherwise
  // (gw_comm_options) cannot have more ranks on this host than in all.
  if (info.local_size > info.world_size) info.local_size = 1;
  if (info.rank >= info.world_size)
    fail(GW_ERR_INVALID_ARGUMENT, "rank " + std::to_string(info.rank) + " is not below the world size " +
                                      std::to_string(info.world_size) + " (from " + info.source + ")");
  return info;
}

}  // namespace gw::bootstrap
