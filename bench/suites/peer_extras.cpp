#include "suites/peer_extras.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <stdexcept>
#include <thread>
#include <vector>

#include "suites/bench.hpp"
#include "suites/bench_ranks.hpp"
#include "support/cluster.hpp"
#include "support/tool.hpp"
#include "model/measure.hpp"

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

// Reads exactly `bytes` (1 MiB at a time); throws naming the probe's step when the connection ends early.
void read_all(int fd, uint64_t bytes) {
  std::vector<char> buf(1 << 20);
  uint64_t got = 0;
  while (got < bytes) {
    const ssize_t n = recv(fd, buf.data(), std::min<uint64_t>(buf.size(), bytes - got), 0);
    if (n <= 0) throw std::runtime_error("link probe: the connection ended after " + std::to_string(got) + " bytes");
    got += uint64_t(n);
  }
}

void write_all(int fd, uint64_t bytes) {
  std::vector<char> buf(1 << 20, 'x');
  uint64_t sent = 0;
  while (sent < bytes) {
    const ssize_t n = send(fd, buf.data(), std::min<uint64_t>(buf.size(), bytes - sent), MSG_NOSIGNAL);
    if (n <= 0) throw std::runtime_error("link probe: send failed after " + std::to_string(sent) + " bytes");
    sent += uint64_t(n);
  }
}

void put_byte(int fd, char c) {
  if (send(fd, &c, 1, MSG_NOSIGNAL) != 1) throw std::runtime_error("link probe: a peer went away");
}

char get_byte(int fd) {
  char c = 0;
  if (recv(fd, &c, 1, MSG_WAITALL) != 1) throw std::runtime_error("link probe: a peer went away");
  return c;
}

int connect_to(const std::string& address, int port) {
  Fd s{socket(AF_INET, SOCK_STREAM, 0)};
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(uint16_t(port));
  if (inet_pton(AF_INET, address.c_str(), &to.sin_addr) != 1)
    throw std::runtime_error("link probe: bad address '" + address + "'");
  if (connect(s.fd, reinterpret_cast<sockaddr*>(&to), sizeof to) != 0)
    throw std::runtime_error("link probe: cannot connect to " + address + ":" + std::to_string(port));
  const int fd = s.fd;
  s.fd = -1;
  return fd;
}

int listen_on(uint32_t address, int port, int backlog) {
  Fd l{socket(AF_INET, SOCK_STREAM, 0)};
  const int one = 1;
  setsockopt(l.fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in any{};
  any.sin_family = AF_INET;
  any.sin_port = htons(uint16_t(port));
  any.sin_addr.s_addr = htonl(address);
  if (bind(l.fd, reinterpret_cast<sockaddr*>(&any), sizeof any) != 0 || listen(l.fd, backlog) != 0)
    throw std::runtime_error("link probe: cannot listen on port " + std::to_string(port));
  const int fd = l.fd;
  l.fd = -1;
  return fd;
}

// Times `bytes` read from `data` (whose sender starts on 'g'), with the machine's busy core-seconds
// around it. Every process involved blocks in the kernel meanwhile, so the busy time is the transfer's.
TcpProbe timed_receive(int data, uint64_t bytes) {
  const double busy0 = gw::model::busy_core_seconds();
  const auto t0 = Clock::now();
  put_byte(data, 'g');
  read_all(data, bytes);
  const double s = std::chrono::duration<double>(Clock::now() - t0).count();
  const double busy1 = gw::model::busy_core_seconds();
  TcpProbe p;
  p.bytes_per_s = double(bytes) / s;
  p.cpu_s_per_byte = busy0 >= 0 && busy1 >= busy0 ? (busy1 - busy0) / double(bytes) : 0;
  return p;
}

void timed_send(int data, uint64_t bytes) {
  if (get_byte(data) != 'g') throw std::runtime_error("link probe: unexpected start byte");
  write_all(data, bytes);
  if (get_byte(data) != 'a') throw std::runtime_error("link probe: no acknowledgement");
}

// The median of each figure over several transfers.
TcpProbe median_of(const std::vector<TcpProbe>& transfers) {
  std::vector<double> rates, cpus;
  for (const TcpProbe& t : transfers) {
    rates.push_back(t.bytes_per_s);
    cpus.push_back(t.cpu_s_per_byte);
  }
  TcpProbe p;
  p.bytes_per_s = summarize(rates).median;
  p.cpu_s_per_byte = summarize(cpus).median;
  return p;
}

// A probe's bytes: about half a second of the link's rate (GW_LINK_RATE; 1 Gbit/s without one), 4 to 256 MB.
uint64_t probe_bytes() {
  const std::string rate = env_or("GW_LINK_RATE", "");
  const double bps = rate.empty() ? 1e9 : gw::model::parse_rate(rate);
  return uint64_t(std::clamp(bps * 0.5, 4e6, 256e6));
}

// The port a listening socket bound to port 0 was given.
int port_of(int listener) {
  sockaddr_in bound{};
  socklen_t len = sizeof bound;
  if (getsockname(listener, reinterpret_cast<sockaddr*>(&bound), &len) != 0)
    throw std::runtime_error("link probe: getsockname failed");
  return ntohs(bound.sin_port);
}

}  // namespace

