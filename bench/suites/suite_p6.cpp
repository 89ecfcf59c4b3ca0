// P6: chunked, overlapped encode -> send -> decode against the same steps one after another, 2 ranks
// over the UCX transport's shared memory (two forked ranks, bench_ranks).
//
// Rank 0 holds a large f32 buffer; rank 1 ends with its decoded copy, then acknowledges.
//   peer (serialized): rank 0 encodes the whole buffer, sends the payload; rank 1 receives it and decodes;
//   ours (overlapped): the buffer in pieces of 1 MiB; rank 0 encodes piece i and sends it without waiting
//     while rank 1, whose receives are all posted, decodes piece i - 1 — the compressed allreduce's
//     pipelining (docs/collectives.md) in its simplest form.
// Times are rank 0's, from a barrier to the acknowledgement; median of the repetitions after a warm-up.
// ratio = serialized / overlapped (target >= 1.6: with encoding and decoding on two cores, the
// overlapped time approaches the larger stage). extra: compression_ratio = f32 bytes / payload bytes;
// the serialized run's stages (encode_ms on rank 0, transfer_ms, decode_ms on rank 1) and
// ours_over_largest_stage, how close the overlapped run comes to its largest stage (1 = ideal);
// cpu_parallelism, the cores two processes got when the suite started (on a machine whose cores are
// busy with other work the ranks take turns and no overlap can show).
#include <gradwire/gradwire.h>

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "suites/bench.hpp"
#include "suites/bench_ranks.hpp"

namespace gwcli::bench {
namespace {

using Clock = std::chrono::steady_clock;
using json = nlohmann::json;

// Both ranks share this machine: shared memory unless the user's configuration says otherwise (UCX's own
// choice here moved large messages at under 1 GB/s, hiding the codec stages behind the copy).
constexpr const char* kSharedMemory = "[transport.ucx]\ntls = \"sm,self\"\n";

void check_p6(gw_status s, const std::string& what) { check_bench(s, "P6: " + what); }

gw_tensor f32_tensor(float* data, uint64_t count) {
  gw_tensor t = GW_TENSOR_INIT;
  t.data = data;
  t.count = count;
  return t;
}

class Rank {
 public:
  Rank(gw_runtime* rt, gw_comm* comm) : rank_(int(gw_comm_rank(comm))), rt_(rt), comm_(comm) {}

  // One codec's figures, on rank 0 (rank 1's are empty): per repetition the serialized and the overlapped
  // time and the serialized run's stages (rank 0's encode, rank 1's wait and decode); the compression.
  json run(const std::string& codec_name, uint64_t count, uint64_t piece, int repetitions) {
    gw_codec* codec = nullptr;
    check_p6(gw_codec_create(rt_, codec_name.c_str(), &codec), "gw_codec_create " + codec_name);
    std::vector<float> x(count);
    if (rank_ == 0) {
      std::mt19937 gen(42);
      std::normal_distribution<float> d(0.0f, 1.0f);
      for (float& v : x) v = d(gen);
    }
    const uint64_t pieces = (count + piece - 1) / piece;
    uint64_t whole_size = 0, piece_size = 0;
    check_p6(gw_codec_max_encoded_size(codec, GW_DTYPE_F32, count, &whole_size), "max_encoded_size");
    check_p6(gw_codec_max_encoded_size(codec, GW_DTYPE_F32, piece, &piece_size), "max_encoded_size");
    std::vector<unsigned char> whole(whole_size), parts(pieces * piece_size);
    std::vector<uint64_t> part_size(pieces);
    for (uint64_t i = 0; i < pieces; ++i) {
      const uint64_t n = std::min(piece, count - i * piece);
      check_p6(gw_codec_max_encoded_size(codec, GW_DTYPE_F32, n, &part_size[i]), "max_encoded_size");
    }
    std::vector<double> serialized, overlapped, stage_samples[3];
    for (int rep = 0; rep <= repetitions; ++rep) {  // repetition 0 is the warm-up
      const double s = timed([&] { serialized_once(codec, x, whole); });
      if (rep > 0 && rank_ == 0)
        for (int k = 0; k < 3; ++k) stage_samples[k].push_back(stages_[k]);
      const double p = timed([&] { overlapped_once(codec, x, parts, piece_size, part_size, piece); });
      if (rep > 0 && rank_ == 0) {
        serialized.push_back(s);
        overlapped.push_back(p);
      }
    }
    gw_codec_destroy(codec);
    return {{"serialized", serialized},
            {"overlapped", overlapped},
            {"stages", {stage_samples[0], stage_samples[1], stage_samples[2]}},
            {"compression", double(4 * count) / double(whole_size)}};
  }

