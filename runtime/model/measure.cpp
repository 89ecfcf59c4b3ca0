#include "model/measure.hpp"

#include <algorithm>
#include <barrier>
#include <chrono>
#include <cmath>
#include <exception>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>

#include <sched.h>
#include <time.h>
#include <unistd.h>

namespace gw::model {
namespace {

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// The middle of the samples (the mean of the middle two of an even count).
double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t h = v.size() / 2;
  return v.size() % 2 ? v[h] : (v[h - 1] + v[h]) / 2;
}

}  // namespace

CodecKind kind_of(const std::string& name, bool sparse, bool summable, bool shared_indices) {
  if (name == "none") return CodecKind::Dense;
  if (shared_indices) return CodecKind::SharedIndices;
  if (sparse) return CodecKind::Sparse;
  if (summable) return CodecKind::Summable;
  return CodecKind::Quantized;
}

std::vector<float> sample_gradient(uint64_t count, uint64_t seed) {
  std::vector<float> x(count);
  uint64_t s = seed * 0x9E3779B97F4A7C15ull + 1;
  auto uniform = [&] {
    s ^= s << 13, s ^= s >> 7, s ^= s << 17;
    return double(s >> 11) * 0x1.0p-53;
  };
  for (uint64_t i = 0; i < count; ++i) {
    // Sum of uniforms (about normal), scaled by a slowly varying magnitude like a layer's gradient.
    const double v = uniform() + uniform() + uniform() - 1.5;
    x[i] = float(v * 1e-3 * (1 + 0.5 * std::sin(double(i) * 1e-4)));
  }
  return x;
}

CodecCost measure_codec(const std::string& name, CodecKind kind, const CodecProbe& probe, uint64_t total_bytes,
                        uint64_t chunk_bytes, int repetitions) {
  return measure_codec(name, kind, std::vector<CodecProbe>{probe}, total_bytes, chunk_bytes, repetitions);
}

