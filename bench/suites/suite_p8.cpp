// P8: compressed reduce-scatter and allgather of a 100 MB fp32 buffer on 4 ranks, each behind an emulated
// 1 Gbit/s link (--link picks the rates, --ranks and --bytes change the shape), against the best of Open
// MPI's MPI_Reduce_scatter_block / MPI_Allgather (peers/mpi_shards.c) and PyTorch's gloo
// (peers/torch_shards.py: reduce_scatter_tensor / all_gather_into_tensor where gloo has them, else
// all_to_all_single plus a local sum / all_gather, the same bytes on the wire) on the same links.
//
// The suite drives one launch of ours and one of each peer per rate:
//   ours: `gradwire run -n 4 --link RATE -- gradwire bench --suite P8`: GW_BENCH_P8_OUT tells the ranks they
//         are P8's workers. For every codec they time gw_reduce_scatter_compressed (average; in: the whole
//         buffer, out: this rank's quarter) and gw_allgather_compressed (in: a quarter, out: the whole
//         buffer), one warm-up and the repetitions, interleaved codec by codec, each from a barrier to
//         completion, as the slowest rank's time; rank 0 writes them.
//   MPI:  the cluster built again, mpirun starting gradwire-mpi-shards once per rank (run_mpi_peer).
//   gloo: `gradwire run -n 4 --link RATE -- python3 torch_shards.py` (run_torch_peer).
// ratio = best peer's median / ours median. ideal: the bytes each rank sends (world_size - 1 payloads of
// one shard, the codec's worst-case size) at the rate one plain TCP transfer between two ranks reached in
// the same run; of_ideal = ideal / ours. Targets at 1 Gbit/s on 4 ranks: int8 >= 3, none >= 0.95, and
// of_ideal >= 0.8.
#include <gradwire/gradwire.h>

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "suites/bench.hpp"
#include "suites/bench_ranks.hpp"
#include "suites/peer_extras.hpp"
#include "support/cluster.hpp"
#include "support/tool.hpp"