TcpLinkProbe::TcpLinkProbe(gw_comm* comm, uint64_t bytes, uint32_t sender)
    : comm_(comm), rank_(gw_comm_rank(comm)), size_(gw_comm_size(comm)), sender_(sender), bytes_(bytes) {
  if (size_ < 2) return;
  if (sender_ == 0 || sender_ >= size_) sender_ = 1;
  if (bytes_ == 0) bytes_ = probe_bytes();
  const int port = std::atoi(env_or("GW_ROOT_PORT", "29500").c_str()) + 2;
  Fd listener;
  if (rank_ == 0) listener.fd = listen_on(INADDR_ANY, port, int(size_));
  check_bench(gw_barrier(comm), "link probe: barrier");
  if (rank_ == 0) {
    for (uint32_t accepted = 0; accepted + 1 < size_; ++accepted) {
      Fd conn{accept(listener.fd, nullptr, nullptr)};
      if (conn.fd < 0) throw std::runtime_error("link probe: accept failed");
      if (get_byte(conn.fd) == 'd' && data_ < 0)
        data_ = conn.fd;
      else
        parked_.push_back(conn.fd);
      conn.fd = -1;
    }
    if (data_ < 0) throw std::runtime_error("link probe: rank " + std::to_string(sender_) + " did not connect");
  } else {
    Fd s{connect_to(env_or("GW_ROOT_ADDR", "127.0.0.1"), port)};
    put_byte(s.fd, rank_ == sender_ ? 'd' : 'p');
    (rank_ == sender_ ? data_ : parked_.emplace_back()) = s.fd;
    s.fd = -1;
  }
}

TcpLinkProbe::~TcpLinkProbe() {
  if (data_ >= 0) close(data_);
  for (int fd : parked_) close(fd);
}

// `sender` sends to rank 0; the other ranks wait on a socket of rank 0's (asleep, not polling the
// communicator) until rank 0 releases them, so the machine's busy time during the transfer is the
// transfer's alone.
void TcpLinkProbe::transfer() {
  if (size_ < 2) return;
  if (rank_ == 0) {
    transfers_.push_back(timed_receive(data_, bytes_));
    put_byte(data_, 'a');
    for (int fd : parked_) put_byte(fd, 'r');
  } else if (rank_ == sender_) {
    timed_send(data_, bytes_);
  } else if (get_byte(parked_.at(0)) != 'r') {
    throw std::runtime_error("link probe: unexpected release byte");
  }
}

TcpProbe TcpLinkProbe::result() {
  if (size_ < 2) return {};
  TcpProbe probe = rank_ == 0 && !transfers_.empty() ? median_of(transfers_) : TcpProbe{};
  probe.bytes_per_s = slowest_rank(comm_, probe.bytes_per_s);  // rank 0's figures on every rank
  probe.cpu_s_per_byte = slowest_rank(comm_, probe.cpu_s_per_byte);
  return probe;
}

