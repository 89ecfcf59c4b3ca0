// `gradwire calibrate [-o FILE]`: fits the cost model (docs/cost-model.md) from short measurements on
// this machine — every codec's encode and decode cost and size ratio, the cost of an elementwise sum,
// and alpha / beta of each UCX transport between two local ranks (alpha the fastest time of 8 B, beta
// the slope between the median times of 1 MiB and 16 MiB: tcp's one way in a ping-pong, with the
// machine's CPU time per byte of a plain loopback TCP transfer; shm's exchanged, with a table by message
// size and a ring's step with two ranks per core) — and saves it as TOML. `--inter-rate
// RATE` adds a link "inter" with the TCP transport's alpha and CPU per byte and the given rate's beta (a
// link this machine does not have, e.g. 100mbit) and makes it the model's inter-node link.
#include <gradwire/gradwire.h>

#include <sched.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <iomanip>
#include <iostream>
#include <sstream>
#include <thread>

#include "bench/bench.hpp"
#include "bench/bench_ranks.hpp"
#include "bench/peer_extras.hpp"
#include "commands.hpp"
#include "model/measure.hpp"
#include "model/model.hpp"

namespace gwcli {
namespace {

using Clock = std::chrono::steady_clock;
using nlohmann::json;

struct CalibrateArgs {
  std::string output = "gradwire-model.toml";
  std::string config;
  std::string codecs;      // comma-separated; empty: every codec plugin
  std::string inter_rate;  // e.g. 100mbit
  std::string intra_rate;
  uint64_t bytes = 64 << 20;  // beyond the caches, like a gradient
  int repetitions = 5;
  bool no_links = false;
  int concurrent = 1;  // processes measuring the codecs at once
};

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= s.size()) {
    size_t comma = s.find(',', start);
    if (comma == std::string::npos) comma = s.size();
    if (comma > start) out.push_back(s.substr(start, comma - start));
    start = comma + 1;
  }
  return out;
}

std::vector<std::string> codec_names(gw_runtime* rt) {
  std::vector<std::string> names;
  uint32_t plugins = 0;
  check(gw_runtime_plugin_count(rt, &plugins), "listing plugins");
  for (uint32_t p = 0; p < plugins; ++p) {
    gw_plugin_info info = GW_PLUGIN_INFO_INIT;
    if (gw_runtime_plugin_info(rt, p, &info) != GW_OK || info.status != GW_OK) continue;
    for (uint32_t c = 0; c < info.num_components; ++c) {
      gw_component_info ci = GW_COMPONENT_INFO_INIT;
      if (gw_runtime_component_info(rt, p, c, &ci) == GW_OK && ci.kind == 0) names.push_back(ci.name);
    }
  }
  std::sort(names.begin(), names.end());
  return names;
}

// Repetitions of --bytes that cover `total` bytes, --repetitions at least: a codec's passes over 512 MiB
// (encode, decode and decode adding: about 80 ms here) and γ's over 1 GiB last longer than the dips of
// a shared machine's memory speed (tens of milliseconds), so that their median is the speed a long
// collective sees rather than that of one dip or of one quiet moment.
int spread_repetitions(const CalibrateArgs& args, uint64_t total) {
  return int(std::clamp<uint64_t>(total / std::max<uint64_t>(1, args.bytes), uint64_t(args.repetitions), 100));
}

