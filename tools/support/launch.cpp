// The launcher behind `gradwire run -n N [--] PROG ARGS` (launch.hpp): starts N local ranks of PROG with GW_RANK, GW_WORLD_SIZE,
// GW_LOCAL_RANK, GW_LOCAL_SIZE, GW_ROOT_ADDR=127.0.0.1 and GW_ROOT_PORT (a free port), prefixes every
// line they print with "[rank] ", forwards Ctrl-C / SIGTERM, and when one rank fails stops the others
// and exits with that rank's status (128 + signal for a rank killed by a signal). --keep-going lets the
// others run on (tests use it to watch how they handle a dead peer). --link RATE places every rank in its
// own network namespace of the emulated cluster (cluster.hpp): UCX over TCP on the namespace's veth, the
// root at rank 0's address; the namespaces are removed when the ranks are done, also after failures.
// --ranks-per-node K groups ranks r with the same r / K into one node: GW_NODE_ID, GW_LOCAL_RANK and
// GW_LOCAL_SIZE say so (the two-level collectives read them), and with --link they share one namespace
// and its link. --elastic[=N] (elastic mode, docs/elastic.md): a rank that fails is started again, at most
// N times in all, with GW_ELASTIC_JOIN=1, so that it joins the running job; GW_ELASTIC_PORT names the join
// contact's port and GW_ELASTIC_HOSTS every host a rank runs on (each namespace's address with --link),
// where the rank 0 of the moment may listen at it. The others run on as with --keep-going.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "support/cluster.hpp"
#include "support/launch.hpp"
#include "support/process.hpp"
#include "support/tool.hpp"

namespace gwcli {
namespace {

using Clock = std::chrono::steady_clock;

int g_signal_pipe[2] = {-1, -1};

void on_signal(int sig) {
  const unsigned char s = static_cast<unsigned char>(sig);
  const int saved = errno;
  (void)!write(g_signal_pipe[1], &s, 1);
  errno = saved;
}

// One output stream of one rank, split into prefixed lines.
struct Stream {
  int fd = -1;
  FILE* out = nullptr;
  std::string partial;
};

struct Rank {
  pid_t pid = -1;
  bool running = false;
  int status = 0;
  Stream streams[2];
};

void emit(int rank, Stream& s, const char* data, size_t n) {
  s.partial.append(data, n);
  size_t start = 0;
  for (size_t nl; (nl = s.partial.find('\n', start)) != std::string::npos; start = nl + 1)
    std::fprintf(s.out, "[%d] %.*s\n", rank, int(nl - start), s.partial.data() + start);
  s.partial.erase(0, start);
  std::fflush(s.out);
}

void flush_partial(int rank, Stream& s) {
  if (!s.partial.empty()) std::fprintf(s.out, "[%d] %s\n", rank, s.partial.c_str());
  s.partial.clear();
  std::fflush(s.out);
}

std::string describe(int status) {
  if (WIFEXITED(status)) return "exited with status " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return std::string("was killed by signal ") + std::to_string(WTERMSIG(status)) + " (" +
                                  strsignal(WTERMSIG(status)) + ")";
  return "stopped";
}

pid_t start_rank(int rank, int n, int port, const std::vector<std::string>& command, int out_fd, int err_fd,
                 const Cluster* cluster, int per_node, const Env& extra) {
  SpawnOptions options;
  options.stdout_fd = out_fd;
  options.stderr_fd = err_fd;
  options.own_group = true;  // signals reach a rank (and its children) only through us
  options.env = {{"GW_RANK", std::to_string(rank)},
                 {"GW_WORLD_SIZE", std::to_string(n)},
                 {"GW_ROOT_ADDR", "127.0.0.1"},
                 {"GW_ROOT_PORT", std::to_string(port)}};
  for (const auto& kv : extra) options.env.push_back(kv);
  if (per_node > 0) {  // emulated nodes: the last one may hold fewer ranks
    options.env.push_back({"GW_NODE_ID", std::to_string(rank / per_node)});
    options.env.push_back({"GW_LOCAL_RANK", std::to_string(rank % per_node)});
    options.env.push_back({"GW_LOCAL_SIZE", std::to_string(std::min(per_node, n - rank / per_node * per_node))});
  } else {
    options.env.push_back({"GW_LOCAL_RANK", std::to_string(rank)});
    options.env.push_back({"GW_LOCAL_SIZE", std::to_string(n)});
  }
  if (cluster) {
    for (const auto& kv : Cluster::environment()) options.env.push_back(kv);
    options.env.push_back({"GW_LINK_RATE", cluster->rate()});
  }
  return spawn(cluster ? cluster->wrap(rank, command) : command, options, "gradwire run");
}

void signal_all(std::vector<Rank>& ranks, int sig) {
  for (auto& r : ranks)
    if (r.running) killpg(r.pid, sig);
}

}  // namespace

// The port of the join contact of --elastic, held for the whole job. The kernel chooses it (bind to port
// 0), and this socket stays bound to it, SO_REUSEADDR and never listening, until the launcher exits: no
// other process can bind it meanwhile (another job's launcher, a rendezvous root, any socket without
// SO_REUSEADDR), no outgoing connection gets it as its local port (the kernel skips bound ports), and the
// process that is rank 0, whichever it is, can listen at it (SO_REUSEADDR on both sockets, this one not
// listening). Choosing a port that is free now and releasing it would leave it to anyone until rank 0
// binds it, and again between the death of a rank 0 and its successor's bind (docs/elastic.md). With
// --link every node's namespace has ports of its own, and a rank 0 listens at its node's address: the
// port is held the same way in each of them (hold_in).
class ContactPort {
 public:
  ContactPort() {
    const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) throw Failure(GW_ERR_INTERNAL, std::string("run: socket for the elastic join contact: ") + std::strerror(errno));
    try {
      port_ = hold(fd, 0, "");
    } catch (...) {
      close(fd);
      throw;
    }
    fd_.push_back(fd);
  }
  ~ContactPort() {
    for (int fd : fd_) close(fd);
  }
  ContactPort(const ContactPort&) = delete;
  ContactPort& operator=(const ContactPort&) = delete;
  int port() const { return port_; }
  // The same port in the namespace of every node of the cluster (fresh: nothing there has it yet).
  void hold_in(const Cluster& cluster, int ranks) {
    for (int r = 0; r < ranks; r += cluster.ranks_per_node()) {
      fd_.push_back(cluster.socket_in(r, SOCK_STREAM));
      hold(fd_.back(), port_, " in network namespace " + cluster.namespace_of(r));
    }
  }

