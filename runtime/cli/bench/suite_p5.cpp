// P5: compressed allreduce of a 100 MB fp32 gradient on 4 ranks, each behind an emulated link (1 Gbit/s,
// and 10 Gbit/s; --link picks one rate), against Open MPI's uncompressed MPI_Allreduce on the same links.
//
// The suite drives two launches per rate:
//   ours: `gradwire run -n 4 --link RATE -- gradwire bench --suite P5` — each rank in its own namespace,
//         UCX over TCP on its veth; GW_BENCH_P5_OUT tells the ranks they are P5's workers: for every codec
//         they time gw_allreduce_compressed (average) of the same 25 M floats, one warm-up and the
//         repetitions, each from a barrier to completion, as the slowest rank's time; rank 0 writes them.
//   peer: the cluster built again, and `mpirun` starting gradwire-mpi-allreduce (bench/peers) once per rank
//         through `ip netns exec`, restricted to TCP on the veths (btl tcp,self, btl_tcp_if_include
//         198.18.0.0/15), as docs/benchmarks.md describes.
// ratio = MPI median / ours median (targets at 1 Gbit/s: int8 >= 3.5, onebit >= 20, topk 1 % >= 25).
// extra: the link actually used ("loopback" without root), spreads, the codec's size ratio
// (f32 bytes / encoded bytes of the whole gradient), and for the none codec gradwire's own uncompressed
// allreduce over the same links (P4's comparison, on slow links).
#include <gradwire/gradwire.h>

#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "bench/bench.hpp"
#include "bench/bench_ranks.hpp"
#include "cluster.hpp"
#include "commands.hpp"