gw::model::CodecCost measure(gw_runtime* rt, const std::string& name, const CalibrateArgs& args, uint64_t chunk) {
  gw_codec* codec = nullptr;
  check(gw_codec_create(rt, name.c_str(), &codec), "creating codec '" + name + "'");
  std::unique_ptr<gw_codec, gw_status (*)(gw_codec*)> owner(codec, gw_codec_destroy);
  gw_codec_properties props = GW_CODEC_PROPERTIES_INIT;
  check(gw_codec_get_properties(codec, &props), "properties of '" + name + "'");
  const auto kind = gw::model::kind_of(name, props.flags & GW_CODEC_SPARSE, props.flags & GW_CODEC_SUMMABLE,
                                       props.flags & GW_CODEC_SHARED_INDICES);
  gw::model::CodecProbe probe;
  probe.max_payload = [&](uint64_t count) {
    uint64_t size = 0;
    check(gw_codec_max_encoded_size(codec, GW_DTYPE_F32, count, &size), "max size");
    return size;
  };
  probe.encode = [&](uint64_t offset, const float* x, uint64_t count, void* payload, uint64_t capacity) {
    gw_codec_context ctx = GW_CODEC_CONTEXT_INIT;
    ctx.seed = 7 + offset;
    gw_tensor t = GW_TENSOR_INIT;
    t.data = const_cast<float*>(x);
    t.count = count;
    t.dtype = GW_DTYPE_F32;
    uint64_t size = 0;
    check(gw_codec_encode(codec, &ctx, &t, payload, capacity, &size), "encode with '" + name + "'");
    return size;
  };
  probe.decode = [&](uint64_t offset, const void* payload, uint64_t size, float* out, uint64_t count, bool acc) {
    gw_codec_context ctx = GW_CODEC_CONTEXT_INIT;
    ctx.seed = 7 + offset;
    gw_tensor t = GW_TENSOR_INIT;
    t.data = out;
    t.count = count;
    t.dtype = GW_DTYPE_F32;
    check(gw_codec_decode(codec, &ctx, payload, size, &t, acc ? GW_DECODE_ACCUMULATE : 0), "decode with '" + name + "'");
  };
  return gw::model::measure_codec(name, kind, probe, args.bytes, chunk, spread_repetitions(args, uint64_t{512} << 20));
}

// Both ranks send one message and receive the other's at once (a step of a ring or of recursive
// doubling); blocks until both complete.
void exchange_once(gw_comm* comm, gw_tensor* out, gw_tensor* in, uint32_t to, uint32_t from) {
  gw_request *send = nullptr, *recv = nullptr;
  bench::check_bench(gw_recv_start(comm, in, from, 1, &recv), "receive");
  bench::check_bench(gw_send_start(comm, out, to, 1, &send), "send");
  const gw_status a = gw_request_wait(recv, 60), b = gw_request_wait(send, 60);
  gw_request_free(recv);
  gw_request_free(send);
  bench::check_bench(a, "receive");
  bench::check_bench(b, "send");
}

// `steps` steps of a ring as its allreduce runs them: a rank sends its step k + 1 message as soon as
// its step k message has arrived (it forwards what it received), without waiting for its own step k
// send to complete; the sends are waited for at the end.
void ring_pass(gw_comm* comm, gw_tensor* out, gw_tensor* in, uint32_t to, uint32_t from, int steps) {
  std::vector<gw_request*> sends(size_t(steps), nullptr);
  gw_request* recv = nullptr;
  gw_status status = GW_OK;
  for (int k = 0; k < steps && status == GW_OK; ++k) {
    status = gw_recv_start(comm, in, from, uint32_t(k + 1), &recv);
    if (status == GW_OK) status = gw_send_start(comm, out, to, uint32_t(k + 1), &sends[size_t(k)]);
    if (status == GW_OK) status = gw_request_wait(recv, 60);
    if (recv) gw_request_free(recv);
    recv = nullptr;
  }
  for (gw_request* s : sends)
    if (s) {
      const gw_status b = gw_request_wait(s, 60);
      if (status == GW_OK) status = b;
      gw_request_free(s);
    }
  bench::check_bench(status, "a ring's step");
}

struct MessageTiming {
  bool scheduled = false;  // the median at the smallest size too (else its fastest: the alpha)
  bool call = false;       // one more entry: a one-f32 allreduce's median time
  bool both_ways = false;  // both ranks send at once (an exchange) instead of a ping-pong
  int ranks = 2;           // with both_ways: every rank sends to the next and receives from the previous
  int group = 1;           // a sample: `group` consecutive exchanges after a barrier (when > 1), over their number
};