namespace gwcli::bench {
namespace {

using gwcli::Failure;

namespace fs = std::filesystem;
using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

constexpr int kRanks = 4;
constexpr uint64_t kBytes = 100'000'000;  // 100 MB of f32
constexpr const char* kCodecs[] = {"none", "fp16", "int8", "topk"};
constexpr const char* kOps[] = {"reduce_scatter", "allgather"};

int ranks_of(const Options& o) { return o.ranks > 0 ? o.ranks : kRanks; }
// The whole buffer's elements, a multiple of the ranks.
uint64_t element_count(const Options& o) {
  const uint64_t n = uint64_t(ranks_of(o));
  return (o.bytes > 0 ? o.bytes : o.quick ? 4'000'000 : kBytes) / 4 / n * n;
}

// ---- a rank (inside `gradwire run`) ---------------------------------------------------------------------

void run_worker(const Options& o, const std::string& out_path) {
  uint32_t rank = 0;
  const json result = run_rank({o.config, "", 600}, [&](gw_runtime* rt, gw_comm* comm) {
    rank = gw_comm_rank(comm);
    const uint32_t n = gw_comm_size(comm);
    const uint64_t count = element_count(o) / n * n, part = count / n;
    std::vector<float> full = gaussian_input(count, 1234 + rank), shard(part), gathered(count);
    json r = {{"ranks", n}, {"count", count}, {"codecs", json::object()}};
    TcpLinkProbe link(comm);
    for (int i = 0; i < kProbeRounds; ++i) link.transfer();
    const CodecSet codecs(rt, {std::begin(kCodecs), std::end(kCodecs)}, "P8");
    for (size_t i = 0; i < codecs.size(); ++i) {
      uint64_t encoded = 0;
      check_bench(gw_codec_max_encoded_size(codecs.codec(i), GW_DTYPE_F32, part, &encoded),
                  "P8: gw_codec_max_encoded_size");
      r["codecs"][codecs.name(i)] = {{"shard_payload_bytes", encoded},
                                     {"size_ratio", double(4 * part) / double(encoded)},
                                     {"reduce_scatter", json::array()},
                                     {"allgather", json::array()}};
    }
    gw_tensor whole = GW_TENSOR_INIT, mine = GW_TENSOR_INIT, all = GW_TENSOR_INIT;
    whole.data = full.data();
    whole.count = count;
    mine.data = shard.data();
    mine.count = part;
    all.data = gathered.data();
    all.count = count;
    // Interleaved, a link transfer before each round: a slow stretch of a shared machine falls on every
    // codec alike, and the link's figure covers the same stretch.
    for (int rep = 0; rep <= o.repetitions; ++rep) {  // repetition 0: the warm-up
      if (rep > 0) link.transfer();
      for (size_t i = 0; i < codecs.size(); ++i) {
        gw_codec_context ctx = GW_CODEC_CONTEXT_INIT;
        ctx.seed = 7;
        ctx.step = uint64_t(rep);
        for (const char* op : kOps) {
          const std::string what = std::string("P8 ") + op + " " + codecs.name(i);
          const bool scatter = std::string(op) == "reduce_scatter";
          check_bench(gw_barrier(comm), what + ": barrier");
          const auto t0 = Clock::now();
          check_bench(scatter ? gw_reduce_scatter_compressed(comm, codecs.codec(i), &ctx, &whole, &mine, GW_REDUCE_AVG)
                              : gw_allgather_compressed(comm, codecs.codec(i), &ctx, &mine, &all),
                      what);
          const double s = slowest_rank(comm, std::chrono::duration<double>(Clock::now() - t0).count());
          if (rep > 0) r["codecs"][codecs.name(i)][op].push_back(s);
        }
      }
    }
    r["link_bytes_per_s"] = link.result().bytes_per_s;
    return r;
  });
  if (rank == 0) std::ofstream(out_path) << result.dump() << "\n";
}

// ---- the driver -------------------------------------------------------------------------------------------

json run_ours(const Options& o, const std::string& rate, const fs::path& out) {
  const std::string self = self_path("P8");
  std::vector<std::string> argv{self,
                                "run",
                                "-n",
                                std::to_string(ranks_of(o)),
                                "--link",
                                rate,
                                "--",
                                self,
                                "bench",
                                "--suite",
                                "P8",
                                "--json",
                                "--repetitions",
                                std::to_string(o.repetitions)};
  if (o.quick) argv.push_back("--quick");
  if (o.bytes > 0) argv.insert(argv.end(), {"--bytes", std::to_string(o.bytes)});
  if (o.ranks > 0) argv.insert(argv.end(), {"--ranks", std::to_string(o.ranks)});
  if (!o.config.empty()) argv.insert(argv.end(), {"--config", o.config});
  fs::remove(out);
  const int status = run_captured(argv, {{"GW_BENCH_P8_OUT", out.string()}}, nullptr);
  std::ifstream in(out);
  if (status != 0 || !in)
    throw std::runtime_error("P8: the gradwire ranks failed (status " + std::to_string(status) + "; messages above)");
  return json::parse(in);
}

std::string target_of(const std::string& codec) {
  if (codec == "int8") return ">= 3";
  if (codec == "none") return ">= 0.95";
  return "";
}

std::vector<std::string> rates_of(const Options& o) {
  std::vector<std::string> rates;
  std::stringstream list(o.link.empty() ? std::string("1gbit") : o.link);
  for (std::string r; std::getline(list, r, ',');)
    if (!r.empty()) rates.push_back(r);
  return rates;
}

void run_p8_inner(const Options& options, const Emit& emit) {
  if (const char* out = std::getenv("GW_BENCH_P8_OUT")) {  // a rank of the launch below
    run_worker(options, out);
    return;
  }
  const std::vector<std::string> rates = rates_of(options);
  for (const auto& r : rates) Cluster::check_rate(r, "bench P8");
  const int ranks = ranks_of(options);
  const uint64_t count = element_count(options);
  const fs::path out = fs::temp_directory_path() / ("gradwire-p8-" + std::to_string(getpid()) + ".json");
  for (const auto& rate : rates) {
    const json ours = run_ours(options, rate, out);
    fs::remove(out);
    json mpi;
    std::string link = "loopback";
    {
      std::optional<Cluster> cluster = Cluster::up(ranks, rate, "bench P8 (MPI peer)");
      if (cluster) link = rate;
      mpi = run_mpi_peer(
          {mpi_peer_path("P8", "gradwire-mpi-shards"), std::to_string(count), std::to_string(options.repetitions)},
          ranks, 1, cluster ? &*cluster : nullptr, "P8: mpirun at " + rate);
    }  // namespaces removed here
    std::string gloo_why;
    const std::optional<json> gloo = run_torch_peer(
        "torch_shards.py", ranks, rate, {std::to_string(count), std::to_string(options.repetitions)}, &gloo_why);
    if (!gloo) std::fprintf(stderr, "bench P8: gloo peer skipped at %s: %s\n", rate.c_str(), gloo_why.c_str());
    const double link_rate = ours.value("link_bytes_per_s", 0.0);
    const uint64_t mb = count * 4 / 1'000'000;
    for (const char* op : kOps) {
      const Stats mpi_s = summarize(mpi.at(op).get<std::vector<double>>());
      const Stats gloo_s = gloo ? summarize(gloo->at(op).get<std::vector<double>>()) : Stats{};
      const bool gloo_best = gloo && gloo_s.median > 0 && gloo_s.median < mpi_s.median;
      const Stats peer = gloo_best ? gloo_s : mpi_s;
      const bool scatter = std::string(op) == "reduce_scatter";
      for (const char* name : kCodecs) {
        const json& c = ours.at("codecs").at(name);
        const Stats s = summarize(c.at(op).get<std::vector<double>>());
        const uint64_t wire = uint64_t(ranks - 1) * c.at("shard_payload_bytes").get<uint64_t>();
        Result res;
        res.suite = "P8";
        res.case_name =
            std::string(op) + " " + name + " " + std::to_string(mb) + "MB " + std::to_string(ranks) + "r " + link;
        res.ours = s.median * 1e3;
        res.peer = peer.median * 1e3;
        res.unit = "ms";
        res.ratio = s.median > 0 ? peer.median / s.median : 0;
        res.peer_name = gloo_best ? std::string("gloo ") + gloo->value(std::string(op) + "_op", std::string(op))
                                  : std::string(scatter ? "MPI_Reduce_scatter_block" : "MPI_Allgather");
        res.extra = {{"link", link},
                     {"ranks", ranks},
                     {"bytes", count * 4},
                     {"spread", s.spread},
                     {"peer_spread", peer.spread},
                     {"mpi_ms", mpi_s.median * 1e3},
                     {"ratio_vs_mpi", s.median > 0 ? mpi_s.median / s.median : 0},
                     {"size_ratio", c.at("size_ratio").get<double>()},
                     {"wire_bytes_per_rank", wire},
                     {"link_mb_per_s", link_rate / 1e6},
                     {"repetitions", options.repetitions}};
        if (gloo) {
          res.extra["gloo_ms"] = gloo_s.median * 1e3;
          res.extra["ratio_vs_gloo"] = s.median > 0 ? gloo_s.median / s.median : 0;
          res.extra["gloo_op"] = gloo->value(std::string(op) + "_op", std::string("?"));
          res.extra["gloo_torch"] = gloo->value("torch", std::string("?"));
        } else {
          res.extra["gloo_skipped"] = gloo_why;
        }
        if (link_rate > 0) {
          const double ideal = double(wire) / link_rate;
          res.extra["ideal_ms"] = ideal * 1e3;
          res.extra["of_ideal"] = s.median > 0 ? ideal / s.median : 0;
        }
        if (rate == "1gbit" && ranks == kRanks) {
          if (!target_of(name).empty()) res.extra["target"] = target_of(name);
          res.extra["of_ideal_target"] = ">= 0.8";
        }
        emit(res);
      }
    }
  }
}

}  // namespace

// Errors become Failures, which main reports: the stack unwinds, so every cluster is torn down.
void run_p8(const Options& options, const Emit& emit) {
  try {
    run_p8_inner(options, emit);
  } catch (const Failure&) {
    throw;
  } catch (const std::exception& e) {
    throw Failure(GW_ERR_INTERNAL, e.what());
  }
}

}  // namespace gwcli::bench