namespace {

// This rank's address as the others reach it: the local end of a route to the root address.
uint32_t own_address() {
  Fd s{socket(AF_INET, SOCK_DGRAM, 0)};
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(9);
  if (inet_pton(AF_INET, env_or("GW_ROOT_ADDR", "127.0.0.1").c_str(), &to.sin_addr) != 1 ||
      connect(s.fd, reinterpret_cast<sockaddr*>(&to), sizeof to) != 0)
    throw std::runtime_error("all-to-all probe: no route to GW_ROOT_ADDR");
  sockaddr_in mine{};
  socklen_t len = sizeof mine;
  if (getsockname(s.fd, reinterpret_cast<sockaddr*>(&mine), &len) != 0)
    throw std::runtime_error("all-to-all probe: getsockname failed");
  return mine.sin_addr.s_addr;
}

// One round: `each` bytes written to every socket of `out` and read from every socket of `in`, all at
// once from this thread (non-blocking sockets and poll, as a rank's progress loop drives its transfers).
void exchange_all(const std::vector<Fd>& out, const std::vector<Fd>& in, uint64_t each) {
  std::vector<char> wbuf(1 << 20, 'x'), rbuf(1 << 20);
  std::vector<uint64_t> sent(out.size()), got(in.size());
  std::vector<pollfd> fds;
  for (;;) {
    fds.clear();
    for (size_t i = 0; i < out.size(); ++i)
      if (sent[i] < each) fds.push_back({out[i].fd, POLLOUT, 0});
    for (size_t i = 0; i < in.size(); ++i)
      if (got[i] < each) fds.push_back({in[i].fd, POLLIN, 0});
    if (fds.empty()) return;
    if (poll(fds.data(), nfds_t(fds.size()), 60000) <= 0) throw std::runtime_error("all-to-all probe: no progress in 60 s");
    for (size_t i = 0; i < out.size(); ++i) {
      if (sent[i] >= each) continue;
      const ssize_t n = send(out[i].fd, wbuf.data(), std::min<uint64_t>(wbuf.size(), each - sent[i]),
                             MSG_NOSIGNAL | MSG_DONTWAIT);
      if (n > 0) sent[i] += uint64_t(n);
      else if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK) throw std::runtime_error("all-to-all probe: a send failed");
    }
    for (size_t i = 0; i < in.size(); ++i) {
      if (got[i] >= each) continue;
      const ssize_t n = recv(in[i].fd, rbuf.data(), std::min<uint64_t>(rbuf.size(), each - got[i]), MSG_DONTWAIT);
      if (n > 0) got[i] += uint64_t(n);
      else if (n == 0) throw std::runtime_error("all-to-all probe: a peer went away");
      else if (errno != EAGAIN && errno != EWOULDBLOCK) throw std::runtime_error("all-to-all probe: a receive failed");
    }
  }
}

}  // namespace