// One-way times between two forked local ranks over one UCX transport, at each size: the median, but the
// fastest for the smallest size unless `scheduled` (its alpha: on a loaded machine the median measures
// the scheduler; with both ranks on one core the scheduler is what is measured). A ping-pong (half a
// round trip) or, with `both_ways`, both ranks sending at once (the time of the exchange: the copies of
// the two directions share the memory's bandwidth, as in every step of the dense algorithms). With
// `call`, one more entry: the median time of an allreduce of one f32 (a collective call's own cost).
std::vector<double> message_times(const std::string& tls, const std::string& config,
                                  const std::vector<uint64_t>& sizes, const MessageTiming& how) {
  const bool both_ways = how.both_ways;
  bench::RankSetup setup;
  setup.config = config;
  setup.timeout_s = 60;
  const json r = bench::run_forked_ranks(how.ranks, {{"UCX_TLS", tls}}, setup, [&](gw_runtime*, gw_comm* comm) {
    const uint32_t rank = gw_comm_rank(comm), n = gw_comm_size(comm), other = 1 - rank;
    const uint32_t to = (rank + 1) % n, from = (rank + n - 1) % n;
    std::vector<char> buf(sizes.back()), back(both_ways ? sizes.back() : 0);
    json seconds = json::array();
    for (uint64_t size : sizes) {
      gw_tensor t = bench::bytes_tensor(buf.data(), size);
      gw_tensor u = bench::bytes_tensor(back.data(), both_ways ? size : 0);
      const int iters = size <= 65536 ? 200 : size <= (4 << 20) ? 40 : 10;
      std::vector<double> samples;
      for (int i = -2; i < iters; ++i) {
        if (how.group > 1) bench::check_bench(gw_barrier(comm), "barrier");
        const auto t0 = Clock::now();
        if (both_ways) {
          if (how.group > 1)
            ring_pass(comm, &t, &u, to, from, how.group);
          else
            exchange_once(comm, &t, &u, to, from);
          // The next exchange sends what arrived and receives into what was sent, as a ring's steps do:
          // its bytes land on lines the partner has just read, whose copies in the partner's cache each
          // write must invalidate. Into a buffer only this rank touches, 2 ranks' allreduces of 64 and
          // 256 KiB ran 1.5 to 2 times the exchanges' time.
          std::swap(t.data, u.data);
        } else if (rank == 0) {
          bench::check_bench(gw_send(comm, &t, other, 1), "send");
          bench::check_bench(gw_recv(comm, &t, other, 1), "recv");
        } else {
          bench::check_bench(gw_recv(comm, &t, other, 1), "recv");
          bench::check_bench(gw_send(comm, &t, other, 1), "send");
        }
        // An exchange's time is one message's; a ping-pong's round trip is two.
        const double elapsed = std::chrono::duration<double>(Clock::now() - t0).count();
        if (i >= 0) samples.push_back(both_ways ? elapsed / how.group : elapsed / 2);
      }
      seconds.push_back(size == sizes.front() && !how.scheduled ? *std::min_element(samples.begin(), samples.end())
                                                            : bench::summarize(samples).median);
    }
    if (how.call) {
      float x = 1;
      gw_tensor t = GW_TENSOR_INIT;
      t.dtype = GW_DTYPE_F32;
      t.data = &x;
      t.count = 1;
      std::vector<double> samples;
      for (int i = -20; i < 200; ++i) {
        const auto t0 = Clock::now();
        bench::check_bench(gw_allreduce(comm, &t, &t, GW_REDUCE_SUM), "allreduce of one f32");
        if (i >= 0) samples.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
      }
      seconds.push_back(bench::summarize(samples).median);
    }
    return seconds;
  });
  return r.get<std::vector<double>>();
}

// A ring's step with ranks two to a core: 2c ranks on c cores (c = 2 where this process may use two
// cores, else 1; the ranks inherit this process's affinity, narrowed for the measurement), every rank
// sending to the next and receiving from the previous at once. Timed as a collective runs it: from a
// barrier, the 2 (2c - 1) steps of a ring allreduce's pass (ring_pass), the median over passes. (Single
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
                      {.scheduled = true, .both_ways = true, .ranks = 2 * cores, .group = 2 * (2 * cores - 1)});
    sched_setaffinity(0, sizeof all, &all);
    return t;
  } catch (...) {
    sched_setaffinity(0, sizeof all, &all);
    throw;
  }
}

// Per size, the median over `passes` runs of `measure` (each with ranks of its own): a shared machine
// has busy phases longer than one pass, and one pass's 16 MiB exchange over shared memory read 2.2 to
// 3.1 ms across calibrations of one hour.
std::vector<double> median_of_passes(int passes, const std::function<std::vector<double>()>& measure) {
  std::vector<std::vector<double>> runs;
  for (int p = 0; p < passes; ++p) runs.push_back(measure());
  std::vector<double> out(runs.front().size());
  for (size_t i = 0; i < out.size(); ++i) {
    std::vector<double> at;
    for (const auto& r : runs) at.push_back(r.at(i));
    out[i] = bench::summarize(at).median;
  }
  return out;
}

constexpr int kTablePasses = 3;  // passes over shared memory's message table

