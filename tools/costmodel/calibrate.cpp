// `gradwire calibrate [-o FILE]`: fits the cost model (docs/cost-model.md) from short measurements on
// this machine — every codec's encode and decode cost and size ratio, the cost of an elementwise sum,
// and alpha / beta of each UCX transport between two local ranks (alpha the fastest time of 8 B, beta
// the slope between the median times of 1 MiB and the largest size: tcp's one way in a ping-pong, with the
// machine's CPU time per byte of a plain loopback TCP transfer; shm's exchanged, with a table by message
// size and a ring's step with two ranks per core) — and saves it as TOML. `--inter-rate
// RATE` adds a link "inter" with the TCP transport's alpha and CPU per byte and the given rate's beta (a
// link this machine does not have, e.g. 100mbit; beta from what the model's delivery says TCP delivers of
// that rate) and makes it the model's inter-node link. Under a launcher with 2 ranks or more on different
// hosts (gradwire run, torchrun, mpirun), the ranks also measure the link between hosts over the
// configured transport (run_launched): rank 0 writes it as the link "inter" with its origin, and, where
// the link's nominal rate is known, what TCP delivered of it (the model's delivery); a calibration of one
// host takes the delivery of the embedded reference model and says so.
#include <gradwire/gradwire.h>

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <iomanip>
#include <iostream>
#include <sstream>
#include <thread>

#include "suites/bench.hpp"
#include "suites/bench_ranks.hpp"
#include "suites/link_tables.hpp"
#include "suites/peer_extras.hpp"
#include "costmodel/calibrate.hpp"
#include "support/tool.hpp"
#include "model/measure.hpp"
#include "model/model.hpp"

namespace gwcli {
namespace {

using nlohmann::json;

// How many copies of a codec a process measures at once: --codec-threads, else this machine's cores
// shared among the --concurrent processes.
int codec_threads_of(const CalibrateArgs& args) {
  if (args.codec_threads > 0) return args.codec_threads;
  const int hw = int(std::max(1u, std::thread::hardware_concurrency()));
  return std::max(1, hw / std::max(1, args.concurrent));
}

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= s.size()) {
    size_t comma = s.find(',', start);
    if (comma == std::string::npos) comma = s.size();
    if (comma > start) out.push_back(s.substr(start, comma - start));
    start = comma + 1;
  }
  return out;
}

// A codec reduced in rounds (GW_CODEC_ROUNDS: PowerSGD) has no single-payload encode and decode to time;
// the model has no formula for its rounds either, so calibrate leaves it out of "every codec"
// (docs/cost-model.md, `gradwire calibrate`).
bool reduced_in_rounds(gw_runtime* rt, const char* name) {
  gw_codec* codec = nullptr;
  if (gw_codec_create(rt, name, &codec) != GW_OK) return false;
  gw_codec_properties props = GW_CODEC_PROPERTIES_INIT;
  const bool rounds = gw_codec_get_properties(codec, &props) == GW_OK && (props.flags & GW_CODEC_ROUNDS) != 0;
  gw_codec_destroy(codec);
  return rounds;
}

std::vector<std::string> codec_names(gw_runtime* rt) {
  std::vector<std::string> names;
  uint32_t plugins = 0;
  check(gw_runtime_plugin_count(rt, &plugins), "listing plugins");
  for (uint32_t p = 0; p < plugins; ++p) {
    gw_plugin_info info = GW_PLUGIN_INFO_INIT;
    if (gw_runtime_plugin_info(rt, p, &info) != GW_OK || info.status != GW_OK) continue;
    for (uint32_t c = 0; c < info.num_components; ++c) {
      gw_component_info ci = GW_COMPONENT_INFO_INIT;
      if (gw_runtime_component_info(rt, p, c, &ci) == GW_OK && ci.kind == 0 && !reduced_in_rounds(rt, ci.name))
        names.push_back(ci.name);
    }
  }
  std::sort(names.begin(), names.end());
  return names;
}

