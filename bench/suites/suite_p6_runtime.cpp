// P6, runtime level: the runtime's own compressed allreduce (gw_allreduce_compressed, average) on 2 ranks
// over shared memory, against the sum of its stages measured in the same run — what the same work costs
// one stage after another:
//   codec:    encoding and decoding the volumes the runtime's algorithm for the codec encodes and decodes
//             on each rank (scatter-reduce-allgather for int8 / onebit, the summable ring for fp16;
//             docs/cost-model.md gives the volumes), at the rates the codec reaches on the same data in
//             1 MiB pieces with both ranks encoding at once;
//   transfer: the bytes each rank sends, exchanged by both ranks at once with gw_send / gw_recv;
//   reduce:   the elementwise sums of the owner, at the rate both ranks reach at once.
// ratio = sum of stages / runtime (> 1: the runtime's pipelining hides stages behind each other).
// Times: the slowest rank's, median of the repetitions after a warm-up.
#include <gradwire/gradwire.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "suites/bench.hpp"
#include "suites/bench_ranks.hpp"
#include "model/measure.hpp"
#include "model/model.hpp"

namespace gwcli::bench {
namespace {

using Clock = std::chrono::steady_clock;
using json = nlohmann::json;
namespace gm = gw::model;

double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

gm::CodecCost measure(gw_codec* codec, const std::string& name, uint64_t bytes) {
  gw_codec_properties props = GW_CODEC_PROPERTIES_INIT;
  check_bench(gw_codec_get_properties(codec, &props), "P6: properties");
  const auto kind = gm::kind_of(name, props.flags & GW_CODEC_SPARSE, props.flags & GW_CODEC_SUMMABLE,
                                props.flags & GW_CODEC_SHARED_INDICES);
  gm::CodecProbe p;
  p.max_payload = [&](uint64_t count) {
    uint64_t size = 0;
    check_bench(gw_codec_max_encoded_size(codec, GW_DTYPE_F32, count, &size), "P6: max size");
    return size;
  };
  p.encode = [&](uint64_t, const float* x, uint64_t count, void* payload, uint64_t capacity) {
    gw_tensor t = GW_TENSOR_INIT;
    t.data = const_cast<float*>(x);
    t.count = count;
    uint64_t size = 0;
    check_bench(gw_codec_encode(codec, nullptr, &t, payload, capacity, &size), "P6: encode");
    return size;
  };
  p.decode = [&](uint64_t, const void* payload, uint64_t size, float* out, uint64_t count, bool acc) {
    gw_tensor t = GW_TENSOR_INIT;
    t.data = out;
    t.count = count;
    check_bench(gw_codec_decode(codec, nullptr, payload, size, &t, acc ? GW_DECODE_ACCUMULATE : 0), "P6: decode");
  };
  return gm::measure_codec(name, kind, p, bytes, 1 << 20, 1);
}

// Both ranks send `bytes` to each other at once; the slowest rank's seconds.
double exchange(gw_comm* comm, std::vector<char>& out, std::vector<char>& in, uint64_t bytes) {
  const uint32_t other = 1 - gw_comm_rank(comm);
  gw_tensor s = bytes_tensor(out.data(), bytes), r = bytes_tensor(in.data(), bytes);
  check_bench(gw_barrier(comm), "P6: barrier");
  const auto t0 = Clock::now();
  gw_request* req = nullptr;
  check_bench(gw_recv_start(comm, &r, other, 11, &req), "P6: recv");
  check_bench(gw_send(comm, &s, other, 11), "P6: send");
  check_bench(gw_request_wait(req, -1), "P6: wait");
  gw_request_free(req);
  return slowest_rank(comm, since(t0));
}

}  // namespace

void run_p6_runtime(const Options& options, const Emit& emit) {
  const uint64_t count = options.quick ? (uint64_t{1} << 20) : (uint64_t{32} << 20);
  const std::vector<std::string> codecs = {"int8", "fp16", "onebit"};
  const RankSetup setup{options.config, options.config.empty() ? "[transport.ucx]\ntls = \"sm,self\"\n" : "", 120};
  const json all = run_forked_ranks(2, {}, setup, [&](gw_runtime* rt, gw_comm* comm) {
    const uint32_t rank = gw_comm_rank(comm);
    std::vector<float> x(count), y(count);
    std::mt19937 gen(42 + rank);
    std::normal_distribution<float> d(0.0f, 1.0f);
    for (float& v : x) v = d(gen);
    json figures = json::object();
    for (const auto& name : codecs) {
      gw_codec* codec = nullptr;
      check_bench(gw_codec_create(rt, name.c_str(), &codec), "P6: gw_codec_create " + name);
      std::vector<double> runtime;
      for (int rep = 0; rep <= options.repetitions; ++rep) {
        gw_tensor in = GW_TENSOR_INIT, out = GW_TENSOR_INIT;
        in.data = x.data(), out.data = y.data();
        in.count = out.count = count;
        gw_codec_context ctx = GW_CODEC_CONTEXT_INIT;
        ctx.step = uint64_t(rep);
        check_bench(gw_barrier(comm), "P6: barrier");
        const auto t0 = Clock::now();
        check_bench(gw_allreduce_compressed(comm, codec, &ctx, &in, &out, GW_REDUCE_AVG), "P6: allreduce " + name);
        const double s = slowest_rank(comm, since(t0));
        if (rep > 0) runtime.push_back(s);
      }
      // The stages, each timed on its own with both ranks doing it at once.
      check_bench(gw_barrier(comm), "P6: barrier");
      gm::CodecCost c = measure(codec, name, 4 * count);
      c.encode = slowest_rank(comm, c.encode), c.decode = slowest_rank(comm, c.decode);
      check_bench(gw_barrier(comm), "P6: barrier");
      const double gamma = slowest_rank(comm, gm::measure_gamma(2 * count, 1));
      gm::Topology t;
      t.nodes = 2, t.per_node = 1, t.cores = 1, t.gamma = gamma;
      t.intra = t.inter = gm::Link{0, 0};
      const gm::Cost volumes = gm::exchange(c, 4.0 * double(count), t);  // wire 0: codec and reduce only
      const uint64_t sent = uint64_t(volumes.bytes_sent);
      std::vector<char> sbuf(std::max<uint64_t>(1, sent)), rbuf(std::max<uint64_t>(1, sent));
      std::vector<double> transfers;
      for (int rep = 0; rep <= std::min(options.repetitions, 3); ++rep) {
        const double s = exchange(comm, sbuf, rbuf, sent);
        if (rep > 0) transfers.push_back(s);
      }
      gw_codec_destroy(codec);
      figures[name] = {{"runtime", runtime},
                       {"codec_s", volumes.encode},
                       {"reduce_s", volumes.cpu - volumes.encode},
                       {"transfer_s", summarize(transfers).median},
                       {"bytes_sent", sent},
                       {"size_ratio", c.ratio},
                       {"algorithm", gm::algorithm_name(volumes.algorithm)}};
    }
    return figures;
  });
  for (const auto& name : codecs) {
    const json& f = all.at(name);
    const Stats s = summarize(f.at("runtime").get<std::vector<double>>());
    const double codec_s = f.at("codec_s"), reduce_s = f.at("reduce_s"), transfer_s = f.at("transfer_s");
    const double sum = codec_s + reduce_s + transfer_s;
    Result res;
    res.suite = "P6";
    res.case_name = name + " " + std::to_string(count * 4 >> 20) + "MiB 2 ranks, runtime allreduce";
    res.ours = s.median * 1e3;
    res.peer = sum * 1e3;
    res.unit = "ms";
    res.ratio = s.median > 0 ? sum / s.median : 0;
    res.peer_name = "sum of its stages";
    res.extra = {{"algorithm", f.at("algorithm")},     {"codec_ms", codec_s * 1e3},  {"transfer_ms", transfer_s * 1e3},
                 {"reduce_ms", reduce_s * 1e3},        {"bytes_sent", f.at("bytes_sent")},
                 {"size_ratio", f.at("size_ratio")},  {"spread_ours", s.spread},
                 {"ours_over_largest_stage", s.median / std::max({codec_s, transfer_s, reduce_s, 1e-12})}};
    emit(res);
  }
}

}  // namespace gwcli::bench