// alpha and beta of one UCX transport (the smallest message's time; the slope between 1 and 16 MiB),
// and for shared memory the times of an exchange (both ranks sending at once) by message size and of a
// ring's step with two ranks per core, and (into *call) what a collective call costs beyond its message: a
// one-f32 allreduce's time less alpha.
gw::model::Link measure_link(const std::string& tls, const std::string& config, double* call) {
  const bool table = tls == "shm";
  const std::vector<uint64_t> sizes =
      table ? std::vector<uint64_t>{8, 4096, 16384, 32768, 65536, 262144, 1 << 20, 4 << 20, 16 << 20}
            : std::vector<uint64_t>{8, 1 << 20, 16 << 20};
  const MessageTiming how{.call = table, .both_ways = table};
  std::vector<double> t =
      median_of_passes(table ? kTablePasses : 1, [&] { return message_times(tls, config, sizes, how); });
  gw::model::Link l;
  if (table) {
    *call = std::max(0.0, t.back() - t.front());
    t.pop_back();
  }
  l.alpha = t.front();
  const size_t mib = size_t(std::find(sizes.begin(), sizes.end(), uint64_t(1) << 20) - sizes.begin());
  const double t1 = t[mib], t16 = t.back();  // 1 MiB and 16 MiB (the last size)
  l.beta = t16 > t1 ? (t16 - t1) / double((16 << 20) - (1 << 20)) : t16 / double(16 << 20);
  if (table) {
    l.sizes.assign(sizes.begin(), sizes.end());
    l.seconds = t;
    l.crowded_seconds = median_of_passes(kTablePasses, [&] { return ring_steps_two_per_core(tls, config, sizes); });
  }
  return l;
}

// Buffer sizes of the sum's table (Machine::sum_sizes); past the last one the model takes gamma, the sum
// of --bytes (64 MiB by default, beyond the caches).
const std::vector<uint64_t> kSumSizes = {256 << 10, 1 << 20, 4 << 20, 16 << 20};

// gamma, the sum by buffer size, and every codec's costs, measured in this process.
json measure_cpu(const CalibrateArgs& args) {
  RuntimePtr rt = open_runtime(args.config);
  const uint64_t chunk = 1 << 20;  // [collectives] pipeline_chunk_bytes' default
  json out = {{"gamma", gw::model::measure_gamma(args.bytes, spread_repetitions(args, uint64_t{1} << 30))},
              {"codecs", json::array()}};
  // The median of passes that sum about 128 MiB in all (the buffers stay where the last pass left them).
  json sums = json::array();
  for (uint64_t size : kSumSizes)
    sums.push_back(gw::model::measure_gamma(size, int(std::max<uint64_t>(3, (128u << 20) / size))));
  out["sums"] = sums;
  for (const std::string& name : args.codecs.empty() ? codec_names(rt.get()) : split(args.codecs)) {
    const gw::model::CodecCost c = measure(rt.get(), name, args, chunk);
    out["codecs"].push_back({{"name", c.name}, {"kind", gw::model::kind_name(c.kind)}, {"ratio", c.ratio},
                             {"encode", c.encode}, {"decode", c.decode}, {"decode_accumulate", c.decode_accumulate}});
  }
  return out;
}

// The same in `n` processes at once (ranks sharing the cores), the median of each figure over them.
json measure_cpu_concurrently(const CalibrateArgs& args, int n) {
  if (n <= 1) return measure_cpu(args);
  std::vector<std::pair<pid_t, int>> children;
  std::fflush(nullptr);
  for (int i = 0; i < n; ++i) {
    int fds[2];
    if (pipe(fds) != 0) throw std::runtime_error("pipe failed");
    const pid_t pid = fork();
    if (pid < 0) throw std::runtime_error("fork failed");
    if (pid == 0) {
      close(fds[0]);
      int status = 0;
      try {
        const std::string text = measure_cpu(args).dump();
        status = write(fds[1], text.data(), text.size()) == ssize_t(text.size()) ? 0 : 1;
      } catch (const std::exception& e) {
        std::fprintf(stderr, "gradwire calibrate: %s\n", e.what());
        status = 1;
      }
      _exit(status);
    }
    close(fds[1]);
    children.emplace_back(pid, fds[0]);
  }
  std::vector<json> results;
  bool failed = false;
  for (const auto& [pid, fd] : children) {
    std::string text;
    char buf[4096];
    for (ssize_t got; (got = read(fd, buf, sizeof buf)) > 0;) text.append(buf, size_t(got));
    close(fd);
    int status = 0;
    waitpid(pid, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || text.empty()) {
      failed = true;
      continue;
    }
    results.push_back(json::parse(text));
  }
  if (failed || results.empty()) throw std::runtime_error("a measuring process failed (messages above)");
  const auto median = [&](const std::function<double(const json&)>& pick) {
    std::vector<double> v;
    for (const json& r : results) v.push_back(pick(r));
    return bench::summarize(v).median;
  };
  json all = results.front();
  all["gamma"] = median([](const json& r) { return r["gamma"].get<double>(); });
  for (size_t i = 0; i < all["sums"].size(); ++i)
    all["sums"][i] = median([&](const json& r) { return r["sums"][i].get<double>(); });
  for (size_t c = 0; c < all["codecs"].size(); ++c)
    for (const char* k : {"encode", "decode", "decode_accumulate"})
      all["codecs"][c][k] = median([&](const json& r) { return r["codecs"][c][k].get<double>(); });
  return all;
}