// Repetitions of --bytes that cover `total` bytes, --repetitions at least: a codec's passes over 512 MiB
// (encode, decode and decode adding: about 80 ms here) and γ's over 1 GiB last longer than the dips of
// a shared machine's memory speed (tens of milliseconds), so that their median is the speed a long
// collective sees rather than that of one dip or of one quiet moment.
int spread_repetitions(const CalibrateArgs& args, uint64_t total, uint64_t bytes) {
  return int(std::clamp<uint64_t>(total / std::max<uint64_t>(1, bytes), uint64_t(args.repetitions), 100));
}

// The sizes of the codecs' tables (CodecCost::sizes): 1/16, 1/4, 1/2 and all of --bytes, 16, 64, 128 and
// 256 MiB by default. On the VM above a decode ran at one speed up to 48 MiB per copy, slowed from
// there and reached the 256 MiB speed by 192 MiB (one bit 27, 18, 11 and 8.3 GB/s at 16, 64, 128 and
// 192 MiB).
std::vector<uint64_t> codec_table_sizes(const CalibrateArgs& args) {
  std::vector<uint64_t> out;
  for (uint64_t part : {16, 4, 2, 1})
    if (out.empty() || args.bytes / part > out.back()) out.push_back(args.bytes / part);
  return out;
}

// The codec alone, and (encode_all_cores, decode_all_cores) as the ranks of a node run it where their
// codec phases meet: codec_threads_of(args) copies at once, each its own codec and buffers (measure_codec).
gw::model::CodecCost measure(gw_runtime* rt, const std::string& name, const CalibrateArgs& args, uint64_t chunk) {
  using CodecPtr = std::unique_ptr<gw_codec, gw_status (*)(gw_codec*)>;
  std::vector<CodecPtr> owners;
  std::vector<gw::model::CodecProbe> probes;
  for (int i = 0; i < codec_threads_of(args); ++i) {
    gw_codec* codec = nullptr;
    check(gw_codec_create(rt, name.c_str(), &codec), "creating codec '" + name + "'");
    owners.emplace_back(codec, gw_codec_destroy);
    gw::model::CodecProbe probe;
    probe.max_payload = [codec](uint64_t count) {
      uint64_t size = 0;
      check(gw_codec_max_encoded_size(codec, GW_DTYPE_F32, count, &size), "max size");
      return size;
    };
    probe.encode = [codec, &name](uint64_t offset, const float* x, uint64_t count, void* payload, uint64_t capacity) {
      gw_codec_context ctx = GW_CODEC_CONTEXT_INIT;
      ctx.seed = 7 + offset;
      gw_tensor t = GW_TENSOR_INIT;
      t.data = const_cast<float*>(x);
      t.count = count;
      t.dtype = GW_DTYPE_F32;
      uint64_t size = 0;
      check(gw_codec_encode(codec, &ctx, &t, payload, capacity, &size), "encode with '" + name + "'");
      return size;
    };
    probe.decode = [codec, &name](uint64_t offset, const void* payload, uint64_t size, float* out, uint64_t count, bool acc) {
      gw_codec_context ctx = GW_CODEC_CONTEXT_INIT;
      ctx.seed = 7 + offset;
      gw_tensor t = GW_TENSOR_INIT;
      t.data = out;
      t.count = count;
      t.dtype = GW_DTYPE_F32;
      check(gw_codec_decode(codec, &ctx, payload, size, &t, acc ? GW_DECODE_ACCUMULATE : 0), "decode with '" + name + "'");
    };
    probes.push_back(std::move(probe));
  }
  gw_codec_properties props = GW_CODEC_PROPERTIES_INIT;
  check(gw_codec_get_properties(owners.front().get(), &props), "properties of '" + name + "'");
  const auto kind = gw::model::kind_of(name, props.flags & GW_CODEC_SPARSE, props.flags & GW_CODEC_SUMMABLE,
                                       props.flags & GW_CODEC_SHARED_INDICES);
  gw::model::CodecCost c;
  c.copies = double(probes.size());
  for (uint64_t bytes : codec_table_sizes(args)) {
    const int repetitions = spread_repetitions(args, uint64_t{512} << 20, bytes);
    const gw::model::CodecCost alone = gw::model::measure_codec(name, kind, probes.front(), bytes, chunk, repetitions);
    gw::model::CodecRates r{alone.encode, alone.decode, alone.decode_accumulate, 0, 0};
    if (probes.size() > 1) {
      const gw::model::CodecCost busy = gw::model::measure_codec(name, kind, probes, bytes, chunk, repetitions);
      r.encode_all_cores = busy.encode;
      r.decode_all_cores = busy.decode;
    }
    c.name = alone.name, c.kind = alone.kind, c.ratio = alone.ratio;
    c.sizes.push_back(double(bytes));
    c.at_sizes.push_back(r);
  }
  // The codec's own figures are those of --bytes, the table's last size.
  const gw::model::CodecRates& own = c.at_sizes.back();
  c.encode = own.encode, c.decode = own.decode, c.decode_accumulate = own.decode_accumulate;
  c.encode_all_cores = own.encode_all_cores, c.decode_all_cores = own.decode_all_cores;
  if (c.sizes.size() == 1) c.sizes.clear(), c.at_sizes.clear();
  if (kind == gw::model::CodecKind::Sparse) {
    // The sparse allgather's combining by rank count (measure_sparse_combine), on at most 64 MiB: its
    // pieces are combined one after another, so the buffer's size matters little and 8 gradients' encodes
    // stay short.
    const uint64_t bytes = std::min<uint64_t>(args.bytes, uint64_t{64} << 20);
    c.gather_ranks = {2, 4, 8};
    c.gather_seconds = gw::model::measure_sparse_combine(probes.front(), c.gather_ranks, bytes, chunk,
                                                         spread_repetitions(args, uint64_t{256} << 20, bytes));
  }
  return c;
}