 private:
  // Runs body between a barrier and rank 1's acknowledgement, which carries rank 1's stage times.
  template <class F>
  double timed(F&& body) {
    check_p6(gw_barrier(comm_), "barrier");
    const auto t0 = Clock::now();
    body();
    gw_tensor t = bytes_tensor(stages_ + 1, 2 * sizeof(double));
    check_p6(rank_ == 1 ? gw_send(comm_, &t, 0, 99) : gw_recv(comm_, &t, 1, 99), "acknowledgement");
    return std::chrono::duration<double>(Clock::now() - t0).count();
  }

  // The serialized run's stages: rank 0 encodes, the payload travels, rank 1 decodes.
  void serialized_once(gw_codec* codec, std::vector<float>& x, std::vector<unsigned char>& payload) {
    gw_tensor tx = f32_tensor(x.data(), x.size());
    gw_tensor tp = bytes_tensor(payload.data(), payload.size());
    const auto t0 = Clock::now();
    if (rank_ == 0) {
      uint64_t size = 0;
      check_p6(gw_codec_encode(codec, nullptr, &tx, payload.data(), payload.size(), &size), "encode");
      stages_[0] = seconds_since(t0);
      if (size != payload.size()) throw std::runtime_error("P6 needs a codec whose payload size is fixed");
      check_p6(gw_send(comm_, &tp, 1, 1), "send");
    } else {
      check_p6(gw_recv(comm_, &tp, 0, 1), "recv");
      const auto t1 = Clock::now();
      check_p6(gw_codec_decode(codec, nullptr, payload.data(), payload.size(), &tx, 0), "decode");
      stages_[1] = std::chrono::duration<double>(t1 - t0).count();  // waiting for encode and transfer
      stages_[2] = seconds_since(t1);
    }
  }

  static double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

  void overlapped_once(gw_codec* codec, std::vector<float>& x, std::vector<unsigned char>& parts, uint64_t stride,
                       const std::vector<uint64_t>& size, uint64_t piece) {
    const uint64_t pieces = size.size();
    std::vector<gw_request*> requests(pieces, nullptr);
    std::vector<gw_tensor> views(pieces);
    for (uint64_t i = 0; i < pieces; ++i) views[i] = bytes_tensor(parts.data() + i * stride, size[i]);
    if (rank_ == 1)
      for (uint64_t i = 0; i < pieces; ++i)
        check_p6(gw_recv_start(comm_, &views[i], 0, uint32_t(2 + i), &requests[i]), "recv_start");
    for (uint64_t i = 0; i < pieces; ++i) {
      gw_tensor tx = f32_tensor(x.data() + i * piece, std::min(piece, x.size() - i * piece));
      if (rank_ == 0) {
        uint64_t written = 0;
        check_p6(gw_codec_encode(codec, nullptr, &tx, views[i].data, size[i], &written), "encode");
        check_p6(gw_send_start(comm_, &views[i], 1, uint32_t(2 + i), &requests[i]), "send_start");
        if (i > 0) gw_request_test(requests[i - 1]);  // drive the transport between pieces
      } else {
        check_p6(gw_request_wait(requests[i], -1), "recv");
        check_p6(gw_codec_decode(codec, nullptr, views[i].data, size[i], &tx, 0), "decode");
      }
    }
    for (gw_request* r : requests) {
      check_p6(gw_request_wait(r, -1), "request");
      gw_request_free(r);
    }
  }

