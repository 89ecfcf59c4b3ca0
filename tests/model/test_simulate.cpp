// `gradwire simulate` end to end: a model file written here, predictions for 8 to 100 000 ranks as JSON,
// the fastest choice, the verdict on compression, the SVG picture, and clear errors for bad input.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "gw_test.hpp"
#include "model/model.hpp"

namespace {

namespace fs = std::filesystem;

struct Dir {
  fs::path path = fs::temp_directory_path() / ("gw_sim_" + std::to_string(getpid()));
  Dir() { fs::create_directories(path); }
  ~Dir() { fs::remove_all(path); }
};

std::string write_model(const Dir& d) {
  gw::model::Model m;
  m.machine = {8, 1e-10};
  m.links["shm"] = {2e-6, 1e-10};   // 10 GB/s inside a node
  m.links["tcp"] = {3e-5, 8e-10};   // 1.25 GB/s between nodes
  m.intra = "shm";
  m.inter = "tcp";
  m.codecs = {{"none", gw::model::CodecKind::Dense, 1, 0, 0},
              {"fp16", gw::model::CodecKind::Summable, 2, 2e-10, 2e-10},
              {"int8", gw::model::CodecKind::Quantized, 3.9, 3e-10, 3e-10},
              {"topk", gw::model::CodecKind::Sparse, 40, 2e-9, 1e-9}};
  m.source = "test";
  const std::string path = (d.path / "model.toml").string();
  gw::model::save(m, path);
  return path;
}

nlohmann::json run_json(const std::string& args) {
  const auto r = gwtest::run_command(std::string(GW_CLI) + " simulate " + args + " --json");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  const size_t brace = r.output.find('{');
  EXPECT_NE(brace, std::string::npos) << r.output;
  return nlohmann::json::parse(r.output.substr(brace == std::string::npos ? 0 : brace));
}

}  // namespace

TEST(Simulate, PredictsEveryCodecFrom8To100000RanksWithAPicture) {
  Dir d;
  const std::string model = write_model(d), svg = (d.path / "sim.svg").string();
  const auto j = run_json("--model " + model + " --params 25M --ranks 8,1000,100000 --compute 0.1 --svg " + svg);
  ASSERT_EQ(j["points"].size(), 3u);
  for (const auto& p : j["points"]) {
    EXPECT_FALSE(p["fastest"].is_null());
    EXPECT_GT(p["fastest"]["step_s"].get<double>(), 0.0);
    EXPECT_FALSE(p["verdict"].get<std::string>().empty());
    // Every codec appears, with every schedule (every step and every 4 steps).
    std::set<std::string> codecs, schedules;
    for (const auto& r : p["rows"]) codecs.insert(r["codec"].get<std::string>()), schedules.insert(r["schedule"].get<std::string>());
    EXPECT_EQ(codecs.size(), 4u);
    EXPECT_EQ(schedules.size(), 2u);
  }
  // 100 000 ranks on 12 500 nodes: two-level appears, and beats the flat ring for uncompressed.
  double ring = 0, two = 0;
  for (const auto& r : j["points"][2]["rows"])
    if (r["codec"] == "none" && r["schedule"] == "every step") {
      if (r["algorithm"] == "ring") ring = r["step_s"];
      if (r["algorithm"] == "two-level") two = r["step_s"];
    }
  EXPECT_GT(ring, 0);
  EXPECT_GT(two, 0);
  EXPECT_LT(two, ring);
  std::ifstream in(svg);
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_NE(text.str().find("<svg"), std::string::npos);
  EXPECT_EQ(text.str().find("nan"), std::string::npos);
  EXPECT_NE(text.str().find("<polyline"), std::string::npos);
}

TEST(Simulate, RateSweepSaysWhereCompressionStopsPaying) {
  Dir d;
  const std::string model = write_model(d);
  const auto j = run_json("--model " + model + " --params 25M --ranks 16 --per-node 1 --inter-rates 100mbit,1gbit,100gbit,1000gbit");
  ASSERT_EQ(j["points"].size(), 4u);
  EXPECT_TRUE(j["points"][0]["compression_pays"].get<bool>()) << j["points"][0]["verdict"];
  EXPECT_FALSE(j["points"][3]["compression_pays"].get<bool>()) << j["points"][3]["verdict"];
  ASSERT_FALSE(j["notes"].empty());
  EXPECT_NE(j["notes"][0].get<std::string>().find("stops paying"), std::string::npos) << j["notes"][0];
}

