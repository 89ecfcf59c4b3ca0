// The links' and the sum's measurements of the cost model (link_tables.hpp).
#include "suites/link_tables.hpp"

#include <gradwire/gradwire.h>
#include <sched.h>

#include <algorithm>
#include <chrono>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <utility>

#include "suites/bench.hpp"
#include "suites/bench_ranks.hpp"
#include "suites/peer_extras.hpp"
#include "model/measure.hpp"

namespace gwcli::bench {
namespace {

using Clock = std::chrono::steady_clock;
using nlohmann::json;

// Both ranks send one message and receive the other's at once (a step of a ring or of recursive
// doubling); blocks until both complete.
void exchange_once(gw_comm* comm, gw_tensor* out, gw_tensor* in, uint32_t to, uint32_t from) {
  gw_request *send = nullptr, *recv = nullptr;
  check_bench(gw_recv_start(comm, in, from, 1, &recv), "receive");
  check_bench(gw_send_start(comm, out, to, 1, &send), "send");
  const gw_status a = gw_request_wait(recv, 60), b = gw_request_wait(send, 60);
  gw_request_free(recv);
  gw_request_free(send);
  check_bench(a, "receive");
  check_bench(b, "send");
}

// The 2 (n - 1) steps of a ring allreduce's pass over the blocks of a buffer of n `size`-byte blocks at
// `ring` (and a landing block), as the allreduce moves them: reduce-scatter step s sends block r - 1 - s
// and receives block r - 2 - s into the landing block, allgather step t sends block r - t and receives
// block r - 1 - t into its place. A rank sends its step k + 1 message as soon as its step k message has
// arrived, without waiting for its own step k send to complete; the sends are waited for at the end.
// With `sum`, each reduce-scatter step adds the landing block into its place (f32) as the allreduce does.
// Over one block sent and one received again and again, 4 ranks on 2 cores stepped 256 KiB in 29 us
// where the allreduce's steps took 70 and more: the buffer's blocks, not the sums, made the difference
// (the same pass summing each received block into its place took as long as without the sums).
void ring_pass(gw_comm* comm, char* ring, char* landing, uint64_t size, uint32_t rank, uint32_t n, bool sum) {
  const uint32_t to = (rank + 1) % n, from = (rank + n - 1) % n, steps = 2 * (n - 1);
  std::vector<gw_request*> sends(steps, nullptr);
  gw_request* recv = nullptr;
  gw_status status = GW_OK;
  const auto block = [&](uint64_t b) { return bytes_tensor(ring + (b % n) * size, size); };
  for (uint32_t k = 0; k < steps && status == GW_OK; ++k) {
    const bool scatter = k < n - 1;
    const uint32_t t = k - (n - 1);
    gw_tensor out = scatter ? block(rank + 2 * n - 1 - k) : block(rank + n - t);
    gw_tensor in = scatter ? bytes_tensor(landing, size) : block(rank + 2 * n - 1 - t);
    status = gw_recv_start(comm, &in, from, k + 1, &recv);
    if (status == GW_OK) status = gw_send_start(comm, &out, to, k + 1, &sends[k]);
    if (status == GW_OK) status = gw_request_wait(recv, 60);
    if (recv) gw_request_free(recv);
    recv = nullptr;
    if (sum && scatter && status == GW_OK) {
      float* __restrict into = static_cast<float*>(block(rank + 2 * n - 2 - k).data);  // the block that arrived
      const float* __restrict arrived = reinterpret_cast<const float*>(landing);
      for (uint64_t i = 0; i < size / sizeof(float); ++i) into[i] += arrived[i];
    }
  }
  for (gw_request* s : sends)
    if (s) {
      const gw_status b = gw_request_wait(s, 60);
      if (status == GW_OK) status = b;
      gw_request_free(s);
    }
  check_bench(status, "a ring's step");
}

struct MessageTiming {
  bool scheduled = false;  // the median at the smallest size too (else its fastest: the alpha)
  bool call = false;       // one more entry: a one-f32 allreduce's median beyond the smallest message's
  bool both_ways = false;  // both ranks send at once (an exchange) instead of a ping-pong
  int ranks = 2;           // with both_ways: every rank sends to the next and receives from the previous
  // When > 1: a sample is a ring allreduce's pass after a barrier (ring_pass; `group` must be its
  // 2 (ranks - 1) steps), over their number.
  int group = 1;
  // With group > 1: every sample also times a pass that sums what the reduce-scatter receives (ring_pass's
  // `sum`) before the plain one; the summed passes' medians follow the plain ones' in the result.
  bool summed_too = false;
};

// One-way times between two forked local ranks over one UCX transport, at each size: the median, but the
// fastest for the smallest size unless `scheduled` (its alpha: on a loaded machine the median measures
// the scheduler; with both ranks on one core the scheduler is what is measured). A ping-pong (half a
// round trip) or, with `both_ways`, both ranks sending at once (the time of the exchange: the copies of
// the two directions share the memory's bandwidth, as in every step of the dense algorithms). With
// `call`, one more entry: the median time of an allreduce of one f32 less the smallest message's median
// (a collective call's own cost; less its fastest, the alpha, a 2-rank allreduce of 4 KiB was predicted
// about 20 % long, the fastest 8-byte exchange 0.50 us where its median was 0.62).
std::vector<double> message_times(const std::string& tls, const std::string& config,
                                  const std::vector<uint64_t>& sizes, const MessageTiming& how) {
  const bool both_ways = how.both_ways;
  RankSetup setup;
  setup.config = config;
  setup.timeout_s = 60;
  const json r = run_forked_ranks(how.ranks, {{"UCX_TLS", tls}}, setup, [&](gw_runtime*, gw_comm* comm) {
    const uint32_t rank = gw_comm_rank(comm), n = gw_comm_size(comm), other = 1 - rank;
    const uint32_t to = (rank + 1) % n, from = (rank + n - 1) % n;
    std::vector<char> buf(sizes.back()), back(both_ways ? sizes.back() : 0);
    std::vector<char> ring(how.group > 1 ? n * sizes.back() : 0);  // the ring pass's blocks (`back` lands)
    json seconds = json::array(), summed = json::array();
    double smallest_median = 0;
    // One ring pass (ring_pass) after a barrier, per step.
    const auto pass_step = [&](uint64_t size, bool sum) {
      check_bench(gw_barrier(comm), "barrier");
      const auto t0 = Clock::now();
      ring_pass(comm, ring.data(), back.data(), size, rank, n, sum);
      return std::chrono::duration<double>(Clock::now() - t0).count() / how.group;
    };
    for (uint64_t size : sizes) {
      gw_tensor t = bytes_tensor(buf.data(), size);
      gw_tensor u = bytes_tensor(back.data(), both_ways ? size : 0);
      const int iters = size <= 65536 ? 200 : size <= (4 << 20) ? 40 : size <= (16 << 20) ? 10 : 4;
      std::vector<double> samples, summed_samples;
      for (int i = -2; i < iters; ++i) {
        if (how.summed_too) {
          const double step = pass_step(size, true);
          if (i >= 0) summed_samples.push_back(step);
        }
        if (how.group > 1) {
          const double step = pass_step(size, false);
          if (i >= 0) samples.push_back(step);
          continue;
        }
        const auto t0 = Clock::now();
        if (both_ways) {
          exchange_once(comm, &t, &u, to, from);
          // The next exchange sends what arrived and receives into what was sent, as a ring's steps do:
          // its bytes land on lines the partner has just read, whose copies in the partner's cache each
          // write must invalidate. Into a buffer only this rank touches, 2 ranks' allreduces of 64 and
          // 256 KiB ran 1.5 to 2 times the exchanges' time.
          std::swap(t.data, u.data);
        } else if (rank == 0) {
          check_bench(gw_send(comm, &t, other, 1), "send");
          check_bench(gw_recv(comm, &t, other, 1), "recv");
        } else {
          check_bench(gw_recv(comm, &t, other, 1), "recv");
          check_bench(gw_send(comm, &t, other, 1), "send");
        }
        // An exchange's time is one message's; a ping-pong's round trip is two.
        const double elapsed = std::chrono::duration<double>(Clock::now() - t0).count();
        if (i >= 0) samples.push_back(both_ways ? elapsed : elapsed / 2);
      }
      const double median = summarize(samples).median;
      const bool smallest = size == sizes.front();
      if (smallest) smallest_median = median;
      seconds.push_back(smallest && !how.scheduled ? *std::min_element(samples.begin(), samples.end()) : median);
      if (how.summed_too) summed.push_back(summarize(summed_samples).median);
    }
    for (const json& t : summed) seconds.push_back(t);
    if (how.call) {
      float x = 1;
      gw_tensor t = GW_TENSOR_INIT;
      t.dtype = GW_DTYPE_F32;
      t.data = &x;
      t.count = 1;
      std::vector<double> samples;
      for (int i = -20; i < 200; ++i) {
        const auto t0 = Clock::now();
        check_bench(gw_allreduce(comm, &t, &t, GW_REDUCE_SUM), "allreduce of one f32");
        if (i >= 0) samples.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
      }
      seconds.push_back(summarize(samples).median - smallest_median);
    }
    return seconds;
  });
  return r.get<std::vector<double>>();
}

// A ring's step with ranks two to a core: 2c ranks on c cores (c = 2 where this process may use two
// cores, else 1; the ranks inherit this process's affinity, narrowed for the measurement), every rank
// sending to the next and receiving from the previous at once. Timed as a collective runs it: from a
// barrier, the 2 (2c - 1) steps of a ring allreduce's pass (ring_pass), the median over passes, each
// pass beside one with its sums (the result: the plain steps, then the summed ones). (Single
// steps' median reads the moments when a rank's partner happens to run on the other core: 1 us at
// 4 KiB, a two-core exchange; a long run's mean reads the scheduler's time slices; steps that wait for
// their own sends wait for every rendezvous receiver's answer, which the allreduce does not.)
std::vector<double> ring_steps_two_per_core(const std::string& tls, const std::string& config,
                                            const std::vector<uint64_t>& sizes) {
  cpu_set_t all, few;
  if (sched_getaffinity(0, sizeof all, &all) != 0) throw std::runtime_error("sched_getaffinity failed");
  CPU_ZERO(&few);
  int cores = 0;
  for (int c = 0; c < CPU_SETSIZE && cores < 2; ++c)
    if (CPU_ISSET(c, &all)) {
      CPU_SET(c, &few);
      ++cores;
    }
  if (sched_setaffinity(0, sizeof few, &few) != 0) throw std::runtime_error("sched_setaffinity failed");
  try {
    std::vector<double> t =
        message_times(tls, config, sizes,
                      {.scheduled = true,
                       .both_ways = true,
                       .ranks = 2 * cores,
                       .group = 2 * (2 * cores - 1),
                       .summed_too = true});
    sched_setaffinity(0, sizeof all, &all);
    return t;
  } catch (...) {
    sched_setaffinity(0, sizeof all, &all);
    throw;
  }
}

// Up to 64 MiB each way: the exchange keeps 4 such buffers on the machine, beyond its last-level cache
// (a VM may see a host's large one: 16 MiB each way stayed in it, and 2 ranks' allreduces of 64 and 256
// MiB took twice what the 16 MiB exchange, held in proportion, gave).
const std::vector<uint64_t> kShmSizes = {8,       4096,    16384,   32768,   65536,    262144,  1 << 20,
                                         2 << 20, 4 << 20, 8 << 20, 16 << 20, 32 << 20, 64 << 20};
const std::vector<uint64_t> kTcpSizes = {8, 1 << 20, 16 << 20};

}  // namespace

LinkPasses::LinkPasses(std::string tls, std::string config)
    : tls_(std::move(tls)), config_(std::move(config)), table_(tls_ == "shm"), sizes_(table_ ? kShmSizes : kTcpSizes) {}

void LinkPasses::pass() {
  exchanges_.push_back(message_times(tls_, config_, sizes_, {.call = table_, .both_ways = table_}));
  if (!table_) return;
  // Each ring's steps without, then with its sums: two ranks per core, and a 2-rank ring over a buffer of
  // two blocks of each size.
  const auto split = [&](const std::vector<double>& t, std::vector<std::vector<double>>& plain,
                         std::vector<std::vector<double>>& summed) {
    plain.emplace_back(t.begin(), t.begin() + long(sizes_.size()));
    summed.emplace_back(t.begin() + long(sizes_.size()), t.end());
  };
  split(ring_steps_two_per_core(tls_, config_, sizes_), crowded_, crowded_summed_);
  split(message_times(tls_, config_, sizes_, {.scheduled = true, .both_ways = true, .group = 2, .summed_too = true}),
        rings_, summed_);
}

gw::model::Link LinkPasses::fit(double* call) const {
  if (exchanges_.empty()) throw std::logic_error("LinkPasses::fit before any pass");
  std::vector<double> t = median_by_index(exchanges_);
  *call = 0;
  if (table_) {
    *call = std::max(0.0, t.back());
    t.pop_back();
  }
  gw::model::Link l;
  l.alpha = t.front();
  const size_t mib = size_t(std::find(sizes_.begin(), sizes_.end(), uint64_t(1) << 20) - sizes_.begin());
  const double t1 = t[mib], last = t.back(), size = double(sizes_.back());  // 1 MiB and the last size
  l.beta = last > t1 ? (last - t1) / (size - double(1 << 20)) : last / size;
  if (table_) {
    l.sizes.assign(sizes_.begin(), sizes_.end());
    l.seconds = t;
    l.crowded_seconds = median_by_index(crowded_);
    l.crowded_summed_seconds = median_by_index(crowded_summed_);
    l.ring_seconds = median_by_index(rings_);
    l.ring_summed_seconds = median_by_index(summed_);
  }
  return l;
}

const std::vector<uint64_t>& sum_table_sizes() {
  static const std::vector<uint64_t> sizes = {256 << 10, 1 << 20, 4 << 20, 16 << 20, 32 << 20, 64 << 20};
  return sizes;
}

std::vector<double> measure_sum_table() {
  std::vector<double> out;
  for (uint64_t size : sum_table_sizes())
    out.push_back(gw::model::measure_gamma(size, int(std::max<uint64_t>(3, (128u << 20) / size))));
  return out;
}

std::vector<double> median_by_index(const std::vector<std::vector<double>>& rows) {
  if (rows.empty()) return {};
  std::vector<double> out(rows.front().size());
  for (size_t i = 0; i < out.size(); ++i) {
    std::vector<double> at;
    for (const auto& r : rows) at.push_back(r.at(i));
    out[i] = summarize(at).median;
  }
  return out;
}

CrossLink measure_cross_link(gw_comm* comm, uint64_t largest) {
  const uint32_t rank = gw_comm_rank(comm), n = gw_comm_size(comm);
  if (n < 2) throw std::runtime_error("the link between hosts needs a run of two ranks or more");
  CrossLink out;
  out.ranks = n;
  largest = std::max<uint64_t>(largest, 4 << 20);
  out.largest = largest;
  std::vector<char> buf(largest), ack(8);
  gw_tensor small = bytes_tensor(ack.data(), ack.size());
  // One exchange between ranks 0 and 1: `size` bytes from `from` to the other, 8 B back; seconds on `from`.
  const auto one = [&](uint64_t size, uint32_t from) {
    gw_tensor t = bytes_tensor(buf.data(), size);
    const uint32_t to = 1 - from;
    const auto t0 = Clock::now();
    if (rank == from) {
      check_bench(gw_send(comm, &t, to, 1), "cross-host link: send");
      check_bench(gw_recv(comm, &small, to, 2), "cross-host link: answer");
    } else if (rank == to) {
      check_bench(gw_recv(comm, &t, from, 1), "cross-host link: receive");
      check_bench(gw_send(comm, &small, from, 2), "cross-host link: answer");
    }
    return std::chrono::duration<double>(Clock::now() - t0).count();
  };
  check_bench(gw_barrier(comm), "cross-host link: barrier");
  std::vector<double> rtt;
  for (int i = -5; i < 100; ++i) {
    const double s = one(8, 0);
    if (i >= 0) rtt.push_back(s);
  }
  out.alpha = summarize(rtt).median / 2;
  std::vector<uint64_t> sizes = {64 << 10, 1 << 20};
  for (uint64_t s = 4 << 20; s <= largest; s *= 4) sizes.push_back(s);
  if (sizes.back() != largest) sizes.push_back(largest);
  for (uint32_t from : {0u, 1u}) {
    std::vector<double> x, y;
    for (uint64_t size : sizes) {
      std::vector<double> t;
      for (int i = -1; i < 3; ++i) {
        const double s = one(size, from);
        if (i >= 0) t.push_back(s);
      }
      // On the sender; rank 0 takes it from rank 1 when rank 1 sent.
      double seconds = summarize(t).median - out.alpha;
      if (from == 1) {
        gw_tensor v = bytes_tensor(&seconds, sizeof seconds);
        if (rank == 1) check_bench(gw_send(comm, &v, 0, 3), "cross-host link: timings");
        if (rank == 0) check_bench(gw_recv(comm, &v, 1, 3), "cross-host link: timings");
      }
      if (size >= (1 << 20)) x.push_back(double(size)), y.push_back(seconds);
    }
    const gw::model::Link fit = gw::model::fit_link(x, y);
    (from == 0 ? out.beta_out : out.beta_in) = fit.beta;
  }
  check_bench(gw_barrier(comm), "cross-host link: barrier");
  if (n >= 3) out.all_to_all_bytes_per_s = measure_all_to_all(comm);
  {
    TcpLinkProbe probe(comm);
    for (int i = 0; i < kProbeRounds; ++i) probe.transfer();
    const TcpProbe p = probe.result();
    out.tcp_bytes_per_s = p.bytes_per_s;
    out.tcp_cpu_s_per_byte = p.cpu_s_per_byte;
  }
  if (rank != 0) return CrossLink{};
  return out;
}

}  // namespace gwcli::bench
