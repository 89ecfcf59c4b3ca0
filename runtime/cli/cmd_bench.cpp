// `gradwire bench [--suite P1,P4] [--json] [--out FILE]`: every figure a ratio against a peer measured in
// the same run.
#include <cstdlib>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <set>

#include "suites/bench.hpp"
#include "suites/harness.hpp"
#include "suites/run_info.hpp"
#include "commands.hpp"

namespace gwcli {
namespace {

struct BenchArgs {
  std::string suites;
  bool json = false;
  std::string out;  // a result file: the run's machine, command and commit, and every result
  bench::Options options;
  std::vector<std::string> harness_args;  // after --: bench/run.py's benchmark's own options
};

void print_row(const bench::Result& r) {
  std::cout << std::left << std::setw(4) << r.suite << std::setw(34) << r.case_name << std::right << std::setw(12)
            << std::setprecision(4) << r.ours << std::setw(12) << r.peer << "  " << std::left << std::setw(8) << r.unit
            << std::setw(16) << r.peer_name << std::right << std::setw(8) << std::setprecision(3) << r.ratio;
  if (r.extra.contains("target")) {
    const auto& target = r.extra["target"];
    std::cout << "  target " << (target.is_string() ? target.get<std::string>() : target.dump());
  }
  std::cout << "\n";
}

int run(const BenchArgs& args) {
  std::set<std::string> wanted;
  for (size_t start = 0; start < args.suites.size();) {
    size_t comma = args.suites.find(',', start);
    if (comma == std::string::npos) comma = args.suites.size();
    if (comma > start) wanted.insert(args.suites.substr(start, comma - start));
    start = comma + 1;
  }
  std::set<std::string> known;
  for (const auto& s : bench::suites()) known.insert(s.id);
  // P9, T1-T5, C1, validation: bench/run.py's harness, one at a time.
  for (const auto& h : bench::harness_benchmarks())
    if (wanted.count(h)) {
      if (wanted.size() != 1) {
        std::cerr << "gradwire bench: " << h << " runs alone (bench/run.py " << h << "); give --suite " << h
                  << " by itself\n";
        return 2;
      }
      return bench::run_harness(h, args.harness_args);
    }
  if (!args.harness_args.empty()) {
    std::cerr << "gradwire bench: options after -- are for the harness benchmarks (--suite P9, T1-T5, C1 or "
                 "validation); the suites P1-P8 take the options above\n";
    return 2;
  }
  for (const auto& h : bench::harness_benchmarks()) known.insert(h);
  for (const auto& w : wanted)
    if (!known.count(w)) {
      std::cerr << "gradwire bench: unknown suite '" << w << "'; known:";
      for (const auto& k : known) std::cerr << " " << k;
      std::cerr << "\n";
      return 2;
    }
  const nlohmann::json info = bench::run_info();
  nlohmann::json results = nlohmann::json::array();
  if (!args.json)
    std::cout << std::left << std::setw(4) << "id" << std::setw(34) << "case" << std::right << std::setw(12) << "ours"
              << std::setw(12) << "peer" << "  " << std::left << std::setw(8) << "unit" << std::setw(16) << "peer name"
              << std::right << std::setw(8) << "ratio" << "\n";
  // --transport: every rank this run starts (forked, or through `gradwire run`) inherits the choice.
  if (!args.options.transport.empty()) setenv("GRADWIRE_TRANSPORT_INTER", args.options.transport.c_str(), 1);
  const bench::Emit emit = [&](const bench::Result& given) {
    bench::Result r = given;
    if (!args.options.transport.empty()) {
      r.case_name = args.options.transport + " " + r.case_name;
      r.extra["transport"] = args.options.transport;
    }
    nlohmann::json j = {{"suite", r.suite}, {"case", r.case_name}, {"ours", r.ours},  {"peer", r.peer},
                        {"unit", r.unit},   {"ratio", r.ratio},    {"peer_name", r.peer_name}};
    for (auto& [k, v] : r.extra.items()) j[k] = v;
    if (!args.out.empty()) results.push_back(j);
    if (args.json) {
      // Every line stands alone: a consumer that keeps one line keeps where and how it was measured.
      j["run"] = info;
      std::cout << j.dump() << std::endl;
    } else {
      print_row(r);
      std::cout.flush();
    }
  };
  nlohmann::json ran = nlohmann::json::array();
  for (const auto& s : bench::suites())
    if (wanted.empty() || wanted.count(s.id)) {
      s.run(args.options, emit);
      ran.push_back(s.id);
    }
  if (!args.out.empty()) {
    nlohmann::json document = info;
    document["suites"] = ran;
    document["results"] = results;
    std::ofstream file(args.out);
    file << document.dump(2) << "\n";
    if (!file) {
      std::cerr << "gradwire bench: cannot write " << args.out << "\n";
      return 1;
    }
  }
  return 0;
}

}  // namespace

void add_bench_command(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand("bench", "Measure collectives and codecs against their peers (ratio > 1: gradwire better)");
  auto args = std::make_shared<BenchArgs>();
  cmd->add_option("--suite", args->suites,
                  "Comma-separated suites (P1,P2,...); default all P1-P8. T1, T2, T4, T5, C1 or validation (alone): "
                  "the source tree's bench/run.py runs it, options after -- handed to it");
  cmd->add_flag("--json", args->json,
                "One JSON object per result and line, each with \"run\": the machine, command and commit");
  cmd->add_option("--out", args->out,
                  "Also write a result file here (JSON: machine, command, commit, results; bench/results/)");
  cmd->add_option("--repetitions", args->options.repetitions, "Timed repetitions per case (median reported)")
      ->check(CLI::Range(1, 1000));
  cmd->add_flag("--quick", args->options.quick, "Small sizes: a smoke run");
  cmd->add_option("--config", args->options.config, "TOML file for the runtime");
  cmd->add_option("--link", args->options.link, "Place ranks behind emulated links of this rate (e.g. 1gbit; P5, P8: a list)");
  cmd->add_option("--transport", args->options.transport,
                  "Transport plugin the ranks use ([transport] inter, e.g. tcp_example); default: the configuration's");
  cmd->add_option("--ranks", args->options.ranks, "P5, P8: ranks (default 4)")->check(CLI::Range(2, 64));
  cmd->add_option("--bytes", args->options.bytes, "P5, P8: f32 bytes of the whole buffer (default 100 MB)")
      ->check(CLI::Range(uint64_t{4096}, uint64_t{1} << 34));
  cmd->add_option("--model", args->options.model, "P4, P5, P7: a cost model (gradwire calibrate) whose predictions to add");
  cmd->add_option("args", args->harness_args, "With --suite P9, T1-T5, C1 or validation: that benchmark's options (after --)");
  cmd->callback([&exit_code, args] { exit_code = run(*args); });
}

}  // namespace gwcli