int run(const CalibrateArgs& args) {
  gw::model::Model m;
  const int hw = int(std::max(1u, std::thread::hardware_concurrency()));
  // Numbers measured with `concurrent` processes at once already include their sharing of the cores:
  // the model's cores count how many ranks a node runs before they take turns more than that.
  m.machine.cores = std::max(hw, args.concurrent);
  const json cpu = measure_cpu_concurrently(args, args.concurrent);
  m.machine.gamma = cpu["gamma"];
  for (size_t i = 0; i < cpu["sums"].size(); ++i) {
    m.machine.sum_sizes.push_back(double(kSumSizes[i]));
    m.machine.sum_seconds.push_back(cpu["sums"][i].get<double>());
  }
  std::cout << "gradwire calibrate: " << hw << " cores, " << std::max(1, args.concurrent)
            << " process(es) measuring at once, sum " << std::setprecision(3) << 1e-9 / m.machine.gamma
            << " GB/s (f32 bytes)";
  for (size_t i = 0; i < m.machine.sum_sizes.size(); ++i)
    std::cout << (i == 0 ? "; buffers of " : ", ") << uint64_t(m.machine.sum_sizes[i]) / 1024 << " KiB "
              << 1e-9 / m.machine.sum_seconds[i];
  std::cout << (m.machine.sum_sizes.empty() ? "" : " GB/s") << "\n";
  std::cout << std::left << std::setw(10) << "codec" << std::setw(16) << "kind" << std::right << std::setw(10) << "ratio"
            << std::setw(14) << "encode GB/s" << std::setw(14) << "decode GB/s" << std::setw(14) << "adding GB/s" << "\n";
  for (const json& j : cpu["codecs"]) {
    gw::model::CodecCost c{j["name"], *gw::model::kind_from_name(j["kind"]), j["ratio"], j["encode"], j["decode"],
                           j.value("decode_accumulate", 0.0)};
    const double dec = c.kind == gw::model::CodecKind::Sparse ? c.decode / c.ratio : c.decode;
    std::cout << std::left << std::setw(10) << c.name << std::setw(16) << gw::model::kind_name(c.kind) << std::right
              << std::setw(10) << std::setprecision(4) << c.ratio << std::setw(14)
              << (c.encode > 0 ? 1e-9 / c.encode : 0) << std::setw(14) << (dec > 0 ? 1e-9 / dec : 0) << std::setw(14)
              << (c.decode_accumulate > 0 ? 1e-9 / c.decode_accumulate : 0) << "\n";
    m.codecs.push_back(c);
  }
  if (!m.codec("none")) m.codecs.insert(m.codecs.begin(), gw::model::CodecCost{"none", gw::model::CodecKind::Dense, 1, 0, 0});
  std::string how = "this machine";
  if (args.concurrent > 1) how += ", codecs measured in " + std::to_string(args.concurrent) + " processes at once";
  if (!args.no_links) {
    for (const char* tls : {"shm", "tcp"}) {
      try {
        double call = 0;
        gw::model::Link l = measure_link(tls, args.config, &call);
        std::string cpu_note;
        if (std::string(tls) == "shm") {
          // Shared memory moves bytes with the ranks' own copies: a byte costs a core the time it spends
          // on the link. Ranks that share cores then share it (the model stretches it by their number).
          l.cpu = l.beta;
          m.machine.call = call;
          std::ostringstream o;
          o << "; a collective call " << std::setprecision(3) << call * 1e6 << " us beyond its message";
          cpu_note = o.str();
        } else if (std::string(tls) == "tcp") {
          // The kernel's work per byte, from a plain TCP transfer whose ends block (UCX's ranks poll,
          // so their busy time says nothing about the bytes).
          l.cpu = bench::measure_loopback_tcp(256 << 20).cpu_s_per_byte;
          std::ostringstream o;
          o << ", " << std::setprecision(3) << l.cpu * 1e9 << " ns of CPU per byte";
          cpu_note = o.str();
        }
        m.links[tls] = l;
        std::cout << "link " << tls << ": alpha " << std::setprecision(3) << l.alpha * 1e6 << " us, "
                  << (l.beta > 0 ? 1e-6 / l.beta : 0) << " MB/s" << cpu_note << "\n";
        for (size_t i = 0; i < l.sizes.size(); ++i)
          std::cout << "  " << std::setw(9) << uint64_t(l.sizes[i]) << " bytes each way at once: " << std::setprecision(3)
                    << l.seconds[i] * 1e6 << " us; a ring's step with two ranks per core, "
                    << l.crowded_seconds[i] * 1e6 << " us\n";
      } catch (const std::exception& e) {
        std::cout << "link " << tls << ": not measured (" << e.what() << ")\n";
      }
    }
  }
  if (!m.links.count("shm") && m.links.count("tcp")) m.intra = "tcp";
  const auto add_rate = [&](const std::string& rate, const std::string& name) {
    if (rate.empty()) return;
    const double bytes_per_s = gw::model::parse_rate(rate);
    const double alpha = m.links.count("tcp") ? m.links["tcp"].alpha : 50e-6;
    const double link_cpu = m.links.count("tcp") ? m.links["tcp"].cpu : 0;  // this machine's TCP stack drives it
    m.links[name] = gw::model::Link{alpha, 1 / bytes_per_s, link_cpu};
    how += ", " + name + " link " + rate + " (nominal rate)";
    std::cout << "link " << name << ": alpha " << alpha * 1e6 << " us, " << bytes_per_s / 1e6 << " MB/s (" << rate << ")\n";
  };
  add_rate(args.inter_rate, "inter");
  add_rate(args.intra_rate, "intra");
  if (!args.inter_rate.empty()) m.inter = "inter";
  if (!args.intra_rate.empty()) m.intra = "intra";
  if (!m.links.count(m.inter) && m.links.count("shm")) m.inter = "shm";
  const auto now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  m.source = std::string("gradwire calibrate on ") + how + ", " + stamp + ", " + std::to_string(args.bytes) +
             " bytes per codec";
  gw::model::save(m, args.output);
  std::cout << "wrote " << args.output << " (intra link " << m.intra << ", inter link " << m.inter << ")\n";
  return 0;
}

}  // namespace

