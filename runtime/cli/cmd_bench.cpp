// `gradwire bench [--suite P1,P4] [--json] [--out FILE]`: the command line of the benchmark runner
// (bench/suites/runner.cpp): every figure a ratio against a peer measured in the same run.
#include <memory>

#include "commands.hpp"
#include "suites/runner.hpp"

namespace gwcli {

void add_bench_command(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand("bench", "Measure collectives and codecs against their peers (ratio > 1: gradwire better)");
  auto args = std::make_shared<bench::RunArgs>();
  cmd->add_option("--suite", args->suites,
                  "Comma-separated suites (P1,P2,...); default all P1-P8. P9, T1-T5, C1 or validation (alone): "
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
  cmd->callback([&exit_code, args] { exit_code = bench::run(*args); });
}

}  // namespace gwcli