double measure_all_to_all(gw_comm* comm, uint64_t bytes, uint32_t per_node) {
  const uint32_t rank = gw_comm_rank(comm), size = gw_comm_size(comm);
  const uint32_t g = per_node >= 1 && size % per_node == 0 ? per_node : 1, nodes = size / g;
  if (nodes < 2 || g * (nodes - 1) < 2) return 0;  // one flow per link: measure_tcp_link's transfer
  if (bytes == 0) bytes = probe_bytes();
  const uint64_t each = bytes / (g * (nodes - 1));  // a node sends `bytes` in all
  // Every rank listens on a port of its own and tells the others where (address, port).
  Fd listener{listen_on(INADDR_ANY, 0, int(size))};
  std::vector<uint32_t> where(2 * size);
  uint32_t mine[2] = {own_address(), uint32_t(port_of(listener.fd))};
  gw_tensor in_t = bytes_tensor(mine, sizeof mine);
  gw_tensor out_t = bytes_tensor(where.data(), where.size() * sizeof(uint32_t));
  check_bench(gw_allgather(comm, &in_t, &out_t), "all-to-all probe: allgather of the addresses");
  // The peers: the ranks of the other nodes with this rank's place in its node (every rank when g is 1),
  // connected to in a different order on every node, so that no one peer takes every first connection.
  std::vector<Fd> out(nodes - 1), in(nodes - 1);
  for (uint32_t k = 1; k < nodes; ++k) {
    const uint32_t to = ((rank / g + k) % nodes) * g + rank % g;
    char address[INET_ADDRSTRLEN];
    const in_addr a{where[2 * to]};
    inet_ntop(AF_INET, &a, address, sizeof address);
    out[k - 1].fd = connect_to(address, int(where[2 * to + 1]));
    put_byte(out[k - 1].fd, 'd');
  }
  for (uint32_t k = 1; k < nodes; ++k) {
    in[k - 1].fd = accept(listener.fd, nullptr, nullptr);
    if (in[k - 1].fd < 0 || get_byte(in[k - 1].fd) != 'd') throw std::runtime_error("all-to-all probe: accept failed");
  }
  std::vector<double> rates;
  for (int round = 0; round < kProbeRounds; ++round) {
    check_bench(gw_barrier(comm), "all-to-all probe: barrier");
    const auto t0 = Clock::now();
    exchange_all(out, in, each);
    const double s = slowest_rank(comm, std::chrono::duration<double>(Clock::now() - t0).count());
    rates.push_back(double(each * g * (nodes - 1)) / s);
  }
  check_bench(gw_barrier(comm), "all-to-all probe: barrier");  // no rank closes while another still reads
  return summarize(rates).median;
}

RingStepProbe::RingStepProbe(gw_comm* comm, double cores, uint64_t bytes, uint64_t piece, uint32_t stride,
                             uint32_t steps)
    : comm_(comm), cores_(cores), bytes_(bytes), stride_(stride), steps_(std::max<uint32_t>(1, steps)) {
  if (bytes_ == 0) bytes_ = std::clamp<uint64_t>(probe_bytes() / 8, 1 << 20, 16 << 20);
  const uint64_t block = std::max<uint64_t>(4, bytes_ / steps_ / 4 * 4);
  bytes_ = block * steps_;
  piece_ = std::max<uint64_t>(4, std::min(piece, block) / 4 * 4);
  out_.assign(block / 4, 1.0f);
  in_.resize(block / 4);
}

RingStepProbe RingStepProbe::ring_pass(gw_comm* comm, double cores, uint64_t allreduce_bytes) {
  const uint32_t n = std::max<uint32_t>(2, gw_comm_size(comm));
  const double sent = 2.0 * (n - 1) / n * double(allreduce_bytes);
  const uint64_t bytes = uint64_t(std::min(sent, std::max(4e6, double(probe_bytes()) / 2)));
  return RingStepProbe(comm, cores, bytes, 1 << 20, 1, 2 * (n - 1));
}

// One step: the block to the rank `stride_` after this one and from the one before, in pieces all posted
// at once, waited for.
void RingStepProbe::exchange_block(uint32_t n, uint32_t rank, uint32_t d) {
  const uint64_t per_piece = piece_ / 4;
  std::vector<gw_request*> requests;
  for (uint64_t first = 0, tag = 0; first < out_.size(); first += per_piece, ++tag) {
    gw_tensor r = GW_TENSOR_INIT, s = GW_TENSOR_INIT;
    r.count = s.count = std::min(per_piece, out_.size() - first);
    r.data = in_.data() + first;
    s.data = out_.data() + first;
    gw_request* q = nullptr;
    check_bench(gw_recv_start(comm_, &r, (rank + n - d) % n, uint32_t(tag), &q), "ring probe: receive");
    requests.push_back(q);
    check_bench(gw_send_start(comm_, &s, (rank + d) % n, uint32_t(tag), &q), "ring probe: send");
    requests.push_back(q);
  }
  for (gw_request* q : requests) {
    check_bench(gw_request_wait(q, -1), "ring probe: wait");
    gw_request_free(q);
  }
}