void add_calibrate_command(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand("calibrate", "Fit the cost model from short measurements on this machine and save it");
  auto args = std::make_shared<CalibrateArgs>();
  cmd->add_option("-o,--output", args->output, "The model file to write (TOML)");
  cmd->add_option("--config", args->config, "TOML file for the runtime (plugin path, codec settings)");
  cmd->add_option("--codecs", args->codecs, "Comma-separated codecs to measure; default every codec plugin");
  cmd->add_option("--bytes", args->bytes, "f32 bytes each codec encodes per repetition")
      ->check(CLI::Range(uint64_t{4096}, uint64_t{1} << 32));
  cmd->add_option("--repetitions", args->repetitions, "Timed repetitions (their median counts)")->check(CLI::Range(1, 100));
  cmd->add_option("--inter-rate", args->inter_rate, "Add a link 'inter' of this rate (e.g. 100mbit) between nodes");
  cmd->add_option("--intra-rate", args->intra_rate, "Add a link 'intra' of this rate inside a node");
  cmd->add_flag("--no-links", args->no_links, "Measure codecs only, not the transports");
  cmd->add_option("--concurrent", args->concurrent,
                  "Measure the codecs in this many processes at once (as many as ranks will share the cores)")
      ->check(CLI::Range(1, 256));
  cmd->callback([&exit_code, args] {
    try {
      exit_code = run(*args);
    } catch (const Failure&) {
      throw;
    } catch (const std::exception& e) {
      std::cerr << "gradwire calibrate: " << e.what() << "\n";
      exit_code = 2;
    }
  });
}

}  // namespace gwcli