namespace gwcli::bench {
namespace {

using gwcli::Failure;

namespace fs = std::filesystem;
using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

constexpr int kRanks = 4;
constexpr uint64_t kBytes = 100'000'000;  // 100 MB of f32
constexpr const char* kCodecs[] = {"none", "fp16", "bf16", "int8", "onebit", "topk", "randomk"};

uint64_t element_count(const Options& o) { return (o.quick ? 4'000'000 : kBytes) / 4; }

// ---- a rank (inside `gradwire run`) ---------------------------------------------------------------------

void run_worker(const Options& o, const std::string& out_path) {
  uint32_t rank = 0;
  const json result = run_rank({o.config, "", 600}, [&](gw_runtime* rt, gw_comm* comm) {
    rank = gw_comm_rank(comm);
    const uint64_t count = element_count(o);
    std::vector<float> in(count), out(count);
    {
      std::mt19937 gen(1234 + rank);
      std::normal_distribution<float> d(0.0f, 1.0f);
      for (float& v : in) v = d(gen);
    }
    json r = {{"ranks", gw_comm_size(comm)}, {"count", count}, {"codecs", json::object()}};
    for (const char* name : kCodecs) {
      gw_codec* codec = nullptr;
      check_bench(gw_codec_create(rt, name, &codec), std::string("P5: gw_codec_create ") + name);
      uint64_t encoded = 0;
      check_bench(gw_codec_max_encoded_size(codec, GW_DTYPE_F32, count, &encoded), "P5: gw_codec_max_encoded_size");
      std::vector<double> seconds;
      for (int rep = 0; rep <= o.repetitions; ++rep) {  // repetition 0: the warm-up
        gw_tensor x = GW_TENSOR_INIT, y = GW_TENSOR_INIT;
        x.dtype = y.dtype = GW_DTYPE_F32;
        x.data = in.data();
        y.data = out.data();
        x.count = y.count = count;
        gw_codec_context ctx = GW_CODEC_CONTEXT_INIT;
        ctx.seed = 7;
        ctx.step = uint64_t(rep);
        check_bench(gw_barrier(comm), "P5: barrier");
        const auto t0 = Clock::now();
        check_bench(gw_allreduce_compressed(comm, codec, &ctx, &x, &y, GW_REDUCE_AVG),
                    std::string("P5: allreduce ") + name);
        const double s = slowest_rank(comm, std::chrono::duration<double>(Clock::now() - t0).count());
        if (rep > 0) seconds.push_back(s);
      }
      gw_codec_destroy(codec);
      r["codecs"][name] = {{"seconds", seconds}, {"size_ratio", double(4 * count) / double(encoded)}};
    }
    return r;
  });
  if (rank == 0) std::ofstream(out_path) << result.dump() << "\n";
}

// ---- the driver -------------------------------------------------------------------------------------------

json run_ours(const Options& o, const std::string& rate, const fs::path& out) {
  const std::string self = self_path("P5");
  std::vector<std::string> argv{self, "run", "-n", std::to_string(kRanks), "--link", rate, "--", self, "bench",
                                "--suite", "P5", "--json", "--repetitions", std::to_string(o.repetitions)};
  if (o.quick) argv.push_back("--quick");
  if (!o.config.empty()) argv.insert(argv.end(), {"--config", o.config});
  fs::remove(out);
  const int status = run_captured(argv, {{"GW_BENCH_P5_OUT", out.string()}}, nullptr);
  std::ifstream in(out);
  if (status != 0 || !in)
    throw std::runtime_error("P5: the gradwire ranks failed (status " + std::to_string(status) + "; messages above)");
  return json::parse(in);
}

json run_mpi(const Options& o, const std::string& rate, const Cluster* cluster) {
  const std::vector<std::string> program{mpi_peer_path("P5"), std::to_string(element_count(o)),
                                         std::to_string(o.repetitions)};
  std::vector<std::string> argv{"mpirun", "--allow-run-as-root", "--bind-to", "none", "--mca", "btl", "tcp,self"};
  Env env;
  if (cluster) {
    // Every namespace is a host of its own: mpirun runs in rank 0's, and starts the daemon of each other
    // rank through `cluster.sh rsh ADDR` (ip netns exec) as it would through ssh; the daemons' and the
    // ranks' TCP stays on the veths (the PMIx server of each rank is its own namespace's daemon).
    std::string hosts;
    for (int r = 0; r < kRanks; ++r) hosts += (r ? "," : "") + Cluster::address_of(r) + ":1";
    argv.insert(argv.end(), {"--host", hosts, "--mca", "plm_rsh_agent", cluster->script_path() + " rsh", "--mca",
                             "btl_tcp_if_include", "198.18.0.0/15", "--mca", "oob_tcp_if_include", "198.18.0.0/15"});
    argv.insert(argv.begin(), {"ip", "netns", "exec", cluster->namespace_of(0)});
    env.push_back({"GW_CLUSTER_NAME", cluster->name()});
  } else {
    argv.insert(argv.end(), {"--oversubscribe"});
  }
  argv.insert(argv.end(), {"-np", std::to_string(kRanks)});
  argv.insert(argv.end(), program.begin(), program.end());
  std::string captured;
  const int status = run_captured(argv, env, &captured);
  return mpi_peer_result(status, captured, "P5: mpirun at " + rate);
}

std::string target_of(const std::string& codec) {
  if (codec == "int8") return ">= 3.5";
  if (codec == "onebit") return ">= 20";
  if (codec == "topk") return ">= 25";
  return "";
}

}  // namespace

static void run_p5_inner(const Options& options, const Emit& emit) {
  if (const char* out = std::getenv("GW_BENCH_P5_OUT")) {  // a rank of the launch below
    run_worker(options, out);
    return;
  }
  const std::vector<std::string> rates =
      options.link.empty() ? std::vector<std::string>{"1gbit", "10gbit"} : std::vector<std::string>{options.link};
  for (const auto& r : rates) Cluster::check_rate(r, "bench P5");
  const fs::path out = fs::temp_directory_path() / ("gradwire-p5-" + std::to_string(getpid()) + ".json");
  for (const auto& rate : rates) {
    const json ours = run_ours(options, rate, out);
    fs::remove(out);
    json mpi;
    std::string link = "loopback";
    {
      std::optional<Cluster> cluster = Cluster::up(kRanks, rate, "bench P5 (MPI peer)");
      if (cluster) link = rate;
      mpi = run_mpi(options, rate, cluster ? &*cluster : nullptr);
    }  // namespaces removed here
    const Stats peer = summarize(mpi.at("seconds").get<std::vector<double>>());
    const uint64_t mb = element_count(options) * 4 / 1'000'000;
    for (const char* name : kCodecs) {
      const json& c = ours.at("codecs").at(name);
      const Stats s = summarize(c.at("seconds").get<std::vector<double>>());
      Result res;
      res.suite = "P5";
      res.case_name = std::string(name) + " " + std::to_string(mb) + "MB 4r " + link;
      res.ours = s.median * 1e3;
      res.peer = peer.median * 1e3;
      res.unit = "ms";
      res.ratio = s.median > 0 ? peer.median / s.median : 0;
      res.peer_name = "MPI_Allreduce";
      res.extra = {{"link", link},
                   {"ranks", kRanks},
                   {"bytes", element_count(options) * 4},
                   {"spread", s.spread},
                   {"peer_spread", peer.spread},
                   {"size_ratio", c.at("size_ratio")},
                   {"repetitions", options.repetitions}};
      if (rate == "1gbit" && !target_of(name).empty()) res.extra["target"] = target_of(name);
      emit(res);
    }
  }
}

// Errors become Failures, which main reports: the stack unwinds, so every cluster is torn down.
void run_p5(const Options& options, const Emit& emit) {
  try {
    run_p5_inner(options, emit);
  } catch (const Failure&) {
    throw;
  } catch (const std::exception& e) {
    throw Failure(GW_ERR_INTERNAL, e.what());
  }
}

}  // namespace gwcli::bench
