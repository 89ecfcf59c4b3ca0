// P5: compressed allreduce of a 100 MB fp32 gradient on 4 ranks, each behind an emulated link (1 Gbit/s,
// and 10 Gbit/s; --link picks the rates, --ranks and --bytes change the shape), against the best of Open
// MPI's MPI_Allreduce and PyTorch's gloo allreduce (peers/torch_allreduce.py) on the same links.
//
// The suite drives two launches per rate:
//   ours: `gradwire run -n 4 --link RATE -- gradwire bench --suite P5` — each rank in its own namespace,
//         UCX over TCP on its veth; GW_BENCH_P5_OUT tells the ranks they are P5's workers: for every codec
//         they time gw_allreduce_compressed (average) of the same 25 M floats, one warm-up and the
//         repetitions, each from a barrier to completion, as the slowest rank's time; rank 0 writes them.
//   peer: the cluster built again, and `mpirun` starting gradwire-mpi-allreduce (bench/peers) once per rank
//         through `ip netns exec`, restricted to TCP on the veths (btl tcp,self, btl_tcp_if_include
//         198.18.0.0/15), as docs/benchmarks.md describes.
// ratio = best peer's median / ours median (targets at 1 Gbit/s: int8 >= 3.5, onebit >= 20, topk 1 % >= 25;
// set when the peer was MPI alone). ideal: the bytes each rank must send with the codec's algorithm at the
// rate one plain TCP transfer between two ranks reached in the same run; of_ideal = ideal / ours. With
// --model, predicted_ms and error: the cost model's prediction at that measured rate, the all-to-all
// algorithms' wire at the rate every rank reached sending to all the others at once, and the transport's
// CPU per byte from a ring pass of the ranks' own transport where the cores paced it (else from the
// plain transfer's busy time), all measured in the same run (docs/cost-model.md); nominal_predicted_ms
// and nominal_error: the operator's prediction, from the model alone at the link's nominal rate
// (what the model's delivery says TCP delivers of it; the model's tcp σ).
// extra: the link actually used ("loopback" without root), spreads, the codec's size ratio
// (f32 bytes / encoded bytes of the whole gradient), and for the none codec gradwire's own uncompressed
// allreduce over the same links (P4's comparison, on slow links).
#include <gradwire/gradwire.h>

#include <unistd.h>

#include <cstdio>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <random>
#include <sstream>
#include <thread>
#include <stdexcept>
#include <string>
#include <vector>

#include "suites/bench.hpp"
#include "suites/bench_ranks.hpp"
#include "suites/peer_extras.hpp"
#include "model/measure.hpp"
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
constexpr const char* kCodecs[] = {"none", "fp16", "bf16", "int8", "onebit", "topk", "randomk"};

uint64_t element_count(const Options& o) { return (o.bytes > 0 ? o.bytes : o.quick ? 4'000'000 : kBytes) / 4; }
int ranks_of(const Options& o) { return o.ranks > 0 ? o.ranks : kRanks; }

// ---- a rank (inside `gradwire run`) ---------------------------------------------------------------------

