#include "bench/peer_extras.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <stdexcept>
#include <thread>
#include <vector>

#include "bench/bench_ranks.hpp"

#ifndef GW_SOURCE_SCRIPTS_DIR
#define GW_SOURCE_SCRIPTS_DIR ""
#endif

namespace gwcli::bench {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) close(fd);
  }
};

std::string env_or(const char* name, const char* fallback) {
  const char* v = std::getenv(name);
  return v && *v ? v : fallback;
}

// Rank 0's side: accept one connection and read `bytes`; returns bytes per second.
double receive(int listener, uint64_t bytes) {
  Fd conn{accept(listener, nullptr, nullptr)};
  if (conn.fd < 0) throw std::runtime_error("link probe: accept failed");
  std::vector<char> buf(1 << 20);
  uint64_t got = 0;
  const auto t0 = Clock::now();
  while (got < bytes) {
    const ssize_t n = recv(conn.fd, buf.data(), buf.size(), 0);
    if (n <= 0) throw std::runtime_error("link probe: the connection ended after " + std::to_string(got) + " bytes");
    got += uint64_t(n);
  }
  const double s = std::chrono::duration<double>(Clock::now() - t0).count();
  const char ack = 1;
  if (send(conn.fd, &ack, 1, MSG_NOSIGNAL) != 1) throw std::runtime_error("link probe: acknowledgement failed");
  return double(bytes) / s;
}

void transmit(const std::string& address, int port, uint64_t bytes) {
  Fd s{socket(AF_INET, SOCK_STREAM, 0)};
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(uint16_t(port));
  if (inet_pton(AF_INET, address.c_str(), &to.sin_addr) != 1)
    throw std::runtime_error("link probe: bad address '" + address + "'");
  if (connect(s.fd, reinterpret_cast<sockaddr*>(&to), sizeof to) != 0)
    throw std::runtime_error("link probe: cannot connect to " + address + ":" + std::to_string(port));
  std::vector<char> buf(1 << 20, 'x');
  uint64_t sent = 0;
  while (sent < bytes) {
    const ssize_t n = send(s.fd, buf.data(), std::min<uint64_t>(buf.size(), bytes - sent), MSG_NOSIGNAL);
    if (n <= 0) throw std::runtime_error("link probe: send failed");
    sent += uint64_t(n);
  }
  char ack = 0;
  if (recv(s.fd, &ack, 1, 0) != 1) throw std::runtime_error("link probe: no acknowledgement");
}

}  // namespace

double measure_tcp_rate(gw_comm* comm, uint64_t bytes) {
  const uint32_t rank = gw_comm_rank(comm);
  if (gw_comm_size(comm) < 2) return 0;
  if (bytes == 0) {
    const std::string rate = env_or("GW_LINK_RATE", "");
    const double bps = rate.empty() ? 1e9 : gw::model::parse_rate(rate);
    bytes = uint64_t(std::clamp(bps * 0.5, 4e6, 256e6));
  }
  const int port = std::atoi(env_or("GW_ROOT_PORT", "29500").c_str()) + 2;
  Fd listener;
  if (rank == 0) {
    listener.fd = socket(AF_INET, SOCK_STREAM, 0);
    const int one = 1;
    setsockopt(listener.fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_in any{};
    any.sin_family = AF_INET;
    any.sin_port = htons(uint16_t(port));
    any.sin_addr.s_addr = htonl(INADDR_ANY);
    if (bind(listener.fd, reinterpret_cast<sockaddr*>(&any), sizeof any) != 0 || listen(listener.fd, 1) != 0)
      throw std::runtime_error("link probe: cannot listen on port " + std::to_string(port));
  }
  check_bench(gw_barrier(comm), "link probe: barrier");
  double rate = 0;
  if (rank == 0) rate = receive(listener.fd, bytes);
  else if (rank == 1) transmit(env_or("GW_ROOT_ADDR", "127.0.0.1"), port, bytes);
  return slowest_rank(comm, rate);  // rank 0's figure on every rank
}

namespace {

// A Python peer: installed next to the command (BINDIR/../libexec/gradwire), else in the source tree this
// command was built from; "" after setting *why when it is missing or PyTorch is not importable.
std::string python_peer(const std::string& file, std::string* why) {
  std::vector<fs::path> candidates;
  candidates.push_back(fs::path(self_path("bench")).parent_path().parent_path() / "libexec" / "gradwire" / file);
  if (*GW_SOURCE_SCRIPTS_DIR)
    candidates.push_back(fs::path(GW_SOURCE_SCRIPTS_DIR).parent_path() / "runtime" / "cli" / "bench" / "peers" / file);
  std::string script;
  for (const auto& c : candidates)
    if (fs::exists(c)) {
      script = c.string();
      break;
    }
  if (script.empty()) {
    *why = file + " not found next to the command or in the source tree";
    return "";
  }
  std::string probe;
  if (run_captured({"/usr/bin/python3", "-c", "import torch.distributed"}, {}, &probe) != 0) {
    *why = "PyTorch is not importable by /usr/bin/python3 (Debian's python3-torch)";
    return "";
  }
  return script;
}

}  // namespace

std::optional<nlohmann::json> run_torch_topk(uint64_t n, uint64_t k, int reps, std::string* why) {
  const std::string script = python_peer("torch_topk.py", why);
  if (script.empty()) return std::nullopt;
  std::string out;
  const int status =
      run_captured({"/usr/bin/python3", script, std::to_string(n), std::to_string(k), std::to_string(reps)}, {}, &out);
  try {
    return mpi_peer_result(status, out, "torch.topk peer");
  } catch (const std::exception& e) {
    *why = e.what();
    return std::nullopt;
  }
}

std::optional<nlohmann::json> run_gloo_peer(int ranks, const std::string& rate, uint64_t count, int reps,
                                            std::string* why) {
  const std::string script = python_peer("torch_allreduce.py", why);
  if (script.empty()) return std::nullopt;
  const fs::path exe = self_path("bench");
  std::vector<std::string> argv{exe.string(), "run", "-n", std::to_string(ranks)};
  if (!rate.empty()) argv.insert(argv.end(), {"--link", rate});
  argv.insert(argv.end(), {"--", "/usr/bin/python3", script, std::to_string(count), std::to_string(reps)});
  std::string out;
  const int status = run_captured(argv, {}, &out);
  try {
    return mpi_peer_result(status, out, "gloo peer");
  } catch (const std::exception& e) {
    *why = e.what();
    return std::nullopt;
  }
}

gw::model::Cost allreduce_cost(const gw::model::Model* model, const std::string& codec, gw::model::CodecKind kind,
                               double size_ratio, double bytes, int ranks, double bytes_per_s, double cores) {
  gw::model::CodecCost c{codec, kind, size_ratio, 0, 0};
  gw::model::Topology t;
  t.nodes = uint64_t(std::max(1, ranks));
  t.per_node = 1;
  t.cores = std::max(1e-3, cores / double(std::max(1, ranks)));  // every rank's link its own, the cores shared
  t.intra.beta = t.inter.beta = bytes_per_s > 0 ? 1 / bytes_per_s : 0;
  if (model) {
    t.cores = std::max(1e-3, model->machine.cores / double(std::max(1, ranks)));
    if (const gw::model::CodecCost* k = model->codec(codec)) c = *k;
    t.gamma = model->machine.gamma;
    if (model->links.count("tcp")) t.intra.alpha = t.inter.alpha = model->links.at("tcp").alpha;
  }
  return gw::model::exchange(c, bytes, t);
}

}  // namespace gwcli::bench