TEST(Simulate, TorchJsonAndTensorListsAreFusedIntoBuckets) {
  Dir d;
  const std::string model = write_model(d), params = (d.path / "resnet.json").string();
  std::ofstream(params) << R"({"conv1.weight": 9408, "fc.weight": 2048000, "fc.bias": 1000})";
  const auto j = run_json("--model " + model + " --torch-json " + params + " --ranks 8");
  EXPECT_EQ(j["buckets"].get<int>(), 1);
  EXPECT_DOUBLE_EQ(j["bytes"].get<double>(), 4.0 * (9408 + 2048000 + 1000));
  const auto k = run_json("--model " + model + " --tensors 5M,5M,5M --bucket-bytes 25000000 --ranks 8");
  EXPECT_EQ(k["buckets"].get<int>(), 3);
}

TEST(Simulate, BadInputIsAClearError) {
  Dir d;
  const std::string model = write_model(d);
  const std::string cli = std::string(GW_CLI) + " simulate ";
  auto r = gwtest::run_command(cli + "--model " + (d.path / "missing.toml").string());
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("gradwire calibrate"), std::string::npos) << r.output;
  r = gwtest::run_command(cli + "--model " + model + " --params lots");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("--params"), std::string::npos) << r.output;
  r = gwtest::run_command(cli + "--model " + model + " --inter-rate fast");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("bad link rate"), std::string::npos) << r.output;
  r = gwtest::run_command(cli + "--model " + model + " --codecs int9");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("int9"), std::string::npos) << r.output;
  const std::string bad = (d.path / "bad.json").string();
  std::ofstream(bad) << R"({"w": "big"})";
  r = gwtest::run_command(cli + "--model " + model + " --torch-json " + bad);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("'w'"), std::string::npos) << r.output;
}

// A fresh install has no model file: simulate answers from the embedded reference model and says so on
// its first line; a model file in the working directory, or --model, takes its place.
TEST(Simulate, WithoutAModelFileUsesTheEmbeddedReferenceModelAndSaysSo) {
  Dir d;
  const std::string cli = "cd " + d.path.string() + " && " + std::string(GW_CLI) + " simulate ";
  auto r = gwtest::run_command(cli + "--bytes 100e6 --ranks 4 --per-node 1 --inter-rate 1gbit");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::string first = r.output.substr(0, r.output.find('\n'));
  EXPECT_NE(first.find(gw::model::kReferenceModelName), std::string::npos) << first;
  EXPECT_NE(first.find("gradwire calibrate"), std::string::npos) << first;
  for (const char* codec : {"none", "fp16", "int8", "onebit", "topk", "randomk"})
    EXPECT_NE(r.output.find(std::string(" ") + codec + " "), std::string::npos) << codec << "\n" << r.output;
  // --json: the note on stderr (first line), the model named in the object.
  r = gwtest::run_command("(" + cli + "--bytes 100e6 --ranks 4 --per-node 1 --json 2>/dev/null)");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto k = nlohmann::json::parse(r.output);
  EXPECT_EQ(k["model"], gw::model::kReferenceModelName);
  EXPECT_EQ(k["model_source"], gw::model::reference_model().source);
  // A model file where simulate runs replaces it.
  write_model(d);
  fs::rename(d.path / "model.toml", d.path / "gradwire-model.toml");
  r = gwtest::run_command("(" + cli + "--bytes 100e6 --ranks 4 --per-node 1 --json 2>/dev/null)");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(nlohmann::json::parse(r.output)["model"], "gradwire-model.toml");
}

