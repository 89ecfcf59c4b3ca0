// `--link RATE` of `gradwire run`, `bench` and `train`: the ranks in the emulated cluster of
// scripts/cluster.sh — one network namespace per node behind a bridge, each node's link limited by a
// token bucket to RATE, addresses from 198.18.0.0/15 (docs/benchmarks.md, "A cluster on one machine").
// A node holds one rank by default; with ranks_per_node K, ranks r with the same r / K share a node's
// namespace, address and link (its uplink), and talk to each other over the namespace's loopback.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace gwcli {

class Cluster {
 public:
  // Builds a cluster of `ranks` namespaces behind `rate` links (tc syntax: 1gbit, 10gbit, 100mbit), named
  // "gw<pid>-..." so that it meets no one else's. Returns nullopt after saying so on stderr when this
  // process is not root (the caller then runs on loopback). A bad rate, a missing cluster.sh or a failed
  // setup is a Failure (the script has then removed what it built).
  static std::optional<Cluster> up(int ranks, const std::string& rate, const std::string& who, int ranks_per_node = 1);
  ~Cluster();  // removes every namespace of this cluster (also after failures)
  Cluster(Cluster&& other) noexcept;
  Cluster(const Cluster&) = delete;
  Cluster& operator=(const Cluster&) = delete;
  Cluster& operator=(Cluster&&) = delete;

  const std::string& name() const { return name_; }
  const std::string& rate() const { return rate_; }
  const std::string& script_path() const { return script_; }
  std::string namespace_of(int rank) const { return name_ + "-r" + std::to_string(rank / ranks_per_node_); }
  // The address of rank `rank`'s node (one rank per node unless ranks_per_node says otherwise).
  static std::string address_of(int rank, int ranks_per_node = 1) {
    return "198.18.0." + std::to_string(rank / ranks_per_node + 1);
  }
  int ranks_per_node() const { return ranks_per_node_; }
  // The command line that runs `command` as rank `rank` inside its namespace ("ip netns exec NS ...": the
  // same process, its /sys showing the namespace's devices).
  std::vector<std::string> wrap(int rank, const std::vector<std::string>& command) const;
  // A socket (socket(2)'s `type`, close-on-exec) in the namespace of rank `rank`'s node: bound there, it
  // holds a port of that namespace (gradwire run's elastic join contact). A Failure when it cannot.
  int socket_in(int rank, int type) const;
  // What a rank inside needs: UCX over TCP on the namespace's veth, rank 0's address as the root, and the
  // interface for gloo (PyTorch) and Open MPI peers.
  static std::vector<std::pair<std::string, std::string>> environment();
  // The device inside every namespace.
  static constexpr const char* kDevice = "eth0";

  // Where cluster.sh is: $GW_CLUSTER_SCRIPT, else installed next to the command
  // (BINDIR/../libexec/gradwire/cluster.sh), else the source tree this command was built from.
  static std::string script();
  // Checks a tc rate ("1gbit", "10gbit", "100mbit", "2.5gbit"); a Failure naming `who` otherwise.
  static void check_rate(const std::string& rate, const std::string& who);

 private:
  Cluster(std::string script, std::string name, std::string rate) : script_(std::move(script)), name_(std::move(name)), rate_(std::move(rate)) {}
  std::string script_, name_, rate_;
  int ranks_per_node_ = 1;
  bool active_ = true;
};

}  // namespace gwcli
