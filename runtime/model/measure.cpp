#include "model/measure.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <sstream>
#include <string>

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
  const uint64_t count = std::max<uint64_t>(1, total_bytes / 4);
  const uint64_t chunk = std::max<uint64_t>(1, std::min(count, chunk_bytes / 4));
  const uint64_t pieces = (count + chunk - 1) / chunk;
  const std::vector<float> x = sample_gradient(count);
  std::vector<float> out(count);
  const uint64_t capacity = probe.max_payload(chunk);
  std::vector<std::vector<unsigned char>> payload(pieces, std::vector<unsigned char>(capacity));
  std::vector<uint64_t> sizes(pieces);
  // Every piece decoded into `out` (adding onto it with `accumulate`); seconds.
  const auto decode_all = [&](bool accumulate) {
    const auto t0 = Clock::now();
    for (uint64_t p = 0; p < pieces; ++p) {
      const uint64_t off = p * chunk, n = std::min(chunk, count - off);
      probe.decode(off, payload[p].data(), sizes[p], out.data() + off, n, accumulate);
    }
    return since(t0);
  };
  // Dense-payload codecs ("none" too) are also timed decoding onto a written buffer
  // (GW_DECODE_ACCUMULATE), as the summable ring and the scatter-reduce owners sum contributions.
  const bool adding = kind == CodecKind::Summable || kind == CodecKind::Quantized || kind == CodecKind::Dense;
  std::vector<double> encodes, decodes, addings;
  uint64_t payload_bytes = 0;
  for (int r = 0; r <= std::max(1, repetitions); ++r) {
    auto t0 = Clock::now();
    payload_bytes = 0;
    for (uint64_t p = 0; p < pieces; ++p) {
      const uint64_t off = p * chunk, n = std::min(chunk, count - off);
      sizes[p] = probe.encode(off, x.data() + off, n, payload[p].data(), capacity);
      payload_bytes += sizes[p];
    }
    const double encode = since(t0);
    // A sparse allgather decodes n payloads into one buffer: it is written once (the formula's gamma
    // term) and each payload adds its k values, which is what is timed here.
    const double decode = decode_all(kind == CodecKind::Sparse);
    const double added = adding ? decode_all(true) : 0;
    if (r > 0) encodes.push_back(encode), decodes.push_back(decode), addings.push_back(added);
  }
  const double encode = median(encodes), decode = median(decodes), added = median(addings);
  CodecCost c;
  c.name = name;
  c.kind = kind;
  c.ratio = payload_bytes > 0 ? double(4 * count) / double(payload_bytes) : 1;
  c.encode = encode / double(4 * count);
  c.decode = kind == CodecKind::Sparse ? decode / double(std::max<uint64_t>(1, payload_bytes))
                                       : decode / double(4 * count);
  if (adding) c.decode_accumulate = added / double(4 * count);
  return c;
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

double busy_core_seconds() {
  std::ifstream in("/proc/stat");
  std::string line;
  if (!in || !std::getline(in, line) || line.rfind("cpu ", 0) != 0) return -1;
  std::istringstream fields(line.substr(4));
  // user nice system idle iowait irq softirq steal ...
  unsigned long long v[8] = {};
  for (auto& x : v)
    if (!(fields >> x)) return -1;
  const long hz = sysconf(_SC_CLK_TCK);
  return double(v[0] + v[1] + v[2] + v[5] + v[6]) / double(hz > 0 ? hz : 100);
}

}  // namespace gw::model