namespace {

// calibrate measures both UCX links between two forked ranks and, for tcp, the CPU a plain loopback
// transfer costs per byte (a transfer always costs some: 0 would mean /proc/stat was not read); a
// rate-only link inherits tcp's.
// Codecs whose contributions are summed as they are decoded (summable, quantized, and none's copies)
// are also timed decoding onto a written buffer; a sparse codec's decode already adds.
TEST(Calibrate, TimesDecodingOntoABufferForSummedCodecs) {
  Dir d;
  const std::string file = (d.path / "codecs.toml").string();
  const auto r = gwtest::run_command(std::string(GW_CLI) +
                                     " calibrate --no-links --codecs none,fp16,int8,topk,randomk --bytes 2097152 "
                                     "--codec-threads 2 -o " + file);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const gw::model::Model m = gw::model::load(file);
  for (const char* name : {"none", "fp16", "int8"}) {
    ASSERT_NE(m.codec(name), nullptr) << name;
    EXPECT_GT(m.codec(name)->decode_accumulate, 0) << name << "\n" << r.output;
  }
  // "none" is the dense allreduce to the model, with its codec's copies measured (the two-level
  // allreduce and gw_allreduce_compressed run them).
  EXPECT_EQ(m.codec("none")->kind, gw::model::CodecKind::Dense);
  EXPECT_GT(m.codec("none")->encode, 0) << r.output;
  EXPECT_GT(m.codec("none")->decode, 0) << r.output;
  ASSERT_NE(m.codec("topk"), nullptr);
  EXPECT_EQ(m.codec("topk")->decode_accumulate, 0);
  EXPECT_NE(gwtest::read_file(file).find("decode_accumulate_s_per_byte"), std::string::npos);
  // Two copies at once as well: every codec's cost while the cores all run it.
  for (const char* name : {"none", "fp16", "int8", "topk", "randomk"}) {
    EXPECT_GT(m.codec(name)->encode_all_cores, 0) << name << "\n" << r.output;
    EXPECT_GT(m.codec(name)->decode_all_cores, 0) << name << "\n" << r.output;
  }
  EXPECT_NE(r.output.find("2 copies of each codec at once"), std::string::npos) << r.output;
  // Each codec's costs by buffer size as well: 1/16, 1/4, 1/2 and all of --bytes, the last its own.
  for (const char* name : {"none", "fp16", "int8", "topk", "randomk"}) {
    const gw::model::CodecCost& c = *m.codec(name);
    ASSERT_EQ(c.sizes, (std::vector<double>{131072, 524288, 1048576, 2097152})) << name;
    ASSERT_EQ(c.at_sizes.size(), 4u) << name;
    EXPECT_DOUBLE_EQ(c.copies, 2) << name;
    EXPECT_DOUBLE_EQ(c.at_sizes.back().encode, c.encode) << name;
    EXPECT_DOUBLE_EQ(c.at_sizes.back().decode_all_cores, c.decode_all_cores) << name;
    for (const gw::model::CodecRates& at : c.at_sizes) {
      EXPECT_GT(at.encode, 0) << name;
      EXPECT_GT(at.decode, 0) << name;
      EXPECT_GT(at.encode_all_cores, 0) << name;
      EXPECT_GT(at.decode_all_cores, 0) << name;
      EXPECT_EQ(at.decode_accumulate > 0, c.decode_accumulate > 0) << name;
    }
  }
  EXPECT_NE(r.output.find("128 KiB"), std::string::npos) << r.output;
}

// "Every codec plugin" leaves out a codec reduced in rounds (PowerSGD has no single-payload encode to
// time): calibrate without --codecs ends well and writes every other codec plugin found.
TEST(Calibrate, EveryCodecLeavesOutCodecsReducedInRounds) {
  Dir d;
  const std::string file = (d.path / "every.toml").string();
  const auto r = gwtest::run_command(std::string(GW_CLI) + " calibrate --no-links --bytes 65536 --codec-threads 1 -o " + file);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const gw::model::Model m = gw::model::load(file);
  EXPECT_EQ(m.codec("powersgd"), nullptr) << r.output;
  for (const char* name : {"none", "fp16", "bf16", "int8", "onebit", "topk", "randomk"})
    EXPECT_NE(m.codec(name), nullptr) << name << "\n" << r.output;
}

TEST(Calibrate, MeasuresTheLinksAndTheCpuTcpCostsPerByte) {
  Dir d;
  const std::string file = (d.path / "measured.toml").string();
  const auto r = gwtest::run_command(std::string(GW_CLI) + " calibrate --codecs none --bytes 65536 --inter-rate 1gbit -o " +
                                     file);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("ns of CPU per byte"), std::string::npos) << r.output;
  const gw::model::Model m = gw::model::load(file);
  const gw::model::Link& tcp = m.link("tcp");
  EXPECT_GT(tcp.beta, 0);
  EXPECT_GT(tcp.cpu, 0) << r.output;
  // What TCP costs the cores per byte over such a link: the host's σ times the delivery's CPU factor there.
  EXPECT_NEAR(m.link("inter").cpu, tcp.cpu * gw::model::cpu_factor_at(m.delivery, 1.25e8), 1e-6 * tcp.cpu);
  // The nominal rate at what the reference model's delivery says TCP delivers of it (a calibration of one
  // host takes that delivery), and the link says so.
  EXPECT_EQ(m.delivery.rates, gw::model::reference_model().delivery.rates);
  EXPECT_NEAR(m.link("inter").beta, 1 / (1.25e8 * gw::model::delivered_at(m.delivery, 1.25e8).first), 1e-15);
  EXPECT_NE(m.link("inter").origin.find("not measured: nominal rate 1 Gbit/s"), std::string::npos) << m.link("inter").origin;
  EXPECT_EQ(m.inter, "inter");
  // Shared memory: exchange times by message size, a ring's step with two ranks per core and a 2-rank
  // ring's step, each without and with its sums, and a call's own cost.
  // The sum by buffer size: 256 KiB to 64 MiB, each a positive cost.
  ASSERT_EQ(m.machine.sum_sizes.size(), 6u) << r.output;
  EXPECT_EQ(m.machine.sum_sizes.back(), double(64 << 20));
  for (double s : m.machine.sum_seconds) EXPECT_GT(s, 0) << r.output;
  const gw::model::Link& shm = m.link("shm");
  ASSERT_EQ(shm.sizes.size(), 13u) << r.output;
  ASSERT_EQ(shm.seconds.size(), 13u);
  ASSERT_EQ(shm.crowded_seconds.size(), 13u);
  ASSERT_EQ(shm.crowded_summed_seconds.size(), 13u);
  ASSERT_EQ(shm.ring_seconds.size(), 13u);
  ASSERT_EQ(shm.ring_summed_seconds.size(), 13u);
  // Up to 64 MiB each way (past a last-level cache that holds a 16 MiB exchange), β the slope from 1 MiB
  // to there where the time grows (the last size alone otherwise).
  EXPECT_EQ(shm.sizes.back(), double(64 << 20));
  const size_t mib = size_t(std::find(shm.sizes.begin(), shm.sizes.end(), double(1 << 20)) - shm.sizes.begin());
  ASSERT_LT(mib, shm.sizes.size());
  const double rise = shm.seconds.back() - shm.seconds[mib];
  const double slope = rise > 0 ? rise / double((64 << 20) - (1 << 20)) : shm.seconds.back() / double(64 << 20);
  EXPECT_NEAR(shm.beta, slope, 1e-6 * slope) << r.output;
  for (size_t i = 0; i < shm.sizes.size(); ++i) {
    EXPECT_GT(shm.seconds[i], 0) << i;
    EXPECT_GT(shm.crowded_seconds[i], 0) << i;
    EXPECT_GT(shm.crowded_summed_seconds[i], 0) << i;
    EXPECT_GT(shm.ring_seconds[i], 0) << i;
    EXPECT_GT(shm.ring_summed_seconds[i], 0) << i;
  }
  EXPECT_NE(r.output.find("a ring's step with two ranks per core"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("a 2-rank ring's step"), std::string::npos) << r.output;
  // A call's cost is a difference of two timings, clamped at 0 (on a loaded machine the fastest ping-pong
  // can take longer than the median allreduce): written, never negative.
  EXPECT_NE(r.output.find("a collective call"), std::string::npos) << r.output;
  EXPECT_GE(m.machine.call, 0) << r.output;
  EXPECT_NE(gwtest::read_file(file).find("call_s"), std::string::npos);
  EXPECT_TRUE(tcp.sizes.empty());
}

// bench P4 predicts from shared memory's tables and the machine's sums measured in its own run (one pass
// before each round), not from the file's: a file whose shared memory takes a millisecond per message
// and a microsecond per byte still gets predictions of the size this machine's exchanges have, and the
// file's own prediction is reported beside them.
TEST(BenchP4, PredictsFromSharedMemoryMeasuredInTheSameRun) {
  Dir d;
  gw::model::Model m;
  m.machine = {2, 1e-10};
  m.links["shm"] = {1e-3, 1e-6};
  m.codecs = {{"none", gw::model::CodecKind::Dense, 1, 0, 0}};
  m.source = "test";
  const std::string file = (d.path / "slow-shm.toml").string();
  gw::model::save(m, file);
  const auto r = gwtest::run_command(std::string(GW_CLI) + " bench --suite P4 --quick --repetitions 1 --json --model " + file);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::istringstream lines(r.output);
  int points = 0;
  for (std::string line; std::getline(lines, line);) {
    if (line.empty() || line.front() != '{') continue;
    const auto j = nlohmann::json::parse(line);
    ASSERT_TRUE(j.contains("predicted_ms") && j.contains("calibrated_predicted_ms")) << line;
    const double in_run = j["predicted_ms"], from_file = j["calibrated_predicted_ms"];
    EXPECT_GT(in_run, 0) << line;
    EXPECT_LT(in_run, 50) << line;       // 4 KiB and 1 MiB over this machine's shared memory
    EXPECT_GT(from_file, 1.0) << line;   // at least one millisecond-long message
    EXPECT_NEAR(double(j["error"]), (in_run - double(j["ours"])) / double(j["ours"]), 1e-6) << line;
    ++points;
  }
  EXPECT_EQ(points, 4) << r.output;  // 2 and 4 ranks, 4 KiB and 1 MiB
}

}  // namespace
