// P7: two-level compressed allreduce. 100 MB f32 on 2 nodes x 2 ranks and 4 nodes x 2 ranks, each node's
// ranks sharing one emulated 1 Gbit/s link (`gradwire run --ranks-per-node 2 --link 1gbit`), in one run:
//   ours, flat ([collectives] two_level = off):     none, int8
//   ours, two-level (two_level = on):               none, int8, onebit
//   peers on the same links: Open MPI's MPI_Allreduce and gloo's all_reduce (PyTorch).
// Each of our figures is the median over the repetitions of gw_allreduce_compressed (average), from a
// barrier to completion, the slowest rank's time. Targets: two-level int8 at least 1.5 x faster than flat
// int8, and at least 0.8 of the line-rate time of its inter-node bytes (each node sends 2 (M - 1) / M of
// the whole encoded gradient over its link with M nodes: the cross groups' scatter-reduce-allgather).
#include <gradwire/gradwire.h>

#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "suites/bench.hpp"
#include "suites/bench_ranks.hpp"
#include "suites/peer_extras.hpp"
#include "support/cluster.hpp"
#include "support/tool.hpp"
#include "model/model.hpp"

#ifndef GW_SOURCE_SCRIPTS_DIR
#define GW_SOURCE_SCRIPTS_DIR ""
#endif