// The codec's costs as JSON (CodecCost's keys), its table as one array per cost, and back.
json codec_json(const gw::model::CodecCost& c) {
  json j = {{"name", c.name}, {"kind", gw::model::kind_name(c.kind)}, {"ratio", c.ratio}, {"copies", c.copies},
            {"encode", c.encode}, {"decode", c.decode}, {"decode_accumulate", c.decode_accumulate},
            {"encode_all_cores", c.encode_all_cores}, {"decode_all_cores", c.decode_all_cores},
            {"table_bytes", c.sizes}, {"table", json::array()},
            {"gather_ranks", c.gather_ranks}, {"gather_seconds", c.gather_seconds}};
  for (const gw::model::CodecRates& r : c.at_sizes)
    j["table"].push_back({r.encode, r.decode, r.decode_accumulate, r.encode_all_cores, r.decode_all_cores});
  return j;
}

gw::model::CodecCost codec_from_json(const json& j) {
  gw::model::CodecCost c{j["name"], *gw::model::kind_from_name(j["kind"]), j["ratio"], j["encode"], j["decode"],
                         j["decode_accumulate"]};
  c.encode_all_cores = j["encode_all_cores"];
  c.decode_all_cores = j["decode_all_cores"];
  c.copies = j["copies"];
  c.sizes = j["table_bytes"].get<std::vector<double>>();
  for (const json& r : j["table"]) c.at_sizes.push_back({r[0], r[1], r[2], r[3], r[4]});
  c.gather_ranks = j.value("gather_ranks", std::vector<double>{});
  c.gather_seconds = j.value("gather_seconds", std::vector<double>{});
  return c;
}

// Passes over shared memory's message tables, each by ranks of its own, each size the median of the
// passes: a shared machine has busy phases longer than one pass, and one pass's 16 MiB exchange over
// shared memory read 2.2 to 3.1 ms across calibrations of one hour.
constexpr int kTablePasses = 3;

// alpha and beta of one UCX transport, for shared memory its tables, and (into *call) what a collective
// call costs beyond its message (bench::LinkPasses).
gw::model::Link measure_link(const std::string& tls, const std::string& config, double* call) {
  bench::LinkPasses passes(tls, config);
  for (int p = 0; p < (tls == "shm" ? kTablePasses : 1); ++p) passes.pass();
  return passes.fit(call);
}