CodecCost measure_codec(const std::string& name, CodecKind kind, const std::vector<CodecProbe>& probes,
                        uint64_t total_bytes, uint64_t chunk_bytes, int repetitions) {
  if (probes.empty()) throw std::invalid_argument("measure_codec: no codec to measure");
  const uint64_t count = std::max<uint64_t>(1, total_bytes / 4);
  const uint64_t chunk = std::max<uint64_t>(1, std::min(count, chunk_bytes / 4));
  const uint64_t pieces = (count + chunk - 1) / chunk;
  // Dense-payload codecs ("none" too) are also timed decoding onto a written buffer
  // (GW_DECODE_ACCUMULATE), as the summable ring and the scatter-reduce owners sum contributions.
  const bool adding = kind == CodecKind::Summable || kind == CodecKind::Quantized || kind == CodecKind::Dense;
  const size_t threads = probes.size();
  std::barrier<> together{std::ptrdiff_t(threads)};
  std::vector<std::vector<double>> encodes(threads), decodes(threads), addings(threads);
  std::vector<uint64_t> payload_bytes(threads, 0);
  std::vector<std::exception_ptr> failed(threads);
  const auto measure = [&](size_t t) {
    const CodecProbe& probe = probes[t];
    std::vector<float> x, out;
    std::vector<std::vector<unsigned char>> payload;
    std::vector<uint64_t> sizes(pieces);
    uint64_t capacity = 0;
    try {
      x = sample_gradient(count, 1 + t);
      out.assign(count, 0.0f);
      capacity = probe.max_payload(chunk);
      payload.assign(pieces, std::vector<unsigned char>(capacity));
    } catch (...) {
      failed[t] = std::current_exception();
    }
    // fn(piece, offset, count) for every piece of the buffer; seconds.
    const auto timed_pieces = [&](const auto& fn) {
      const auto t0 = Clock::now();
      for (uint64_t p = 0; p < pieces; ++p) {
        const uint64_t off = p * chunk;
        fn(p, off, std::min(chunk, count - off));
      }
      return since(t0);
    };
    // Every piece decoded into `out` (adding onto it with `accumulate`); seconds.
    const auto decode_all = [&](bool accumulate) {
      return timed_pieces([&](uint64_t p, uint64_t off, uint64_t n) {
        probe.decode(off, payload[p].data(), sizes[p], out.data() + off, n, accumulate);
      });
    };
    // Runs a phase unless this thread already failed, keeping its error; its seconds (0 when skipped).
    const auto phase = [&](const auto& body) {
      if (failed[t]) return 0.0;
      try {
        return body();
      } catch (...) {
        failed[t] = std::current_exception();
        return 0.0;
      }
    };
    // A thread that failed still meets the others at every phase, so that none waits forever.
    for (int r = 0; r <= std::max(1, repetitions); ++r) {
      together.arrive_and_wait();
      const double encode = phase([&] {
        payload_bytes[t] = 0;
        return timed_pieces([&](uint64_t p, uint64_t off, uint64_t n) {
          sizes[p] = probe.encode(off, x.data() + off, n, payload[p].data(), capacity);
          payload_bytes[t] += sizes[p];
        });
      });
      together.arrive_and_wait();
      // A sparse allgather decodes n payloads into one buffer: it is written once (the formula's gamma
      // term) and each payload adds its k values, which is what is timed here.
      const double decode = phase([&] { return decode_all(kind == CodecKind::Sparse); });
      together.arrive_and_wait();
      const double added = adding ? phase([&] { return decode_all(true); }) : 0.0;
      if (r > 0) encodes[t].push_back(encode), decodes[t].push_back(decode), addings[t].push_back(added);
    }
  };
  std::vector<std::thread> others;
  for (size_t t = 1; t < threads; ++t) others.emplace_back(measure, t);
  measure(0);
  for (std::thread& t : others) t.join();
  for (const std::exception_ptr& e : failed)
    if (e) std::rethrow_exception(e);
  const auto all = [](const std::vector<std::vector<double>>& per_thread) {
    std::vector<double> v;
    for (const auto& samples : per_thread) v.insert(v.end(), samples.begin(), samples.end());
    return median(v);
  };
  const double encode = all(encodes), decode = all(decodes), added = all(addings);
  CodecCost c;
  c.name = name;
  c.kind = kind;
  c.ratio = payload_bytes[0] > 0 ? double(4 * count) / double(payload_bytes[0]) : 1;
  c.encode = encode / double(4 * count);
  c.decode = kind == CodecKind::Sparse ? decode / double(std::max<uint64_t>(1, payload_bytes[0]))
                                       : decode / double(4 * count);
  if (adding) c.decode_accumulate = added / double(4 * count);
  return c;
}

std::vector<double> measure_sparse_combine(const CodecProbe& probe, const std::vector<double>& ranks,
                                           uint64_t total_bytes, uint64_t chunk_bytes, int repetitions) {
  if (ranks.empty()) return {};
  const uint64_t count = std::max<uint64_t>(1, total_bytes / 4);
  const uint64_t chunk = std::max<uint64_t>(1, std::min(count, chunk_bytes / 4));
  const uint64_t pieces = (count + chunk - 1) / chunk;
  const uint64_t most = uint64_t(*std::max_element(ranks.begin(), ranks.end()));
  const uint64_t capacity = probe.max_payload(chunk);
  // payload[q][p]: rank q's payload of piece p.
  std::vector<std::vector<std::vector<unsigned char>>> payload(most);
  std::vector<std::vector<uint64_t>> sizes(most, std::vector<uint64_t>(pieces));
  for (uint64_t q = 0; q < most; ++q) {
    const std::vector<float> x = sample_gradient(count, 1 + q);
    payload[q].resize(pieces);
    for (uint64_t p = 0; p < pieces; ++p) {
      const uint64_t off = p * chunk;
      payload[q][p].resize(capacity);
      sizes[q][p] = probe.encode(off, x.data() + off, std::min(chunk, count - off), payload[q][p].data(), capacity);
      payload[q][p].resize(sizes[q][p]);
    }
  }
  std::vector<float> out(count);
  std::vector<double> result;
  for (double nr : ranks) {
    const uint64_t n = std::max<uint64_t>(1, uint64_t(nr));
    std::vector<double> samples;
    for (int r = 0; r <= std::max(1, repetitions); ++r) {
      const auto t0 = Clock::now();
      for (uint64_t p = 0; p < pieces; ++p) {
        const uint64_t off = p * chunk;
        for (uint64_t q = 0; q < n; ++q)
          probe.decode(off, payload[q][p].data(), sizes[q][p], out.data() + off, std::min(chunk, count - off), q != 0);
      }
      if (r > 0) samples.push_back(since(t0));
    }
    result.push_back(median(samples) / double(4 * count));
  }
  return result;
}