void RingStepProbe::step() {
  const uint32_t n = gw_comm_size(comm_), rank = gw_comm_rank(comm_), d = stride_ % n;
  if (n < 2 || d == 0) return;
  check_bench(gw_barrier(comm_), "ring probe: barrier");
  const auto t0 = Clock::now();
  for (uint32_t k = 0; k < steps_; ++k) exchange_block(n, rank, d);
  seconds_.push_back(slowest_rank(comm_, std::chrono::duration<double>(Clock::now() - t0).count()));
}

namespace {

// The ring step's ranks outnumber the cores, sent at most 60 % of the link's rate together, and their
// step cost at most 3 times the plain transfer's CPU per byte: a step the link paced behind 100 Mbit/s
// (P7, 4 x 2 nodes) once reached only 0.58 of it and read 72 ns per byte against the transfer's 12,
// where steps the cores paced at 10 Gbit/s read 0.9 to 1.9 times the transfer's figure.
bool ring_paced_by_cores(const nlohmann::json& run, int ranks, int per_link) {
  const double cores = std::max(1u, std::thread::hardware_concurrency());
  const double link_rate = run.value("link_bytes_per_s", 0.0), ring_rate = run.value("ring_bytes_per_s", 0.0);
  const double probe_cpu = run.value("link_cpu_s_per_byte", 0.0), ring_cpu = run.value("ring_cpu_s_per_byte", 0.0);
  return ranks > cores && ring_rate > 0 && link_rate > 0 && per_link * ring_rate <= 0.6 * link_rate &&
         (probe_cpu <= 0 || ring_cpu <= 3 * probe_cpu);
}

}  // namespace

double transport_cpu_per_byte(const nlohmann::json& run, int ranks, int per_link) {
  return ring_paced_by_cores(run, ranks, per_link) ? run.value("ring_cpu_s_per_byte", 0.0)
                                                   : run.value("link_cpu_s_per_byte", 0.0);
}

double ring_wire_rate(const nlohmann::json& run, int ranks) {
  const double link_rate = run.value("link_bytes_per_s", 0.0), ring_rate = run.value("ring_bytes_per_s", 0.0);
  if (ring_rate <= 0 || ring_paced_by_cores(run, ranks, 1)) return link_rate;
  return std::min(link_rate, ring_rate);
}

TcpProbe RingStepProbe::result() const {
  if (seconds_.empty()) return {};
  const double s = summarize(seconds_).median;
  TcpProbe p;
  p.bytes_per_s = double(bytes_) / s;
  p.cpu_s_per_byte = s * cores_ / (double(gw_comm_size(comm_)) * double(bytes_));
  return p;
}

TcpProbe measure_loopback_tcp(uint64_t bytes) {
  Fd listener{listen_on(INADDR_LOOPBACK, 0, 1)};
  Fd out{connect_to("127.0.0.1", port_of(listener.fd))};
  Fd in{accept(listener.fd, nullptr, nullptr)};
  if (in.fd < 0) throw std::runtime_error("link probe: accept failed");
  std::string failed;
  std::thread sender([&] {
    try {
      for (int round = 0; round < kProbeRounds; ++round) timed_send(out.fd, bytes);
    } catch (const std::exception& e) {
      failed = e.what();
      shutdown(out.fd, SHUT_RDWR);
    }
  });
  std::vector<TcpProbe> transfers;
  try {
    for (int round = 0; round < kProbeRounds; ++round) {
      transfers.push_back(timed_receive(in.fd, bytes));
      put_byte(in.fd, 'a');
    }
  } catch (const std::exception& e) {
    if (failed.empty()) failed = e.what();
    shutdown(in.fd, SHUT_RDWR);
  }
  sender.join();
  if (!failed.empty()) throw std::runtime_error(failed);
  return median_of(transfers);
}