// gamma, the sum by buffer size, and every codec's costs, measured in this process.
json measure_cpu(const CalibrateArgs& args) {
  RuntimePtr rt = open_runtime(args.config);
  const uint64_t chunk = 1 << 20;  // [collectives] pipeline_chunk_bytes' default
  json out = {{"gamma", gw::model::measure_gamma(args.bytes, spread_repetitions(args, uint64_t{1} << 30, args.bytes))},
              {"codecs", json::array()}};
  out["sums"] = bench::measure_sum_table();
  for (const std::string& name : args.codecs.empty() ? codec_names(rt.get()) : split(args.codecs)) {
    out["codecs"].push_back(codec_json(measure(rt.get(), name, args, chunk)));
  }
  return out;
}

// The same in `n` processes at once (ranks sharing the cores), the median of each figure over them.
json measure_cpu_concurrently(const CalibrateArgs& args, int n) {
  if (n <= 1) return measure_cpu(args);
  std::vector<std::pair<pid_t, int>> children;
  std::fflush(nullptr);
  for (int i = 0; i < n; ++i) {
    int fds[2];
    if (pipe(fds) != 0) throw std::runtime_error("pipe failed");
    const pid_t pid = fork();
    if (pid < 0) throw std::runtime_error("fork failed");
    if (pid == 0) {
      close(fds[0]);
      int status = 0;
      try {
        const std::string text = measure_cpu(args).dump();
        status = write(fds[1], text.data(), text.size()) == ssize_t(text.size()) ? 0 : 1;
      } catch (const std::exception& e) {
        std::fprintf(stderr, "gradwire calibrate: %s\n", e.what());
        status = 1;
      }
      _exit(status);
    }
    close(fds[1]);
    children.emplace_back(pid, fds[0]);
  }
  std::vector<json> results;
  bool failed = false;
  for (const auto& [pid, fd] : children) {
    std::string text;
    char buf[4096];
    for (ssize_t got; (got = read(fd, buf, sizeof buf)) > 0;) text.append(buf, size_t(got));
    close(fd);
    int status = 0;
    waitpid(pid, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || text.empty()) {
      failed = true;
      continue;
    }
    results.push_back(json::parse(text));
  }
  if (failed || results.empty()) throw std::runtime_error("a measuring process failed (messages above)");
  const auto median = [&](const std::function<double(const json&)>& pick) {
    std::vector<double> v;
    for (const json& r : results) v.push_back(pick(r));
    return bench::summarize(v).median;
  };
  json all = results.front();
  all["gamma"] = median([](const json& r) { return r["gamma"].get<double>(); });
  for (size_t i = 0; i < all["sums"].size(); ++i)
    all["sums"][i] = median([&](const json& r) { return r["sums"][i].get<double>(); });
  for (size_t c = 0; c < all["codecs"].size(); ++c) {
    for (const char* k : {"encode", "decode", "decode_accumulate", "encode_all_cores", "decode_all_cores"})
      all["codecs"][c][k] = median([&](const json& r) { return r["codecs"][c][k].get<double>(); });
    for (size_t i = 0; i < all["codecs"][c]["gather_seconds"].size(); ++i)
      all["codecs"][c]["gather_seconds"][i] =
          median([&](const json& r) { return r["codecs"][c]["gather_seconds"][i].get<double>(); });
    json& table = all["codecs"][c]["table"];
    for (size_t i = 0; i < table.size(); ++i)
      for (size_t k = 0; k < table[i].size(); ++k)
        table[i][k] = median([&](const json& r) { return r["codecs"][c]["table"][i][k].get<double>(); });
  }
  return all;
}

