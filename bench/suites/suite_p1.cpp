// P1: encode + decode of each dense codec (fp16, bf16, int8, onebit) on 256 MiB of f32, one core,
// through gw_codec_encode / gw_codec_decode, against a read-only sum and memcpy of the same buffer.
//
// Figures (GB/s = 1e9 bytes per second, median of the repetitions after one warm-up):
//   ours  = bytes the two calls move (encode: input read + payload written; decode: payload read +
//           output written) / (encode time + decode time) — the memory traffic rate of the codec;
//   peer  = input bytes / time of a read-only vector sum of the input (read bandwidth of one core);
//   ratio = ours / peer (target >= 0.85).
// extra: input_gbps (input bytes / (encode + decode time)) and its ratio to the read-only sum, and
// memcpy_gbps (2 x bytes / memcpy time) with ratio_vs_memcpy = ours / memcpy_gbps.
#include <gradwire/gradwire.h>

#include <chrono>
#include <cstring>
#include <functional>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "suites/bench.hpp"

namespace gwcli::bench {
namespace {

double time_of(const std::function<void()>& fn) {
  const auto t0 = std::chrono::steady_clock::now();
  fn();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

void check_p1(gw_status s, const char* what) {
  if (s != GW_OK) throw std::runtime_error(std::string(what) + ": " + gw_last_error());
}

// Read-only pass: a sum in 4 independent 8-float vector accumulators (GCC/Clang vector extension), so
// the loop is bound by reading memory, not by the latency of one floating-point add chain.
typedef float V8 __attribute__((vector_size(32)));
float read_only_sum(const float* x, size_t n) {
  V8 a = {}, b = {}, c = {}, d = {};
  size_t i = 0;
  for (; i + 32 <= n; i += 32) {
    V8 va, vb, vc, vd;
    std::memcpy(&va, x + i, sizeof va);
    std::memcpy(&vb, x + i + 8, sizeof vb);
    std::memcpy(&vc, x + i + 16, sizeof vc);
    std::memcpy(&vd, x + i + 24, sizeof vd);
    a += va;
    b += vb;
    c += vc;
    d += vd;
  }
  const V8 s = (a + b) + (c + d);
  float total = 0;
  for (int k = 0; k < 8; ++k) total += s[k];
  for (; i < n; ++i) total += x[i];
  return total;
}

}  // namespace

void run_p1(const Options& options, const Emit& emit) {
  const uint64_t bytes = options.quick ? (uint64_t{16} << 20) : (uint64_t{256} << 20);
  const uint64_t n = bytes / sizeof(float);
  std::vector<float> x(n), y(n), copy(n);
  std::mt19937 gen(7);
  std::normal_distribution<float> normal(0.0f, 1e-3f);
  for (auto& v : x) v = normal(gen);
  const int reps = std::max(options.repetitions, 5);

  volatile float sink = 0;
  sink = read_only_sum(x.data(), n);
  std::memcpy(copy.data(), x.data(), bytes);
  std::vector<double> sum_t, copy_t;
  for (int r = 0; r < reps; ++r) {
    sum_t.push_back(time_of([&] { sink = read_only_sum(x.data(), n); }));
    copy_t.push_back(time_of([&] { std::memcpy(copy.data(), x.data(), bytes); }));
  }
  (void)sink;
  const Stats sum_s = summarize(sum_t), copy_s = summarize(copy_t);
  const double read_gbps = double(bytes) / sum_s.median / 1e9;
  const double memcpy_gbps = 2.0 * double(bytes) / copy_s.median / 1e9;

  gw_runtime_options ro = GW_RUNTIME_OPTIONS_INIT;
  ro.config_path = options.config.empty() ? nullptr : options.config.c_str();
  gw_runtime* rt = nullptr;
  check_p1(gw_runtime_create(&ro, &rt), "gw_runtime_create");
  for (const char* name : {"fp16", "bf16", "int8", "onebit"}) {
    gw_codec* codec = nullptr;
    check_p1(gw_codec_create(rt, name, &codec), name);
    gw_tensor in = GW_TENSOR_INIT;
    in.data = x.data();
    in.count = n;
    gw_tensor out = GW_TENSOR_INIT;
    out.data = y.data();
    out.count = n;
    uint64_t capacity = 0, size = 0;
    check_p1(gw_codec_max_encoded_size(codec, GW_DTYPE_F32, n, &capacity), "gw_codec_max_encoded_size");
    std::vector<unsigned char> payload(capacity);
    const auto encode = [&] { check_p1(gw_codec_encode(codec, nullptr, &in, payload.data(), capacity, &size), "encode"); };
    const auto decode = [&] { check_p1(gw_codec_decode(codec, nullptr, payload.data(), size, &out, 0), "decode"); };
    encode();
    decode();
    std::vector<double> total;
    std::vector<double> enc_t, dec_t;
    for (int r = 0; r < reps; ++r) {
      const double te = time_of(encode), td = time_of(decode);
      enc_t.push_back(te);
      dec_t.push_back(td);
      total.push_back(te + td);
    }
    const Stats s = summarize(total);
    const double traffic = 2.0 * double(bytes) + 2.0 * double(size);
    Result res;
    res.suite = "P1";
    res.case_name = std::string(name) + " " + std::to_string(bytes >> 20) + "MiB";
    res.ours = traffic / s.median / 1e9;
    res.peer = read_gbps;
    res.unit = "GB/s";
    res.ratio = res.ours / res.peer;
    res.peer_name = "read-only sum";
    const double input_gbps = double(bytes) / s.median / 1e9;
    res.extra = {{"spread", s.spread},
                 {"peer_spread", sum_s.spread},
                 {"encode_ms", summarize(enc_t).median * 1e3},
                 {"decode_ms", summarize(dec_t).median * 1e3},
                 {"payload_bytes", size},
                 {"input_gbps", input_gbps},
                 {"input_ratio", input_gbps / read_gbps},
                 {"memcpy_gbps", memcpy_gbps},
                 {"ratio_vs_memcpy", res.ours / memcpy_gbps},
                 {"target", 0.85},
                 {"ours_is", "bytes read + written by encode and decode / their time"}};
    emit(res);
    gw_codec_destroy(codec);
  }
  gw_runtime_destroy(rt);
}

}  // namespace gwcli::bench