namespace {

std::string torch_python() {
  const char* python = std::getenv("GRADWIRE_BENCH_PYTHON");
  return python && *python ? python : "/usr/bin/python3";
}

// A Python peer: installed next to the command (BINDIR/../libexec/gradwire), else in the source tree this
// command was built from; "" after setting *why when it is missing or PyTorch is not importable.
std::string python_peer(const std::string& file, std::string* why) {
  std::vector<fs::path> candidates;
  candidates.push_back(fs::path(self_path("bench")).parent_path().parent_path() / "libexec" / "gradwire" / file);
  if (*GW_SOURCE_SCRIPTS_DIR)
    candidates.push_back(fs::path(GW_SOURCE_SCRIPTS_DIR).parent_path() / "bench" / "peers" / file);
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
  if (run_captured({torch_python(), "-c", "import torch.distributed"}, {}, &probe) != 0) {
    *why = "PyTorch is not importable by " + torch_python() + " (Debian's python3-torch, or GRADWIRE_BENCH_PYTHON)";
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
      run_captured({torch_python(), script, std::to_string(n), std::to_string(k), std::to_string(reps)}, {}, &out);
  try {
    return mpi_peer_result(status, out, "torch.topk peer");
  } catch (const std::exception& e) {
    *why = e.what();
    return std::nullopt;
  }
}

std::optional<nlohmann::json> run_gloo_peer(int ranks, const std::string& rate, uint64_t count, int reps,
                                            std::string* why) {
  return run_torch_peer("torch_allreduce.py", ranks, rate, {std::to_string(count), std::to_string(reps)}, why);
}

std::optional<nlohmann::json> run_torch_peer(const std::string& file, int ranks, const std::string& rate,
                                             const std::vector<std::string>& args, std::string* why) {
  const std::string script = python_peer(file, why);
  if (script.empty()) return std::nullopt;
  const fs::path exe = self_path("bench");
  std::vector<std::string> argv{exe.string(), "run", "-n", std::to_string(ranks)};
  if (!rate.empty()) argv.insert(argv.end(), {"--link", rate});
  argv.insert(argv.end(), {"--", torch_python(), script});
  argv.insert(argv.end(), args.begin(), args.end());
  std::string out;
  const int status = run_captured(argv, {}, &out);
  try {
    return mpi_peer_result(status, out, file + " peer");
  } catch (const std::exception& e) {
    *why = e.what();
    return std::nullopt;
  }
}

nlohmann::json run_mpi_peer(const std::vector<std::string>& program, int ranks, int per_node,
                            const gwcli::Cluster* cluster, const std::string& what) {
  std::vector<std::string> argv = mpirun_argv();
  // TCP inside a node too: Open MPI's shared memory (vader) names its segments after the host name, which
  // the emulated nodes share, so two nodes' segments collide (it crashes).
  argv.insert(argv.end(), {"--mca", "btl", "tcp,self"});
  Env env;
  if (cluster) {
    // Every namespace is a host of its own: mpirun runs in rank 0's, and starts the daemon of each other
    // node through `cluster.sh rsh ADDR` (ip netns exec) as it would through ssh; the daemons' and the
    // ranks' TCP stays on the veths (the PMIx server of each rank is its own namespace's daemon).
    std::string hosts;
    for (int r = 0; r < ranks; r += per_node)
      hosts += (r ? "," : "") + gwcli::Cluster::address_of(r, per_node) + ":" + std::to_string(per_node);
    argv.insert(argv.end(), {"--host", hosts, "--mca", "plm_rsh_agent", cluster->script_path() + " rsh", "--mca",
                             "btl_tcp_if_include", "198.18.0.0/15", "--mca", "oob_tcp_if_include", "198.18.0.0/15"});
    argv.insert(argv.begin(), {"ip", "netns", "exec", cluster->namespace_of(0)});
    env.push_back({"GW_CLUSTER_NAME", cluster->name()});
  } else {
    argv.insert(argv.end(), {"--oversubscribe"});
  }
  argv.insert(argv.end(), {"-np", std::to_string(ranks)});
  argv.insert(argv.end(), program.begin(), program.end());
  std::string captured;
  const int status = run_captured(argv, env, &captured);
  return mpi_peer_result(status, captured, what);
}

std::optional<gw::model::Model> load_model_option(const std::string& path, const char* suite) {
  if (path.empty()) return std::nullopt;
  try {
    return gw::model::load(path);
  } catch (const std::exception& e) {
    throw gwcli::Failure(GW_ERR_CONFIG, std::string("bench ") + suite + " --model: " + e.what());
  }
}

NominalInputs nominal_link_inputs(const gw::model::Model& model, const std::string& rate) {
  const double nominal = gw::model::parse_rate(rate);
  const auto [flow, all] = gw::model::delivered_at(model.delivery, nominal);
  NominalInputs n;
  n.bytes_per_s = nominal * flow;
  n.all_to_all_bytes_per_s = nominal * all;
  n.cpu_s_per_byte =
      model.links.count("tcp") ? model.links.at("tcp").cpu * gw::model::cpu_factor_at(model.delivery, nominal) : 0;
  return n;
}

gw::model::Cost allreduce_cost(const gw::model::Model* model, const std::string& codec, gw::model::CodecKind kind,
                               double size_ratio, double bytes, int ranks, double bytes_per_s, double cores,
                               double cpu_s_per_byte, double all_to_all_bytes_per_s) {
  gw::model::CodecCost c{codec, kind, size_ratio, 0, 0};
  gw::model::Topology t;
  t.nodes = uint64_t(std::max(1, ranks));
  t.per_node = 1;
  t.host_ranks = t.nodes;  // every rank's link its own, the cores and caches shared
  t.cores = std::max(1e-3, cores / double(std::max(1, ranks)));
  t.intra.beta = t.inter.beta = bytes_per_s > 0 ? 1 / bytes_per_s : 0;
  t.intra.all_to_all_beta = t.inter.all_to_all_beta = all_to_all_bytes_per_s > 0 ? 1 / all_to_all_bytes_per_s : 0;
  if (model) {
    t.cores = std::max(1e-3, model->machine.cores / double(std::max(1, ranks)));
    if (const gw::model::CodecCost* k = model->codec(codec)) c = *k;
    gw::model::use_machine(t, model->machine);
    if (model->links.count("tcp")) t.intra.alpha = t.inter.alpha = model->links.at("tcp").alpha;
    t.intra.cpu = t.inter.cpu = cpu_s_per_byte;
  }
  return gw::model::exchange(c, bytes, t);
}

std::optional<gw::model::Cost> node_allreduce_cost(const gw::model::Model& model, const std::string& codec,
                                                   double bytes, int nodes, int per_node, double bytes_per_s,
                                                   double cpu_s_per_byte, bool two_level,
                                                   double all_to_all_bytes_per_s) {
  const gw::model::CodecCost* c = model.codec(codec);
  if (c == nullptr) return std::nullopt;
  gw::model::Topology t;
  t.nodes = uint64_t(std::max(1, nodes));
  t.per_node = uint64_t(std::max(1, per_node));
  t.host_ranks = t.ranks();  // the nodes share one machine's caches
  t.cores = std::max(1e-3, model.machine.cores / double(t.nodes));
  gw::model::use_machine(t, model.machine);
  t.intra = model.link(model.links.count("shm") ? "shm" : model.intra);
  t.inter.beta = bytes_per_s > 0 ? 1 / bytes_per_s : 0;
  t.inter.cpu = cpu_s_per_byte;
  t.inter.all_to_all_beta = all_to_all_bytes_per_s > 0 ? 1 / all_to_all_bytes_per_s : 0;
  if (model.links.count("tcp")) t.inter.alpha = model.links.at("tcp").alpha;
  // gw_allreduce_compressed runs "none" as the dense ring (its payloads are its values), the model's Dense;
  // the two-level allreduce sends every codec's payloads through its own cross phase (the model's
  // two-level formula prices none's copies there).
  return gw::model::exchange(*c, bytes, t, two_level ? gw::model::Algorithm::TwoLevel : gw::model::Algorithm::Auto);
}

}  // namespace gwcli::bench
