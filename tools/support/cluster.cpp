#include "support/cluster.hpp"

#include <fcntl.h>
#include <sched.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <regex>

#include "support/tool.hpp"
#include "support/process.hpp"

#ifndef GW_SOURCE_SCRIPTS_DIR
#define GW_SOURCE_SCRIPTS_DIR ""
#endif

namespace gwcli {
namespace {

namespace fs = std::filesystem;

// Runs cluster.sh with GW_CLUSTER_NAME set; its output goes to stderr. Returns its exit status.
int run_script(const std::string& script, const std::string& name, const std::vector<std::string>& args) {
  SpawnOptions options;
  options.env = {{"GW_CLUSTER_NAME", name}};
  options.stdout_fd = STDERR_FILENO;
  std::vector<std::string> argv{"bash", script};
  argv.insert(argv.end(), args.begin(), args.end());
  return run_and_wait(argv, options, "gradwire");
}

}  // namespace

void Cluster::check_rate(const std::string& rate, const std::string& who) {
  static const std::regex tc_rate("^[0-9]+(\\.[0-9]+)?(bit|kbit|mbit|gbit|tbit)$");
  if (!std::regex_match(rate, tc_rate))
    throw Failure(GW_ERR_INVALID_ARGUMENT, who + ": --link '" + rate +
                                               "' is not a link rate: give a number and a unit as tc writes it, "
                                               "e.g. 1gbit, 10gbit, 100mbit");
}

std::string Cluster::script() {
  if (const char* s = std::getenv("GW_CLUSTER_SCRIPT"); s && *s) {
    if (!fs::exists(s)) throw Failure(GW_ERR_NOT_FOUND, std::string("GW_CLUSTER_SCRIPT names ") + s + ", which does not exist");
    return s;
  }
  std::vector<fs::path> candidates;
  try {
    candidates.push_back(fs::path(self_path("--link")).parent_path().parent_path() / "libexec" / "gradwire" / "cluster.sh");
  } catch (const Failure&) {
    // no /proc: only the source tree's copy below
  }
  if (*GW_SOURCE_SCRIPTS_DIR) candidates.push_back(fs::path(GW_SOURCE_SCRIPTS_DIR) / "cluster.sh");
  std::string looked;
  for (const auto& c : candidates) {
    if (fs::exists(c)) return c.string();
    looked += (looked.empty() ? "" : ", ") + c.string();
  }
  throw Failure(GW_ERR_NOT_FOUND, "--link needs scripts/cluster.sh, which is not installed (looked in " + looked +
                                      "); set GW_CLUSTER_SCRIPT to its path");
}

std::optional<Cluster> Cluster::up(int ranks, const std::string& rate, const std::string& who, int ranks_per_node) {
  check_rate(rate, who);
  if (ranks_per_node < 1) throw Failure(GW_ERR_INVALID_ARGUMENT, who + ": ranks per node must be at least 1");
  if (geteuid() != 0) {
    std::fprintf(stderr,
                 "%s: --link %s needs root to build network namespaces (run as root or with sudo); running the "
                 "ranks on loopback instead, without a link limit\n",
                 who.c_str(), rate.c_str());
    return std::nullopt;
  }
  const std::string path = script();
  Cluster c(path, "gw" + std::to_string(getpid()), rate);
  c.ranks_per_node_ = ranks_per_node;
  const int nodes = (ranks + ranks_per_node - 1) / ranks_per_node;
  const int status = run_script(path, c.name_, {"up", std::to_string(nodes), rate});
  if (status != 0) {
    c.active_ = false;
    run_script(path, c.name_, {"down"});  // the script cleans up after itself; this makes sure
    throw Failure(GW_ERR_INTERNAL, who + ": building the emulated cluster failed (cluster.sh up " + std::to_string(ranks) +
                                       " " + rate + " exited with status " + std::to_string(status) +
                                       "; its message is above)");
  }
  return std::optional<Cluster>(std::move(c));
}

Cluster::Cluster(Cluster&& other) noexcept
    : script_(std::move(other.script_)),
      name_(std::move(other.name_)),
      rate_(std::move(other.rate_)),
      ranks_per_node_(other.ranks_per_node_),
      active_(other.active_) {
  other.active_ = false;
}

Cluster::~Cluster() {
  if (active_) run_script(script_, name_, {"down"});
}

std::vector<std::string> Cluster::wrap(int rank, const std::vector<std::string>& command) const {
  std::vector<std::string> out{"ip", "netns", "exec", namespace_of(rank)};
  out.insert(out.end(), command.begin(), command.end());
  return out;
}

int Cluster::socket_in(int rank, int type) const {
  // setns moves only this thread, and only until it moves back: the socket stays in the namespace it was
  // made in.
  const std::string ns = namespace_of(rank);
  int target = open(("/run/netns/" + ns).c_str(), O_RDONLY | O_CLOEXEC);
  if (target < 0) target = open(("/var/run/netns/" + ns).c_str(), O_RDONLY | O_CLOEXEC);
  if (target < 0)
    throw Failure(GW_ERR_INTERNAL, "cannot open network namespace " + ns + ": " + std::strerror(errno));
  const int self = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
  if (self < 0) {
    const std::string why = std::strerror(errno);
    close(target);
    throw Failure(GW_ERR_INTERNAL, "cannot open this process's network namespace: " + why);
  }
  int fd = -1;
  std::string why;
  if (setns(target, CLONE_NEWNET) != 0) {
    why = std::string("cannot enter network namespace ") + ns + ": " + std::strerror(errno);
  } else {
    fd = socket(AF_INET, type | SOCK_CLOEXEC, 0);
    if (fd < 0) why = std::string("socket in network namespace ") + ns + ": " + std::strerror(errno);
    if (setns(self, CLONE_NEWNET) != 0) {  // the launcher must not go on inside a rank's namespace
      std::fprintf(stderr, "gradwire: cannot return from network namespace %s: %s\n", ns.c_str(), std::strerror(errno));
      std::abort();
    }
  }
  close(self);
  close(target);
  if (fd < 0) throw Failure(GW_ERR_INTERNAL, why);
  return fd;
}

std::vector<std::pair<std::string, std::string>> Cluster::environment() {
  return {{"UCX_TLS", "tcp"},           {"UCX_NET_DEVICES", kDevice}, {"GW_ROOT_ADDR", address_of(0)},
          {"MASTER_ADDR", address_of(0)}, {"GLOO_SOCKET_IFNAME", kDevice}};
}

}  // namespace gwcli