  int rank_;
  double stages_[3] = {0, 0, 0};  // encode (rank 0); wait and decode (rank 1, sent with the acknowledgement)
  gw_runtime* rt_;
  gw_comm* comm_;
};

// How many cores two processes get right now: the time of one busy loop over the time the same loop
// takes in two processes at once, doubled (2: two free cores; 1: they share one). The overlap P6
// measures needs the two ranks to compute at the same time, so the figure is reported beside it.
double cpu_parallelism() {
  const auto spin = [] {
    volatile double x = 0;
    for (long i = 0; i < 20000000; ++i) x = x + double(i) * 1e-9;
  };
  const auto t0 = Clock::now();
  spin();
  const double one = std::chrono::duration<double>(Clock::now() - t0).count();
  std::fflush(nullptr);
  const auto t1 = Clock::now();
  const pid_t child = fork();
  spin();
  if (child == 0) _exit(0);
  if (child > 0) waitpid(child, nullptr, 0);
  const double two = std::chrono::duration<double>(Clock::now() - t1).count();
  return two > 0 ? 2.0 * one / two : 0.0;
}

}  // namespace

void run_p6_runtime(const Options& options, const Emit& emit);  // suite_p6_runtime.cpp

void run_p6(const Options& options, const Emit& emit) {
  const double parallelism = cpu_parallelism();
  const uint64_t count = options.quick ? (uint64_t{1} << 20) : (uint64_t{32} << 20);  // 4 MiB or 128 MiB f32
  const uint64_t piece = options.quick ? (uint64_t{1} << 16) : (uint64_t{1} << 18);
  const std::vector<std::string> codecs = {"int8", "fp16", "onebit"};
  const RankSetup setup{options.config, options.config.empty() ? kSharedMemory : "", 120};
  const json ours = run_forked_ranks(2, {}, setup, [&](gw_runtime* rt, gw_comm* comm) {
    Rank r(rt, comm);
    json figures = json::object();
    for (const auto& codec : codecs) figures[codec] = r.run(codec, count, piece, options.repetitions);
    return figures;
  });
  for (const auto& codec : codecs) {
    const json& figures = ours.at(codec);
    const double compression = figures.at("compression").get<double>();
    const auto samples = [](const json& j) { return j.get<std::vector<double>>(); };
    const json& stages = figures.at("stages");
    const Stats s = summarize(samples(figures.at("serialized"))), o = summarize(samples(figures.at("overlapped")));
    const double encode = summarize(samples(stages.at(0))).median, decode = summarize(samples(stages.at(2))).median;
    const double transfer = std::max(0.0, summarize(samples(stages.at(1))).median - encode);
    Result res;
    res.suite = "P6";
    char ratio_text[32];
    std::snprintf(ratio_text, sizeof ratio_text, "%.2f", compression);
    res.case_name = codec + " " + std::to_string(count * 4 >> 20) + "MiB 2 ranks, " +
                    std::to_string(piece * 4 >> 10) + "KiB pieces, compression " + ratio_text + "x";
    res.ours = o.median * 1e3;
    res.peer = s.median * 1e3;
    res.unit = "ms";
    res.ratio = o.median > 0 ? s.median / o.median : 0;
    res.peer_name = "serialized encode, send, decode";
    res.extra = {{"target", ">= 1.6"}, {"compression_ratio", compression}, {"spread_ours", o.spread},
                 {"spread_peer", s.spread}, {"encode_ms", encode * 1e3}, {"transfer_ms", transfer * 1e3},
                 {"decode_ms", decode * 1e3},
                 {"ours_over_largest_stage", o.median / std::max({encode, transfer, decode, 1e-12})},
                 {"cpu_parallelism", parallelism}};
    emit(res);
  }
  run_p6_runtime(options, emit);  // the runtime's own allreduce against the sum of its stages
}

}  // namespace gwcli::bench