void run_worker(const Options& o, const std::string& out_path) {
  uint32_t rank = 0;
  const json result = run_rank({o.config, "", 600}, [&](gw_runtime* rt, gw_comm* comm) {
    rank = gw_comm_rank(comm);
    const uint64_t count = element_count(o);
    std::vector<float> in = gaussian_input(count, 1234 + rank), out(count);
    json r = {{"ranks", gw_comm_size(comm)}, {"count", count}, {"codecs", json::object()}};
    TcpLinkProbe link(comm);
    for (int i = 0; i < kProbeRounds; ++i) link.transfer();
    r["all_to_all_bytes_per_s"] = measure_all_to_all(comm);
    RingStepProbe ring = RingStepProbe::ring_pass(comm, std::max(1u, std::thread::hardware_concurrency()), 4 * count);
    for (int i = 0; i < kProbeRounds; ++i) ring.step();
    const CodecSet codecs(rt, {std::begin(kCodecs), std::end(kCodecs)}, "P5");
    for (size_t i = 0; i < codecs.size(); ++i) {
      gw_codec_properties props = GW_CODEC_PROPERTIES_INIT;
      check_bench(gw_codec_get_properties(codecs.codec(i), &props), "P5: gw_codec_get_properties");
      const auto kind = gw::model::kind_of(codecs.name(i), props.flags & GW_CODEC_SPARSE,
                                           props.flags & GW_CODEC_SUMMABLE, props.flags & GW_CODEC_SHARED_INDICES);
      uint64_t encoded = 0;
      check_bench(gw_codec_max_encoded_size(codecs.codec(i), GW_DTYPE_F32, count, &encoded), "P5: gw_codec_max_encoded_size");
      r["codecs"][codecs.name(i)] = {{"size_ratio", double(4 * count) / double(encoded)}, {"kind", gw::model::kind_name(kind)}};
    }
    // Interleaved: a slow stretch of a shared machine falls on every codec alike; a link transfer and a
    // ring pass before each round, so that the link's and the transport's figures cover the same stretch.
    const std::vector<std::vector<double>> seconds =
        time_compressed_allreduces(comm, codecs, in, out, o.repetitions, "P5", [&] {
          link.transfer();
          ring.step();
        });
    for (size_t i = 0; i < codecs.size(); ++i) r["codecs"][codecs.name(i)]["seconds"] = seconds[i];
    const TcpProbe measured = link.result();
    const TcpProbe stepped = ring.result();
    r["ring_bytes_per_s"] = stepped.bytes_per_s;
    r["ring_cpu_s_per_byte"] = stepped.cpu_s_per_byte;
    r["link_bytes_per_s"] = measured.bytes_per_s;
    r["link_cpu_s_per_byte"] = measured.cpu_s_per_byte;
    return r;
  });
  if (rank == 0) std::ofstream(out_path) << result.dump() << "\n";
}

// ---- the driver -------------------------------------------------------------------------------------------

json run_ours(const Options& o, const std::string& rate, const fs::path& out) {
  const std::string self = self_path("P5");
  std::vector<std::string> argv{self, "run", "-n", std::to_string(ranks_of(o)), "--link", rate, "--", self, "bench",
                                "--suite", "P5", "--json", "--repetitions", std::to_string(o.repetitions)};
  if (o.quick) argv.push_back("--quick");
  if (o.bytes > 0) argv.insert(argv.end(), {"--bytes", std::to_string(o.bytes)});
  if (!o.config.empty()) argv.insert(argv.end(), {"--config", o.config});
  fs::remove(out);
  const int status = run_captured(argv, {{"GW_BENCH_P5_OUT", out.string()}}, nullptr);
  std::ifstream in(out);
  if (status != 0 || !in)
    throw std::runtime_error("P5: the gradwire ranks failed (status " + std::to_string(status) + "; messages above)");
  return json::parse(in);
}