double measure_gamma(uint64_t bytes, int repetitions) {
  const uint64_t n = std::max<uint64_t>(1024, bytes / 4);
  std::vector<float> a(n, 1.0f), b(n, 0.5f);
  std::vector<double> times;
  for (int r = 0; r <= std::max(1, repetitions); ++r) {
    const auto t0 = Clock::now();
    float* __restrict pa = a.data();
    const float* __restrict pb = b.data();
    for (uint64_t i = 0; i < n; ++i) pa[i] += pb[i];
    const double t = since(t0);
    if (r > 0) times.push_back(t);
  }
  volatile float sink = a[n / 2];
  (void)sink;
  return median(times) / double(4 * n);
}

namespace {

double monotonic_s() {
  timespec t{};
  clock_gettime(CLOCK_MONOTONIC, &t);
  return double(t.tv_sec) + 1e-9 * double(t.tv_nsec);
}

// The online CPUs (cpu0 has no "online" file where it cannot go offline).
std::vector<int> online_cpus() {
  std::vector<int> cpus;
  for (int c = 0; c < CPU_SETSIZE; ++c) {
    const std::string dir = "/sys/devices/system/cpu/cpu" + std::to_string(c);
    if (access(dir.c_str(), F_OK) != 0) break;
    int online = 1;
    std::ifstream(dir + "/online") >> online;
    if (online) cpus.push_back(c);
  }
  return cpus;
}

// Seconds CPU `cpu` has spent in its idle states (cpuidle's residencies); -1 without cpuidle.
double idle_residency_s(int cpu) {
  const std::string dir = "/sys/devices/system/cpu/cpu" + std::to_string(cpu) + "/cpuidle/state";
  double us = 0;
  int states = 0;
  for (int st = 0;; ++st) {
    std::ifstream in(dir + std::to_string(st) + "/time");
    double v = 0;
    if (!(in >> v)) break;
    us += v;
    ++states;
  }
  return states > 0 ? 1e-6 * us : -1;
}

// From /proc/stat: the CPUs' time less idle and iowait (which count an idle period in progress).
double busy_from_proc_stat() {
  std::ifstream in("/proc/stat");
  std::string line;
  if (!in || !std::getline(in, line) || line.rfind("cpu ", 0) != 0) return -1;
  std::istringstream fields(line.substr(4));
  // user nice system idle iowait irq softirq steal ...
  unsigned long long v[8] = {};
  for (auto& x : v)
    if (!(fields >> x)) return -1;
  const long hz = sysconf(_SC_CLK_TCK);
  const long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  return double(cpus > 0 ? cpus : 1) * monotonic_s() - double(v[3] + v[4]) / double(hz > 0 ? hz : 100);
}

}  // namespace

double busy_core_seconds() {
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  const bool can_move = sched_getaffinity(0, sizeof allowed, &allowed) == 0;
  const std::vector<int> cpus = online_cpus();
  double busy = 0;
  bool residencies = !cpus.empty();
  for (const int c : cpus) {
    if (can_move && CPU_ISSET(c, &allowed)) {  // run on it: an idle period in progress there ends
      cpu_set_t one;
      CPU_ZERO(&one);
      CPU_SET(c, &one);
      sched_setaffinity(0, sizeof one, &one);
    }
    const double idle = idle_residency_s(c);
    if (idle < 0) {
      residencies = false;
      break;
    }
    busy += monotonic_s() - idle;
  }
  if (can_move) sched_setaffinity(0, sizeof allowed, &allowed);
  return residencies ? busy : busy_from_proc_stat();
}

}  // namespace gw::model