 private:
  // Binds fd to `port` (0: one the kernel chooses) on every interface, SO_REUSEADDR; returns the port.
  static int hold(int fd, int port, const std::string& where) {
    const int one = 1;
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_ANY);
    a.sin_port = htons(uint16_t(port));
    socklen_t len = sizeof a;
    if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0 ||
        bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
        getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0)
      throw Failure(GW_ERR_INTERNAL, "run: cannot reserve " + (port ? "port " + std::to_string(port) : std::string("a port")) +
                                         " for the elastic join contact" + where + ": " + std::strerror(errno));
    return ntohs(a.sin_port);
  }
  std::vector<int> fd_;
  int port_ = 0;
};

int run_ranks(int n, const std::vector<std::string>& command, double grace_s, bool keep_going, const std::string& link,
              int per_node, int restarts) {
  if (command.empty()) throw Failure(GW_ERR_INVALID_ARGUMENT, "run: give the program to start: gradwire run -n N -- PROG ARGS");
  if (n < 1) throw Failure(GW_ERR_INVALID_ARGUMENT, "run: -n must be at least 1");
  const int port = free_port("run");
  // Declared before the ranks: destroyed (namespaces removed) after they are all gone, however this ends.
  std::optional<Cluster> cluster = link.empty() ? std::optional<Cluster>() : Cluster::up(n, link, "gradwire run", std::max(1, per_node));

  if (pipe2(g_signal_pipe, O_CLOEXEC | O_NONBLOCK) != 0)
    throw Failure(GW_ERR_INTERNAL, std::string("run: pipe: ") + std::strerror(errno));
  struct sigaction sa{};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGCHLD}) sigaction(sig, &sa, nullptr);

  Env extra;
  std::optional<ContactPort> contact;  // held until every rank is gone
  if (restarts > 0) {
    keep_going = true;
    contact.emplace();
    if (cluster) contact->hold_in(*cluster, n);
    extra.push_back({"GW_ELASTIC_PORT", std::to_string(contact->port())});
    // Where a joiner asks: every host a rank runs on (the rank 0 of the moment listens at its own).
    std::string hosts;
    for (int r = 0; r < n; ++r) {
      const std::string host = cluster ? Cluster::address_of(r, cluster->ranks_per_node()) : "127.0.0.1";
      if (("," + hosts + ",").find("," + host + ",") == std::string::npos) hosts += (hosts.empty() ? "" : ",") + host;
    }
    extra.push_back({"GW_ELASTIC_HOSTS", hosts});
  }
  std::vector<Rank> ranks(n);
  auto launch = [&](int r, const Env& env) {
    int pipes[2][2];
    if (pipe2(pipes[0], O_CLOEXEC) != 0 || pipe2(pipes[1], O_CLOEXEC) != 0)
      throw Failure(GW_ERR_INTERNAL, std::string("run: pipe: ") + std::strerror(errno));
    ranks[r].pid = start_rank(r, n, port, command, pipes[0][1], pipes[1][1], cluster ? &*cluster : nullptr, per_node, env);
    ranks[r].running = true;
    for (int s = 0; s < 2; ++s) {
      close(pipes[s][1]);
      ranks[r].streams[s].fd = pipes[s][0];
      ranks[r].streams[s].out = s == 0 ? stdout : stderr;
    }
  };
  for (int r = 0; r < n; ++r) launch(r, extra);

  int running = n, first_failure = -1, interrupted = 0;
  Clock::time_point stop_sent{};
  bool killed = false;
  std::vector<char> buf(65536);
  for (;;) {
    std::vector<pollfd> fds{{g_signal_pipe[0], POLLIN, 0}};
    std::vector<std::pair<int, int>> owners{{-1, -1}};
    for (int r = 0; r < n; ++r)
      for (int s = 0; s < 2; ++s)
        if (ranks[r].streams[s].fd >= 0) {
          fds.push_back({ranks[r].streams[s].fd, POLLIN, 0});
          owners.push_back({r, s});
        }
    if (running == 0 && fds.size() == 1) break;
    poll(fds.data(), fds.size(), 100);

    if (fds[0].revents & POLLIN) {
      unsigned char sig = 0;
      while (read(g_signal_pipe[0], &sig, 1) == 1) {
        if (sig == SIGCHLD) continue;
        interrupted = sig;
        signal_all(ranks, sig);  // forward Ctrl-C / SIGTERM to every rank
        if (stop_sent == Clock::time_point{}) stop_sent = Clock::now();
      }
    }
    for (size_t i = 1; i < fds.size(); ++i) {
      if (!(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      auto [r, s] = owners[i];
      Stream& st = ranks[r].streams[s];
      const ssize_t got = read(st.fd, buf.data(), buf.size());
      if (got > 0) {
        emit(r, st, buf.data(), size_t(got));
      } else if (got == 0 || (errno != EINTR && errno != EAGAIN)) {
        flush_partial(r, st);
        close(st.fd);
        st.fd = -1;
      }
    }
    for (int r = 0; r < n; ++r) {
      if (!ranks[r].running) continue;
      int status = 0;
      if (waitpid(ranks[r].pid, &status, WNOHANG) != ranks[r].pid) continue;
      ranks[r].running = false;
      ranks[r].status = status;
      --running;
      const bool failed = !(WIFEXITED(status) && WEXITSTATUS(status) == 0);
      if (failed && restarts > 0 && !interrupted) {
        --restarts;
        std::fprintf(stderr, "gradwire run: rank %d %s; starting it again to join the job (--elastic, %d restart%s left)\n",
                     r, describe(status).c_str(), restarts, restarts == 1 ? "" : "s");
        for (int s = 0; s < 2; ++s)
          if (ranks[r].streams[s].fd >= 0) {
            flush_partial(r, ranks[r].streams[s]);
            close(ranks[r].streams[s].fd);
            ranks[r].streams[s].fd = -1;
          }
        Env join = extra;
        join.push_back({"GW_ELASTIC_JOIN", "1"});
        launch(r, join);
        ++running;
        continue;
      }
      if (failed && first_failure < 0 && !interrupted) {
        first_failure = r;
        if (running > 0 && !keep_going) {
          std::fprintf(stderr, "gradwire run: rank %d %s; stopping the other %d rank%s\n", r, describe(status).c_str(),
                       running, running == 1 ? "" : "s");
          signal_all(ranks, SIGTERM);
          stop_sent = Clock::now();
        }
      }
    }
    if (stop_sent != Clock::time_point{} && !killed && running > 0 &&
        std::chrono::duration<double>(Clock::now() - stop_sent).count() > grace_s) {
      signal_all(ranks, SIGKILL);  // a rank that ignores SIGTERM must not keep the job alive
      killed = true;
    }
  }
  close(g_signal_pipe[0]);
  close(g_signal_pipe[1]);
  if (first_failure >= 0) return exit_code_of(ranks[first_failure].status);
  if (interrupted) return 128 + interrupted;
  return 0;
}

}  // namespace gwcli