json run_mpi(const Options& o, const std::string& rate, const Cluster* cluster) {
  return run_mpi_peer({mpi_peer_path("P5"), std::to_string(element_count(o)), std::to_string(o.repetitions)},
                      ranks_of(o), 1, cluster, "P5: mpirun at " + rate);
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
  std::vector<std::string> rates;
  {
    std::stringstream list(options.link.empty() ? std::string("1gbit,10gbit") : options.link);
    for (std::string r; std::getline(list, r, ',');)
      if (!r.empty()) rates.push_back(r);
  }
  for (const auto& r : rates) Cluster::check_rate(r, "bench P5");
  const std::optional<gw::model::Model> model = load_model_option(options.model, "P5");
  const int ranks = ranks_of(options);
  const fs::path out = fs::temp_directory_path() / ("gradwire-p5-" + std::to_string(getpid()) + ".json");
  for (const auto& rate : rates) {
    const json ours = run_ours(options, rate, out);
    fs::remove(out);
    json mpi;
    std::string link = "loopback";
    {
      std::optional<Cluster> cluster = Cluster::up(ranks, rate, "bench P5 (MPI peer)");
      if (cluster) link = rate;
      mpi = run_mpi(options, rate, cluster ? &*cluster : nullptr);
    }  // namespaces removed here
    std::string gloo_why;
    const std::optional<json> gloo =
        run_gloo_peer(ranks, rate, element_count(options), options.repetitions, &gloo_why);
    if (!gloo) std::fprintf(stderr, "bench P5: gloo peer skipped at %s: %s\n", rate.c_str(), gloo_why.c_str());
    const Stats mpi_s = summarize(mpi.at("seconds").get<std::vector<double>>());
    const Stats gloo_s = gloo ? summarize(gloo->at("seconds").get<std::vector<double>>()) : Stats{};
    const bool gloo_best = gloo && gloo_s.median > 0 && gloo_s.median < mpi_s.median;
    const Stats peer = gloo_best ? gloo_s : mpi_s;
    const double link_rate = ours.value("link_bytes_per_s", 0.0);
    const double cores = std::max(1u, std::thread::hardware_concurrency());
    const double probe_cpu = ours.value("link_cpu_s_per_byte", 0.0);
    const double ring_rate = ours.value("ring_bytes_per_s", 0.0), ring_cpu = ours.value("ring_cpu_s_per_byte", 0.0);
    const double link_cpu = transport_cpu_per_byte(ours, ranks, 1);
    const double wire_rate = ring_wire_rate(ours, ranks);
    const double all_to_all_rate = ours.value("all_to_all_bytes_per_s", 0.0);
    const uint64_t bytes = element_count(options) * 4;
    const uint64_t mb = bytes / 1'000'000;
    for (const char* name : kCodecs) {
      const json& c = ours.at("codecs").at(name);
      const Stats s = summarize(c.at("seconds").get<std::vector<double>>());
      const auto kind = gw::model::kind_from_name(c.value("kind", std::string("dense"))).value_or(gw::model::CodecKind::Dense);
      const double size_ratio = c.at("size_ratio").get<double>();
      Result res;
      res.suite = "P5";
      res.case_name = std::string(name) + " " + std::to_string(mb) + "MB " + std::to_string(ranks) + "r " + link;
      res.ours = s.median * 1e3;
      res.peer = peer.median * 1e3;
      res.unit = "ms";
      res.ratio = s.median > 0 ? peer.median / s.median : 0;
      res.peer_name = gloo_best ? "gloo" : "MPI_Allreduce";
      res.extra = {{"link", link},
                   {"ranks", ranks},
                   {"bytes", bytes},
                   {"spread", s.spread},
                   {"peer_spread", peer.spread},
                   {"mpi_ms", mpi_s.median * 1e3},
                   {"ratio_vs_mpi", s.median > 0 ? mpi_s.median / s.median : 0},
                   {"size_ratio", size_ratio},
                   {"link_mb_per_s", link_rate / 1e6},
                   {"link_cpu_ns_per_byte", link_cpu * 1e9},
                   {"wire_mb_per_s", wire_rate / 1e6},
                   {"probe_cpu_ns_per_byte", probe_cpu * 1e9},
                   {"ring_cpu_ns_per_byte", ring_cpu * 1e9},
                   {"ring_mb_per_s", ring_rate / 1e6},
                   {"all_to_all_mb_per_s", all_to_all_rate / 1e6},
                   {"repetitions", options.repetitions}};
      if (gloo) res.extra["gloo_ms"] = gloo_s.median * 1e3, res.extra["ratio_vs_gloo"] = s.median > 0 ? gloo_s.median / s.median : 0;
      if (link_rate > 0) {
        const gw::model::Cost need = allreduce_cost(nullptr, name, kind, size_ratio, double(bytes), ranks, link_rate, cores);
        const double ideal = need.bytes_sent / link_rate;
        res.extra["ideal_ms"] = ideal * 1e3;
        res.extra["of_ideal"] = s.median > 0 ? ideal / s.median : 0;
        if (model) {
          const gw::model::Cost p = allreduce_cost(&*model, name, kind, size_ratio, double(bytes), ranks, wire_rate,
                                                     cores, link_cpu, all_to_all_rate);
          res.extra["predicted_ms"] = p.total * 1e3;
          res.extra["error"] = s.median > 0 ? (p.total - s.median) / s.median : 0;
          // The operator's path: the model alone at the nominal rate (nominal_link_inputs).
          const NominalInputs n = nominal_link_inputs(*model, rate);
          const gw::model::Cost q = allreduce_cost(&*model, name, kind, size_ratio, double(bytes), ranks, n.bytes_per_s,
                                                   cores, n.cpu_s_per_byte, n.all_to_all_bytes_per_s);
          res.extra["nominal_predicted_ms"] = q.total * 1e3;
          res.extra["nominal_error"] = s.median > 0 ? (q.total - s.median) / s.median : 0;
        }
      }
      if (rate == "1gbit" && ranks == kRanks && !gloo_best && !target_of(name).empty()) res.extra["target"] = target_of(name);
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
