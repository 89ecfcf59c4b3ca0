// P3: point-to-point bandwidth and latency through the UCX transport, 2 ranks, 8 B - 64 MiB, with
// UCX_TLS=shm and UCX_TLS=tcp, against ucx_perftest (tag_bw, tag_lat) run with the same UCX_TLS.
//
//   ours: two forked ranks (bench_ranks), gw_send / gw_recv between them.
//     latency: ping-pong, one-way time = round trip / 2, median over the iterations of a repetition;
//     bandwidth: rank 0 keeps a sliding window of 16 gw_send_start in flight, rank 1 the matching
//       receives; timed until rank 1's 1-byte acknowledgement of the last message arrives.
//   peer: `ucx_perftest -p PORT` (server) and `ucx_perftest 127.0.0.1 -p PORT -t tag_lat|tag_bw -s SIZE
//     -n ITERS -f -v` (client), same UCX_TLS; the median latency (50th percentile) and the average
//     bandwidth (its "overall" column also counts the connection setup, which dwarfs small messages).
// Each figure: median of the repetitions. ratio: bandwidth ours / peer (target >= 0.9), latency
// peer / ours (target >= 0.83). MB/s are 2^20 bytes, as ucx_perftest prints them.
#include <gradwire/gradwire.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <deque>
#include <cstdio>
#include <sstream>
#include <stdexcept>
#include <thread>
#include <vector>

#include "suites/bench.hpp"
#include "suites/bench_ranks.hpp"

namespace gwcli::bench {
namespace {

using Clock = std::chrono::steady_clock;
using json = nlohmann::json;
constexpr int kWindow = 16;

uint64_t latency_iterations(uint64_t size) { return size <= 65536 ? 2000 : size <= (4u << 20) ? 100 : 10; }
uint64_t bandwidth_iterations(uint64_t size) {
  return std::clamp<uint64_t>((uint64_t{256} << 20) / size, 32, 20000);
}

// One repetition of the ping-pong; returns rank 0's median one-way latency in microseconds.
double ping_pong(gw_comm* comm, std::vector<char>& buf, uint64_t size, uint64_t iters) {
  const uint32_t rank = gw_comm_rank(comm), other = 1 - rank;
  gw_tensor t = bytes_tensor(buf.data(), size);
  std::vector<double> samples;
  check_bench(gw_barrier(comm), "barrier");
  for (uint64_t i = 0; i < iters; ++i) {
    const auto t0 = Clock::now();
    if (rank == 0) {
      check_bench(gw_send(comm, &t, other, 1), "send");
      check_bench(gw_recv(comm, &t, other, 1), "recv");
      samples.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count() / 2);
    } else {
      check_bench(gw_recv(comm, &t, other, 1), "recv");
      check_bench(gw_send(comm, &t, other, 1), "send");
    }
  }
  return rank == 0 ? summarize(samples).median : 0;
}

// One repetition of the streaming test; returns MB/s seen by rank 0.
double stream(gw_comm* comm, std::vector<char>& buf, uint64_t size, uint64_t iters) {
  const uint32_t rank = gw_comm_rank(comm), other = 1 - rank;
  gw_tensor t = bytes_tensor(buf.data(), size);
  char ack_byte = 0;
  gw_tensor ack = bytes_tensor(&ack_byte, 1);
  check_bench(gw_barrier(comm), "barrier");
  const auto t0 = Clock::now();
  // A sliding window, as ucx_perftest's: the oldest request is waited for, then the next one started,
  // so kWindow messages are in flight all the time (no drain between batches).
  std::deque<gw_request*> window;
  const auto start_one = [&] {
    gw_request* r = nullptr;
    check_bench(rank == 0 ? gw_send_start(comm, &t, other, 2, &r) : gw_recv_start(comm, &t, other, 2, &r), "start");
    window.push_back(r);
  };
  uint64_t started = 0;
  for (; started < std::min<uint64_t>(kWindow, iters); ++started) start_one();
  while (!window.empty()) {
    check_bench(gw_request_wait(window.front(), -1), "wait");
    gw_request_free(window.front());
    window.pop_front();
    if (started < iters) {
      start_one();
      ++started;
    }
  }
  check_bench(rank == 0 ? gw_recv(comm, &ack, other, 3) : gw_send(comm, &ack, other, 3), "acknowledgement");
  const double seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  return double(size) * double(iters) / seconds / (1 << 20);
}

json measure_ours(const std::string& tls, const std::vector<uint64_t>& sizes, int reps) {
  return run_forked_ranks(2, {{"UCX_TLS", tls}}, {}, [&](gw_runtime*, gw_comm* comm) {
    json out = json::array();
    std::vector<char> buf(sizes.back());
    for (uint64_t size : sizes) {
      std::vector<double> lat, bw;
      ping_pong(comm, buf, size, std::min<uint64_t>(latency_iterations(size), 50));  // warm-up
      stream(comm, buf, size, std::min<uint64_t>(bandwidth_iterations(size), 64));
      for (int r = 0; r < reps; ++r) {
        lat.push_back(ping_pong(comm, buf, size, latency_iterations(size)));
        bw.push_back(stream(comm, buf, size, bandwidth_iterations(size)));
      }
      out.push_back({{"size", size}, {"lat", lat}, {"bw", bw}});
    }
    return out;
  });
}

// One ucx_perftest client/server pair; returns the last CSV line's fields.
std::vector<double> perftest(const std::string& tls, const char* test, uint64_t size, uint64_t iters) {
  const std::string port = std::to_string(free_port("P3"));
  SpawnOptions quiet;
  quiet.env = {{"UCX_TLS", tls}};
  quiet.stdout_fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
  const pid_t server = spawn({"ucx_perftest", "-p", port}, quiet, "P3");
  if (quiet.stdout_fd >= 0) close(quiet.stdout_fd);
  std::string out;
  int status = 1;
  for (int attempt = 0; attempt < 20 && status != 0; ++attempt) {  // until the server listens
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    out.clear();
    status = run_captured({"ucx_perftest", "127.0.0.1", "-p", port, "-t", test, "-s", std::to_string(size), "-n",
                           std::to_string(iters), "-w", std::to_string(std::min<uint64_t>(iters, 100)), "-f", "-v"},
                          {{"UCX_TLS", tls}}, &out);
  }
  kill(server, SIGTERM);
  wait_exit(server);
  if (status != 0)
    throw std::runtime_error("P3: ucx_perftest " + std::string(test) + " failed (is ucx-utils installed?): " + out);
  std::istringstream lines(out);
  std::string line, last;
  while (std::getline(lines, line)) {
    line.erase(0, line.find_first_not_of(' '));
    if (!line.empty() && std::isdigit(static_cast<unsigned char>(line[0]))) last = line;
  }
  std::vector<double> fields;
  std::istringstream cells(last);
  for (std::string cell; std::getline(cells, cell, ',');) fields.push_back(std::stod(cell));
  if (fields.size() < 6) throw std::runtime_error("P3: cannot read ucx_perftest's output: " + out);
  return fields;  // iterations, 50th percentile latency, avg latency, overall latency, avg bw, overall bw, ...
}

}  // namespace