// The measurements of this host (every codec, the sum, the local links), as a model.
gw::model::Model calibrate_here(const CalibrateArgs& args) {
  gw::model::Model m;
  const int hw = int(std::max(1u, std::thread::hardware_concurrency()));
  // Numbers measured with `concurrent` processes at once already include their sharing of the cores:
  // the model's cores count how many ranks a node runs before they take turns more than that.
  m.machine.cores = std::max(hw, args.concurrent);
  const json cpu = measure_cpu_concurrently(args, args.concurrent);
  m.machine.gamma = cpu["gamma"];
  for (size_t i = 0; i < cpu["sums"].size(); ++i) {
    m.machine.sum_sizes.push_back(double(bench::sum_table_sizes()[i]));
    m.machine.sum_seconds.push_back(cpu["sums"][i].get<double>());
  }
  std::cout << "gradwire calibrate: " << hw << " cores, " << std::max(1, args.concurrent)
            << " process(es) measuring at once, " << codec_threads_of(args) << " copies of each codec at once as well, sum "
            << std::setprecision(3) << 1e-9 / m.machine.gamma << " GB/s (f32 bytes)";
  for (size_t i = 0; i < m.machine.sum_sizes.size(); ++i)
    std::cout << (i == 0 ? "; buffers of " : ", ") << uint64_t(m.machine.sum_sizes[i]) / 1024 << " KiB "
              << 1e-9 / m.machine.sum_seconds[i];
  std::cout << (m.machine.sum_sizes.empty() ? "" : " GB/s") << "\n";
  std::cout << std::left << std::setw(10) << "codec" << std::setw(16) << "kind" << std::right << std::setw(10) << "ratio"
            << std::setw(14) << "encode GB/s" << std::setw(14) << "decode GB/s" << std::setw(14) << "adding GB/s"
            << "   all cores at once: encode, decode GB/s\n";
  for (const json& j : cpu["codecs"]) {
    const gw::model::CodecCost c = codec_from_json(j);
    // GB/s of f32 bytes (a sparse codec's decode is per payload byte).
    const auto gbps = [&](double s_per_byte, bool decode) {
      const double s = decode && c.kind == gw::model::CodecKind::Sparse ? s_per_byte / c.ratio : s_per_byte;
      return s > 0 ? 1e-9 / s : 0;
    };
    // One row: the codec's own costs, or (blank name and ratio) its table's at one size.
    const auto row = [&](const std::string& name, const std::string& what, const std::string& ratio,
                         const gw::model::CodecRates& r) {
      std::cout << std::left << std::setw(10) << name << std::setw(16) << what << std::right << std::setw(10)
                << ratio << std::setprecision(4) << std::setw(14) << gbps(r.encode, false) << std::setw(14)
                << gbps(r.decode, true) << std::setw(14) << gbps(r.decode_accumulate, false);
      if (r.encode_all_cores > 0)
        std::cout << std::setw(14) << gbps(r.encode_all_cores, false) << std::setw(14) << gbps(r.decode_all_cores, true);
      std::cout << "\n";
    };
    std::ostringstream ratio;
    ratio << std::setprecision(4) << c.ratio;
    row(c.name, gw::model::kind_name(c.kind), ratio.str(),
        {c.encode, c.decode, c.decode_accumulate, c.encode_all_cores, c.decode_all_cores});
    for (size_t i = 0; i + 1 < c.sizes.size(); ++i)  // the last size is the row above
      row("", bench::size_name(uint64_t(c.sizes[i]), " "), "", c.at_sizes[i]);
    for (size_t i = 0; i < c.gather_ranks.size(); ++i)
      std::cout << (i == 0 ? "          sparse allgather's combining, GB/s of the buffer: " : ", ")
                << c.gather_ranks[i] << " ranks " << std::setprecision(4) << 1e-9 / c.gather_seconds[i]
                << (i + 1 == c.gather_ranks.size() ? "\n" : "");
    m.codecs.push_back(c);
  }
  if (!m.codec("none")) m.codecs.insert(m.codecs.begin(), gw::model::CodecCost{"none", gw::model::CodecKind::Dense, 1, 0, 0});
  std::string how = "this machine";
  if (args.concurrent > 1) how += ", codecs measured in " + std::to_string(args.concurrent) + " processes at once";
  if (codec_threads_of(args) > 1)
    how += ", codecs also measured " + std::to_string(codec_threads_of(args)) + " copies at once";
  if (!args.no_links) {
    for (const char* tls : {"shm", "tcp"}) {
      try {
        double call = 0;
        gw::model::Link l = measure_link(tls, args.config, &call);
        std::string cpu_note;
        if (std::string(tls) == "shm") {
          // Shared memory moves bytes with the ranks' own copies: a byte costs a core the time it spends
          // on the link. Ranks that share cores then share it (the model stretches it by their number).
          l.cpu = l.beta;
          m.machine.call = call;
          std::ostringstream o;
          o << "; a collective call " << std::setprecision(3) << call * 1e6 << " us beyond its message";
          cpu_note = o.str();
        } else if (std::string(tls) == "tcp") {
          // The kernel's work per byte, from a plain TCP transfer whose ends block (UCX's ranks poll,
          // so their busy time says nothing about the bytes).
          l.cpu = bench::measure_loopback_tcp(256 << 20).cpu_s_per_byte;
          std::ostringstream o;
          o << ", " << std::setprecision(3) << l.cpu * 1e9 << " ns of CPU per byte";
          cpu_note = o.str();
        }
        l.origin = std::string("measured by gradwire calibrate between two ranks of this host over UCX ") + tls;
        m.links[tls] = l;
        std::cout << "link " << tls << ": alpha " << std::setprecision(3) << l.alpha * 1e6 << " us, "
                  << (l.beta > 0 ? 1e-6 / l.beta : 0) << " MB/s" << cpu_note << "\n";
        for (size_t i = 0; i < l.sizes.size(); ++i)
          std::cout << "  " << std::setw(9) << uint64_t(l.sizes[i]) << " bytes each way at once: " << std::setprecision(3)
                    << l.seconds[i] * 1e6 << " us; a ring's step with two ranks per core "
                    << l.crowded_seconds[i] * 1e6 << " us (summing " << l.crowded_summed_seconds[i] * 1e6
                    << "); a 2-rank ring's step " << l.ring_seconds[i] * 1e6 << " us (summing "
                    << l.ring_summed_seconds[i] * 1e6 << ")\n";
      } catch (const std::exception& e) {
        std::cout << "link " << tls << ": not measured (" << e.what() << ")\n";
      }
    }
  }
  if (!m.links.count("shm") && m.links.count("tcp")) m.intra = "tcp";
  // What TCP delivers of a nominal rate is learned across hosts (run_launched); a calibration of one host
  // takes the reference machine's, and says so.
  if (const gw::model::Model ref = gw::model::reference_model(); !ref.delivery.empty()) {
    m.delivery = ref.delivery;
    m.delivery.source = std::string("taken over from ") + gw::model::kReferenceModelName + ": " + ref.delivery.source;
    std::cout << "delivery of a nominal rate: not measured here (it needs two hosts); " << m.delivery.source << "\n";
  }
  const auto add_rate = [&](const std::string& rate, const std::string& name) {
    if (rate.empty()) return;
    const double bytes_per_s = gw::model::parse_rate(rate);
    const double alpha = m.links.count("tcp") ? m.links["tcp"].alpha : 50e-6;
    const double link_cpu = m.links.count("tcp") ? m.links["tcp"].cpu : 0;  // this machine's TCP stack drives it
    gw::model::Link l = gw::model::at_nominal_rate(gw::model::Link{alpha, 1 / bytes_per_s, link_cpu}, bytes_per_s,
                                                   m.delivery);
    l.origin = "not measured: " + l.origin + "; alpha and cpu from this host's tcp link (cpu times the factor)";
    m.links[name] = l;
    how += ", " + name + " link " + rate + " (nominal rate)";
    std::cout << "link " << name << ": alpha " << alpha * 1e6 << " us, " << 1e-6 / l.beta << " MB/s (" << l.origin << ")\n";
  };
  add_rate(args.inter_rate, "inter");
  add_rate(args.intra_rate, "intra");
  if (!args.inter_rate.empty()) m.inter = "inter";
  if (!args.intra_rate.empty()) m.intra = "intra";
  if (!m.links.count(m.inter) && m.links.count("shm")) m.inter = "shm";
  const auto now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  m.source = std::string("gradwire calibrate on ") + how + ", " + stamp + ", " + std::to_string(args.bytes) +
             " bytes per codec";
  return m;
}

