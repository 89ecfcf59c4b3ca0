// P2: top-k selection of 1 % and 0.1 % of 64 Mi floats through gw_codec_encode (the topk codec,
// approximate selection, the whole payload written) against exact std::nth_element on the absolute
// values (the copy of |x| included). Reports the time ratio, the recall against the exact top-k set
// and the selected count, which must lie within [0.9k, 1.1k].
// Then the sparseq codec (1 % kept, 2 and 4 bits) on 100 MB of f32 against the topk codec with the same
// exact selection and fp32 values, both in this run: GB/s = input bytes / (encode + decode time), median
// of the repetitions after one warm-up; extra: each call's own GB/s and the payload sizes.
#include <gradwire/gradwire.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "suites/bench.hpp"
#include "suites/peer_extras.hpp"

namespace gwcli::bench {
namespace {

double seconds_of(const std::function<void()>& fn) {
  const auto t0 = std::chrono::steady_clock::now();
  fn();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

void check(gw_status s, const char* what) {
  if (s != GW_OK) throw std::runtime_error(std::string(what) + ": " + gw_last_error());
}

// One codec's encode and decode on x: its payload buffer, and the times of each repetition.
struct CodecRun {
  gw_codec* codec = nullptr;
  gw_tensor in = GW_TENSOR_INIT, out = GW_TENSOR_INIT;
  std::vector<unsigned char> payload;
  uint64_t size = 0, kept = 0;
  std::vector<double> enc, dec, total;

  CodecRun(gw_runtime* rt, const char* name, const std::vector<float>& x, std::vector<float>& y) {
    check(gw_codec_create(rt, name, &codec), name);
    in.data = const_cast<float*>(x.data());
    in.count = x.size();
    out.data = y.data();
    out.count = y.size();
    uint64_t capacity = 0;
    check(gw_codec_max_encoded_size(codec, GW_DTYPE_F32, x.size(), &capacity), "gw_codec_max_encoded_size");
    payload.resize(capacity);
  }
  ~CodecRun() { gw_codec_destroy(codec); }
  CodecRun(const CodecRun&) = delete;
  CodecRun& operator=(const CodecRun&) = delete;
  void encode() { check(gw_codec_encode(codec, nullptr, &in, payload.data(), payload.size(), &size), "encode"); }
  void decode() { check(gw_codec_decode(codec, nullptr, payload.data(), size, &out, 0), "decode"); }
  void timed() {
    enc.push_back(seconds_of([&] { encode(); }));
    dec.push_back(seconds_of([&] { decode(); }));
    total.push_back(enc.back() + dec.back());
  }
  void count_kept() {
    kept = 0;
    const float* y = static_cast<const float*>(out.data);
    for (uint64_t i = 0; i < out.count; ++i) kept += y[i] != 0.0f;
  }
};

}  // namespace

void run_p2(const Options& options, const Emit& emit) {
  const uint64_t n = options.quick ? (uint64_t{1} << 22) : (uint64_t{64} << 20);
  std::vector<float> x(n);
  std::mt19937 gen(2024);
  std::normal_distribution<float> normal;
  for (auto& v : x) v = normal(gen);
  std::vector<float> magnitudes(n), decoded(n);

  for (double ratio : {0.01, 0.001}) {
    const std::string toml = "[codec]\nname = \"topk\"\n[codec.topk]\nratio = " + std::to_string(ratio) + "\n";
    gw_runtime_options ro = GW_RUNTIME_OPTIONS_INIT;
    ro.config_text = toml.c_str();
    gw_runtime* rt = nullptr;
    check(gw_runtime_create(&ro, &rt), "gw_runtime_create");
    gw_codec* codec = nullptr;
    check(gw_codec_create(rt, "topk", &codec), "gw_codec_create(topk)");

    gw_tensor in = GW_TENSOR_INIT;
    in.data = x.data();
    in.count = n;
    uint64_t capacity = 0, size = 0;
    check(gw_codec_max_encoded_size(codec, GW_DTYPE_F32, n, &capacity), "gw_codec_max_encoded_size");
    std::vector<unsigned char> payload(capacity);
    const auto encode = [&] {
      check(gw_codec_encode(codec, nullptr, &in, payload.data(), capacity, &size), "gw_codec_encode");
    };
    const uint64_t k = std::max<uint64_t>(1, static_cast<uint64_t>(std::llround(ratio * static_cast<double>(n))));
    const auto exact = [&] {
      for (uint64_t i = 0; i < n; ++i) magnitudes[i] = std::fabs(x[i]);
      std::nth_element(magnitudes.begin(), magnitudes.begin() + static_cast<long>(k - 1), magnitudes.end(),
                       std::greater<float>());
    };

    encode();  // warm-up
    exact();
    std::vector<double> ours, peer;
    for (int r = 0; r < std::max(options.repetitions, 5); ++r) {
      ours.push_back(seconds_of(encode));
      peer.push_back(seconds_of(exact));
    }
    const float threshold = magnitudes[k - 1];

    gw_tensor out = GW_TENSOR_INIT;
    out.data = decoded.data();
    out.count = n;
    check(gw_codec_decode(codec, nullptr, payload.data(), size, &out, 0), "gw_codec_decode");
    uint64_t count = 0, hits = 0;
    for (uint64_t i = 0; i < n; ++i) {
      if (decoded[i] == 0.0f) continue;
      ++count;
      hits += std::fabs(x[i]) >= threshold;
    }
    gw_codec_destroy(codec);
    gw_runtime_destroy(rt);

    const Stats o = summarize(ours), p = summarize(peer);
    Result res;
    res.suite = "P2";
    res.case_name = "topk " + std::string(ratio == 0.01 ? "1%" : "0.1%") + " of " +
                    std::to_string(n >> 20) + "Mi f32";
    res.ours = o.median * 1e3;
    res.peer = p.median * 1e3;
    res.unit = "ms";
    res.ratio = p.median / o.median;
    res.peer_name = "std::nth_element on |x|";
    const double recall = static_cast<double>(std::min(hits, k)) / static_cast<double>(k);
    res.extra = {{"k", k},
                 {"count", count},
                 {"count_ok", count >= k - k / 10 && count <= k + k / 10},
                 {"recall", recall},
                 {"payload_bytes", size},
                 {"spread_ours", o.spread},
                 {"spread_peer", p.spread},
                 {"target", "ratio >= 10, recall >= 0.99, count in [0.9k, 1.1k]"}};
    // What a PyTorch user runs: torch.topk on the CPU with every core (exact: recall 1).
    std::string why;
    if (const auto torch = run_torch_topk(n, k, std::max(options.repetitions, 5), &why)) {
      const Stats t = summarize(torch->at("seconds").get<std::vector<double>>());
      res.extra["torch_topk_ms"] = t.median * 1e3;
      res.extra["torch_topk_threads"] = torch->value("threads", 0);
      res.extra["ratio_vs_torch_topk"] = o.median > 0 ? t.median / o.median : 0;
      res.extra["torch_topk_recall"] = 1.0;
    } else {
      res.extra["torch_topk"] = "skipped: " + why;
    }
    emit(res);
  }

  // sparseq against topk: the same exact selection of 1 %, values in 2 or 4 bits against fp32.
  const uint64_t sq_n = options.quick ? (uint64_t{1} << 20) : uint64_t{25000000};  // 100 MB of f32
  x.resize(sq_n);
  decoded.assign(sq_n, 0.0f);
  const int reps = std::max(options.repetitions, 5);
  for (int bits : {2, 4}) {
    const std::string toml = "[codec.sparseq]\nratio = 0.01\nbits = " + std::to_string(bits) +
                             "\n[codec.topk]\nratio = 0.01\nselection = \"exact\"\n";
    gw_runtime_options ro = GW_RUNTIME_OPTIONS_INIT;
    ro.config_text = toml.c_str();
    gw_runtime* rt = nullptr;
    check(gw_runtime_create(&ro, &rt), "gw_runtime_create");
    Result res;
    {
      // The two codecs' repetitions alternate, so that the load of a shared machine falls on both alike.
      CodecRun sq(rt, "sparseq", x, decoded), tk(rt, "topk", x, decoded);
      sq.encode(), sq.decode(), tk.encode(), tk.decode();  // warm-up
      for (int r = 0; r < reps; ++r) sq.timed(), tk.timed();
      sq.decode();
      sq.count_kept();
      const double bytes = 4.0 * double(sq_n);
      const Stats st = summarize(sq.total), tt = summarize(tk.total);
      res.suite = "P2";
      res.case_name = "sparseq 1% " + std::to_string(bits) + "-bit of " +
                      (options.quick ? size_name(uint64_t(bytes)) : std::string("100MB"));
      res.ours = bytes / st.median / 1e9;
      res.peer = bytes / tt.median / 1e9;
      res.unit = "GB/s";
      res.ratio = res.ours / res.peer;
      res.peer_name = "topk codec, exact, fp32 values";
      res.extra = {{"k", std::max<uint64_t>(1, uint64_t(std::llround(0.01 * double(sq_n))))},
                   {"count", sq.kept},
                   {"encode_gbps", bytes / summarize(sq.enc).median / 1e9},
                   {"decode_gbps", bytes / summarize(sq.dec).median / 1e9},
                   {"peer_encode_gbps", bytes / summarize(tk.enc).median / 1e9},
                   {"peer_decode_gbps", bytes / summarize(tk.dec).median / 1e9},
                   {"payload_bytes", sq.size},
                   {"peer_payload_bytes", tk.size},
                   {"spread", st.spread},
                   {"spread_peer", tt.spread},
                   {"ours_is", "input bytes / (encode + decode time)"},
                   {"target", "ratio >= 0.9 (the same selection; quantising m values costs little)"}};
    }
    gw_runtime_destroy(rt);
    emit(res);
  }
}

}  // namespace gwcli::bench