namespace gwcli::bench {
namespace {

using gwcli::Failure;
namespace fs = std::filesystem;
using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

constexpr int kPerNode = 2;
constexpr uint64_t kBytes = 100'000'000;

uint64_t element_count(const Options& o) { return (o.quick ? 4'000'000 : kBytes) / 4; }

std::vector<std::string> codecs_of(const std::string& mode) {
  return mode == "off" ? std::vector<std::string>{"none", "int8"} : std::vector<std::string>{"none", "int8", "onebit"};
}

// ---- a rank (inside `gradwire run`) ---------------------------------------------------------------------

void run_worker(const Options& o, const std::string& out_path, const std::string& mode) {
  uint32_t rank = 0;
  // The mode reaches the runtime as GRADWIRE_COLLECTIVES_TWO_LEVEL (set by the driver), over any --config.
  const json result = run_rank({o.config, "", 600}, [&](gw_runtime* rt, gw_comm* comm) {
    rank = gw_comm_rank(comm);
    const uint64_t count = element_count(o);
    std::vector<float> in = gaussian_input(count, 1234 + rank), out(count);
    json r = {{"ranks", gw_comm_size(comm)}, {"count", count}, {"codecs", json::object()}};
    // The uplink's rate and CPU per byte for the prediction: node 1 sends to node 0, before the
    // measurements and before each round of them; and the TCP transport's cost per byte with every rank
    // sending to its place in the next node at once (a ring step), at the same moments.
    std::optional<TcpLinkProbe> link;
    std::optional<RingStepProbe> ring;
    if (!o.model.empty()) {
      link.emplace(comm, 0, kPerNode);
      for (int i = 0; i < kProbeRounds; ++i) link->transfer();
      r["all_to_all_bytes_per_s"] = measure_all_to_all(comm, 0, kPerNode);  // the node links' rate, every node sending
      ring.emplace(comm, std::max(1u, std::thread::hardware_concurrency()), 0, 1 << 20, kPerNode);
      for (int i = 0; i < kProbeRounds; ++i) ring->step();
    }
    const CodecSet codecs(rt, codecs_of(mode), "P7");
    for (size_t i = 0; i < codecs.size(); ++i) {
      uint64_t encoded = 0;
      check_bench(gw_codec_max_encoded_size(codecs.codec(i), GW_DTYPE_F32, count, &encoded), "P7: gw_codec_max_encoded_size");
      r["codecs"][codecs.name(i)] = {{"encoded_bytes", encoded}};
    }
    // Interleaved: a slow stretch of a shared machine falls on every codec alike.
    const std::vector<std::vector<double>> seconds =
        time_compressed_allreduces(comm, codecs, in, out, o.repetitions, "P7",
                                   link ? std::function<void()>([&] {
                                     link->transfer();
                                     ring->step();
                                   })
                                        : nullptr);
    for (size_t i = 0; i < codecs.size(); ++i) r["codecs"][codecs.name(i)]["seconds"] = seconds[i];
    if (link) {
      const TcpProbe measured = link->result();
      r["link_bytes_per_s"] = measured.bytes_per_s;
      r["link_cpu_s_per_byte"] = measured.cpu_s_per_byte;
      const TcpProbe stepped = ring->result();
      r["ring_bytes_per_s"] = stepped.bytes_per_s;
      r["ring_cpu_s_per_byte"] = stepped.cpu_s_per_byte;
    }
    return r;
  });
  if (rank == 0) std::ofstream(out_path) << result.dump() << "\n";
}

// ---- the driver -------------------------------------------------------------------------------------------

std::vector<std::string> launch(int ranks, const std::string& rate) {
  return {self_path("P7"), "run", "-n", std::to_string(ranks), "--ranks-per-node", std::to_string(kPerNode), "--link", rate,
          "--"};
}

json run_ours(const Options& o, int ranks, const std::string& rate, const std::string& mode, const fs::path& out) {
  std::vector<std::string> argv = launch(ranks, rate);
  const std::string self = self_path("P7");
  argv.insert(argv.end(), {self, "bench", "--suite", "P7", "--json", "--repetitions", std::to_string(o.repetitions)});
  if (o.quick) argv.push_back("--quick");
  if (!o.config.empty()) argv.insert(argv.end(), {"--config", o.config});
  if (!o.model.empty()) argv.insert(argv.end(), {"--model", o.model});
  fs::remove(out);
  Env env{{"GW_BENCH_P7_OUT", out.string()}, {"GRADWIRE_COLLECTIVES_TWO_LEVEL", mode}};
  // A node's ranks talk over shared memory, as on a real node (UCX would also take it between the
  // emulated nodes, which share one host, if the inter transport were not held to TCP).
  if (std::getenv("GRADWIRE_TRANSPORT_INTRA") == nullptr) env.push_back({"GRADWIRE_TRANSPORT_INTRA", "ucx_shm"});
  const int status = run_captured(argv, env, nullptr);
  std::ifstream in(out);
  if (status != 0 || !in)
    throw std::runtime_error("P7: the gradwire ranks (two_level " + mode + ") failed (status " + std::to_string(status) +
                             "; messages above)");
  return json::parse(in);
}

json run_mpi(const Options& o, int ranks, const std::string& rate) {
  std::optional<Cluster> cluster = Cluster::up(ranks, rate, "bench P7 (MPI peer)", kPerNode);
  return run_mpi_peer({mpi_peer_path("P7"), std::to_string(element_count(o)), std::to_string(o.repetitions)}, ranks,
                      kPerNode, cluster ? &*cluster : nullptr, "P7: mpirun");
}

// gloo through `gradwire run` (the same namespaces and links as ours); nullopt when PyTorch or the script
// is missing (said on stderr).
std::optional<json> run_gloo(const Options& o, int ranks, const std::string& rate) {
  const fs::path script = fs::path(GW_SOURCE_SCRIPTS_DIR) / ".." / "bench" / "peers" / "gloo_allreduce.py";
  if (!*GW_SOURCE_SCRIPTS_DIR || !fs::exists(script) || !fs::exists("/usr/bin/python3")) {
    std::fprintf(stderr, "bench P7: the gloo peer is not measured (no %s or /usr/bin/python3)\n", script.c_str());
    return std::nullopt;
  }
  std::vector<std::string> argv = launch(ranks, rate);
  argv.insert(argv.end(), {"/usr/bin/python3", script.string(), std::to_string(element_count(o)), std::to_string(o.repetitions)});
  std::string captured;
  const int status = run_captured(argv, {}, &captured);
  std::istringstream lines(captured);
  for (std::string line; std::getline(lines, line);) {
    const size_t brace = line.find("{\"peer\"");
    if (status == 0 && brace != std::string::npos) return json::parse(line.substr(brace));
  }
  std::fprintf(stderr, "bench P7: the gloo peer failed (status %d): %s\n", status, captured.c_str());
  return std::nullopt;
}

void emit_row(const Emit& emit, const std::string& name, int ranks, const std::string& link, const Stats& s,
              const Stats& reference, const std::string& reference_name, json extra) {
  Result res;
  res.suite = "P7";
  res.case_name = name + " " + std::to_string(ranks / kPerNode) + "x" + std::to_string(kPerNode) + " " + link;
  res.ours = s.median * 1e3;
  res.peer = reference.median * 1e3;
  res.unit = "ms";
  res.ratio = s.median > 0 ? reference.median / s.median : 0;
  res.peer_name = reference_name;
  extra["spread"] = s.spread;
  extra["link"] = link;
  res.extra = std::move(extra);
  emit(res);
}

void run_p7_inner(const Options& options, const Emit& emit) {
  if (const char* out = std::getenv("GW_BENCH_P7_OUT")) {  // a rank of a launch below
    const char* mode = std::getenv("GRADWIRE_COLLECTIVES_TWO_LEVEL");
    run_worker(options, out, mode ? mode : "auto");
    return;
  }
  const std::string rate = options.link.empty() ? "1gbit" : options.link;
  Cluster::check_rate(rate, "bench P7");
  const std::string link = geteuid() == 0 ? rate : "loopback";
  const fs::path out = fs::temp_directory_path() / ("gradwire-p7-" + std::to_string(getpid()) + ".json");
  const double line_bits_per_s = gw::model::parse_rate(rate) * 8;
  const std::optional<gw::model::Model> model = load_model_option(options.model, "P7");
  for (int ranks : {2 * kPerNode, 4 * kPerNode}) {
    const int nodes = ranks / kPerNode;
    const json flat = run_ours(options, ranks, rate, "off", out);
    const json two = run_ours(options, ranks, rate, "on", out);
    fs::remove(out);
    const json mpi = run_mpi(options, ranks, rate);
    const std::optional<json> gloo = run_gloo(options, ranks, rate);
    const Stats mpi_s = summarize(mpi.at("seconds").get<std::vector<double>>());
    const auto seconds = [](const json& j, const char* codec) {
      return summarize(j.at("codecs").at(codec).at("seconds").get<std::vector<double>>());
    };
    const Stats flat_int8 = seconds(flat, "int8");
    // With --model: the prediction at the uplink's rate measured inside the same launch.
    const auto predict = [&](const json& run, const std::string& codec, const Stats& measured, bool two_level,
                             json& extra) {
      if (!model || !run.contains("link_bytes_per_s")) return;
      const double all_to_all_rate = run.value("all_to_all_bytes_per_s", 0.0);
      // The TCP transport's cost per byte as in P5 (a node's ranks share its link).
      const double link_rate = run.at("link_bytes_per_s").get<double>();
      const double link_cpu = transport_cpu_per_byte(run, nodes * kPerNode, kPerNode);
      const auto p = node_allreduce_cost(*model, codec, 4.0 * double(element_count(options)), nodes, kPerNode,
                                         link_rate, link_cpu, two_level, all_to_all_rate);
      if (!p) return;
      extra["predicted_ms"] = p->total * 1e3;
      extra["error"] = measured.median > 0 ? (p->total - measured.median) / measured.median : 0;
      extra["link_bytes_per_s"] = run.at("link_bytes_per_s");
      extra["link_cpu_ns_per_byte"] = link_cpu * 1e9;
      extra["probe_cpu_ns_per_byte"] = run.at("link_cpu_s_per_byte").get<double>() * 1e9;
      extra["ring_cpu_ns_per_byte"] = run.value("ring_cpu_s_per_byte", 0.0) * 1e9;
      extra["ring_mb_per_s"] = run.value("ring_bytes_per_s", 0.0) / 1e6;
      extra["all_to_all_mb_per_s"] = all_to_all_rate / 1e6;
      // The operator's path: the model alone at the nominal rate (nominal_link_inputs).
      const NominalInputs n = nominal_link_inputs(*model, rate);
      if (const auto q = node_allreduce_cost(*model, codec, 4.0 * double(element_count(options)), nodes, kPerNode,
                                             n.bytes_per_s, n.cpu_s_per_byte, two_level, n.all_to_all_bytes_per_s)) {
        extra["nominal_predicted_ms"] = q->total * 1e3;
        extra["nominal_error"] = measured.median > 0 ? (q->total - measured.median) / measured.median : 0;
      }
    };
    // Flat rows against MPI; two-level rows against flat int8 (the 1.5 x target) with the line-rate share.
    for (const char* codec : {"none", "int8"}) {
      const Stats s = seconds(flat, codec);
      json extra = json::object();
      predict(flat, codec, s, false, extra);
      emit_row(emit, std::string("flat ") + codec, ranks, link, s, mpi_s, "MPI_Allreduce", extra);
    }
    for (const char* codec : {"none", "int8", "onebit"}) {
      const Stats s = seconds(two, codec);
      const double encoded = two.at("codecs").at(codec).at("encoded_bytes").get<double>();
      const double node_bytes = 2.0 * (nodes - 1) / nodes * encoded;
      const double line_s = node_bytes * 8 / line_bits_per_s;
      json extra = {{"inter_node_bytes_per_node", node_bytes},
                    {"line_rate_s", line_s},
                    {"line_rate_share", s.median > 0 ? line_s / s.median : 0},
                    {"vs_mpi", s.median > 0 ? mpi_s.median / s.median : 0}};
      if (std::string(codec) == "int8") extra["target"] = ">= 1.5 vs flat int8, line_rate_share >= 0.8";
      predict(two, codec, s, true, extra);
      emit_row(emit, std::string("two-level ") + codec, ranks, link, s, flat_int8, "flat int8", extra);
    }
    emit_row(emit, "MPI_Allreduce", ranks, link, mpi_s, mpi_s, "MPI_Allreduce", json::object());
    if (gloo) {
      const Stats g = summarize(gloo->at("seconds").get<std::vector<double>>());
      emit_row(emit, "gloo all_reduce", ranks, link, g, mpi_s, "MPI_Allreduce", json::object());
    }
  }
}

}  // namespace

void run_p7(const Options& options, const Emit& emit) {
  try {
    run_p7_inner(options, emit);
  } catch (const Failure&) {
    throw;
  } catch (const std::exception& e) {
    throw Failure(GW_ERR_INTERNAL, e.what());
  }
}

}  // namespace gwcli::bench