// The ranks of a launched run (gradwire run, torchrun, mpirun): 0 or 1 where this process runs alone.
uint32_t launched_ranks() {
  for (const char* name : {"GW_WORLD_SIZE", "WORLD_SIZE", "OMPI_COMM_WORLD_SIZE", "PMI_SIZE"})
    if (const char* v = std::getenv(name); v && *v) return uint32_t(std::max(0, std::atoi(v)));
  return 0;
}

std::string utc_now() {
  const auto now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  return stamp;
}

// The share of a core a plain TCP flow keeps busy from which the cores, not the wire, are taken to pace
// it (calibrate across hosts; docs/cost-model.md, "A nominal rate").
constexpr double kCoresPaced = 0.25;

std::string mb_per_s(double seconds_per_byte) {
  std::ostringstream o;
  o << std::setprecision(4) << (seconds_per_byte > 0 ? 1e-6 / seconds_per_byte : 0) << " MB/s";
  return o.str();
}

// Under a launcher: every rank measures the link between hosts (bench::measure_cross_link); rank 0 then
// measures this host as well (unless --inter-only: it reads the model file, or starts from the reference
// model) and writes the model, the link "inter" its link between nodes, with where each figure came from.
int run_launched(const CalibrateArgs& args) {
  std::string nominal = args.nominal_rate;
  if (nominal.empty()) nominal = std::getenv("GW_LINK_RATE") ? std::getenv("GW_LINK_RATE") : "";
  const double nominal_bps = nominal.empty() ? 0 : gw::model::parse_rate(nominal);
  const uint64_t largest =
      args.link_bytes > 0 ? args.link_bytes
                          : uint64_t(std::clamp(0.3 * (nominal_bps > 0 ? nominal_bps : 125e6), 4e6, 64e6));
  bench::RankSetup setup;
  setup.config = args.config;
  setup.timeout_s = 120;
  uint32_t rank = 0;
  bench::CrossLink x;
  bench::run_rank(setup, [&](gw_runtime*, gw_comm* comm) {
    rank = gw_comm_rank(comm);
    x = bench::measure_cross_link(comm, largest);
    return json();
  });
  if (rank != 0) {
    std::cout << "gradwire calibrate: rank " << rank << " measured the link between hosts with rank 0, which writes "
              << args.output << "\n";
    return 0;
  }
  gw::model::Model m;
  if (args.inter_only) {
    std::string used, note;
    m = gw::model::load_or_reference("", args.output, &used, &note);
    // The reference machine's delivery is not this cluster's: the measurement below replaces it.
    if (used == gw::model::kReferenceModelName && !m.delivery.empty())
      m.delivery.source = std::string("taken over from ") + gw::model::kReferenceModelName + ": " + m.delivery.source;
    std::cout << "gradwire calibrate: the link between hosts only, into " << note << "\n";
  } else {
    m = calibrate_here(args);
  }
  const double beta = std::max(x.beta_out, x.beta_in);
  const double host_cpu = m.links.count("tcp") ? m.links.at("tcp").cpu : 0;  // loopback TCP on this host
  // The plain transfer keeps the cores busy where they, not the wire, pace TCP (kCoresPaced of a core or
  // more): its busy time per byte is then what the stack costs over this path, and its rate what the wire
  // carried with a core at each end. Below that, the busy time is mostly the machine's background, and
  // the communicator's sweep gives the wire's rate.
  const double busy_cores = x.tcp_cpu_s_per_byte * x.tcp_bytes_per_s;
  const bool cores_pace = busy_cores >= kCoresPaced && x.tcp_bytes_per_s > 0;
  gw::model::Link l;
  l.alpha = x.alpha;
  l.beta = cores_pace ? 1 / x.tcp_bytes_per_s : beta;
  l.cpu = cores_pace ? x.tcp_cpu_s_per_byte : host_cpu;
  if (x.all_to_all_bytes_per_s > 0) l.all_to_all_beta = 1 / x.all_to_all_bytes_per_s;
  const std::string stamp = utc_now();
  std::ostringstream origin;
  origin << std::setprecision(3) << "measured by gradwire calibrate across hosts, " << stamp << ": ranks 0 and 1 over the "
         << "configured transport, alpha from a ping-pong of 8 B, beta the slower direction of messages up to "
         << x.largest / 1048576.0 << " MiB (out " << mb_per_s(x.beta_out) << ", back " << mb_per_s(x.beta_in) << ")";
  if (x.all_to_all_bytes_per_s > 0)
    origin << "; all-to-all of " << x.ranks << " ranks over TCP " << x.all_to_all_bytes_per_s / 1e6 << " MB/s per host";
  origin << "; one plain TCP flow " << x.tcp_bytes_per_s / 1e6 << " MB/s keeping " << busy_cores << " cores busy";
  if (cores_pace)
    origin << " (the cores pace it: beta from that flow, cpu its busy time per byte, "
           << (host_cpu > 0 ? x.tcp_cpu_s_per_byte / host_cpu : 0) << " times this host's tcp link's)";
  else
    origin << "; cpu " << (host_cpu > 0 ? "from this host's tcp link" : "not measured");
  if (!nominal.empty()) origin << "; nominal rate " << nominal;
  l.origin = origin.str();
  m.links["inter"] = l;
  m.inter = "inter";
  std::cout << "link inter: alpha " << std::setprecision(3) << l.alpha * 1e6 << " us, " << mb_per_s(l.beta) << " ("
            << l.origin << ")\n";
  if (nominal_bps > 0) {
    const double flow = 1 / l.beta / nominal_bps;
    const double all = x.all_to_all_bytes_per_s > 0 ? x.all_to_all_bytes_per_s / nominal_bps : 0;
    const double cpu = cores_pace && host_cpu > 0 ? x.tcp_cpu_s_per_byte / host_cpu : 0;
    if (m.delivery.source.rfind("taken over", 0) == 0) m.delivery = {};  // measured here: this machine's own
    gw::model::add_delivery(m.delivery, nominal_bps, flow, all, cpu);
    std::ostringstream d;
    d << std::setprecision(3) << nominal << ": " << flow * 100 << " %";
    if (all > 0) d << ", all-to-all of " << x.ranks << " ranks " << all * 100 << " %";
    if (cpu > 0) d << ", TCP CPU per byte " << cpu << " times the host's";
    m.delivery.source = (m.delivery.source.empty() ? std::string("measured by gradwire calibrate across hosts at ")
                                                   : m.delivery.source + "; ") +
                        d.str() + " (" + stamp + ")";
    std::cout << "delivery of a nominal rate: TCP delivered " << d.str() << " of " << nominal
              << " (the model applies it where it is given only a nominal rate)\n";
  } else {
    std::cout << "no nominal rate known (--nominal-rate, or GW_LINK_RATE from gradwire run --link): the delivery of "
                 "a nominal rate is not learned from this link\n";
  }
  m.source += "; link inter measured across hosts " + stamp;
  gw::model::save(m, args.output);
  std::cout << "wrote " << args.output << " (intra link " << m.intra << ", inter link " << m.inter << ", measured)\n";
  return 0;
}

int run(const CalibrateArgs& args) {
  if (launched_ranks() >= 2) return run_launched(args);
  if (args.inter_only)
    throw std::invalid_argument("--inter-only measures the link between hosts, which needs a launched run of 2 ranks or "
                                "more on different hosts (gradwire run -n 2 --link RATE -- gradwire calibrate "
                                "--inter-only, torchrun, mpirun)");
  const gw::model::Model m = calibrate_here(args);
  gw::model::save(m, args.output);
  std::cout << "wrote " << args.output << " (intra link " << m.intra << ", inter link " << m.inter << ")\n";
  return 0;
}

}  // namespace

int run_calibrate(const CalibrateArgs& args) { return run(args); }

}  // namespace gwcli