void run_p3(const Options& o, const Emit& emit) {
  const std::vector<uint64_t> sizes = o.quick ? std::vector<uint64_t>{8, 65536, 1u << 20}
                                              : std::vector<uint64_t>{8, 512, 8192, 262144, 4u << 20, 64u << 20};
  for (const std::string tls : {"shm", "tcp"}) {
    // Another transport than UCX ignores UCX_TLS: one pass, beside ucx_perftest over TCP.
    if (!o.transport.empty() && o.transport != "ucx" && tls == "shm") continue;
    const json ours = measure_ours(tls, sizes, o.repetitions);
    for (size_t i = 0; i < sizes.size(); ++i) {
      const uint64_t size = sizes[i];
      std::vector<double> peer_lat, peer_bw;
      for (int r = 0; r < o.repetitions; ++r) {
        peer_lat.push_back(perftest(tls, "tag_lat", size, latency_iterations(size))[1]);
        peer_bw.push_back(perftest(tls, "tag_bw", size, bandwidth_iterations(size))[4]);
      }
      const Stats ol = summarize(ours[i]["lat"].get<std::vector<double>>());
      const Stats ob = summarize(ours[i]["bw"].get<std::vector<double>>());
      const Stats pl = summarize(peer_lat), pb = summarize(peer_bw);
      Result bw{"P3", tls + " bw " + size_name(size), ob.median, pb.median, "MB/s", ob.median / pb.median,
                "ucx_perftest tag_bw", {{"spread", ob.spread}, {"peer_spread", pb.spread}, {"target", ">= 0.9"}}};
      emit(bw);
      Result lat{"P3", tls + " lat " + size_name(size), ol.median, pl.median, "us", pl.median / ol.median,
                 "ucx_perftest tag_lat", {{"spread", ol.spread}, {"peer_spread", pl.spread}, {"target", ">= 0.83"}}};
      emit(lat);
    }
  }
}

}  // namespace gwcli::bench
