// The first process of `gradwire train`: checks everything before any rank starts, runs each
// configuration's ranks under `gradwire run`, and turns their results into the table and the picture.
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "cluster.hpp"
#include "process.hpp"
#include "train_cmd/train_cmd.hpp"

namespace gwcli::train {
namespace {

namespace fs = std::filesystem;

// Runs `gradwire run -n N -- gradwire train --worker NAME ...` and returns its exit status.
int launch(const Options& o, const std::string& name) {
  const std::string self = self_path("train");
  std::vector<std::string> args{self, "run", "-n", std::to_string(o.ranks)};
  if (!o.link.empty()) args.insert(args.end(), {"--link", o.link});
  args.insert(args.end(), {"--", self, "train", "--worker", name,
                                "--epochs", std::to_string(o.epochs), "--batch", std::to_string(o.batch),
                                "--lr", std::to_string(o.lr), "--momentum", std::to_string(o.momentum),
                                "--seed", std::to_string(o.seed), "--hidden", o.hidden, "--data", o.data,
                                "--out", o.out, "--evals-per-epoch", std::to_string(o.evals_per_epoch),
                                "--train-images", std::to_string(o.train_images),
                                "--test-images", std::to_string(o.test_images)});
  if (!o.config_file.empty()) args.insert(args.end(), {"--config", o.config_file});
  return run_and_wait(args, {}, "gradwire train");
}

}  // namespace

void run_driver(const Options& o) {
  std::vector<std::string> names = split_list(o.configs);
  if (names.empty()) throw Failure(GW_ERR_INVALID_ARGUMENT, "train: --configs is empty; give e.g. --configs none");
  { RuntimePtr check_config = open_runtime(o.config_file); }  // an invalid TOML file (its own line numbers)
  for (const auto& n : names) {
    const Configuration& c = find_configuration(n);
    RuntimePtr check_overlay = open_runtime_text(configuration_toml(o.config_file, c));  // codecs and schedules exist
  }
  if (!o.link.empty()) gwcli::Cluster::check_rate(o.link, "train");
  train_options(o);  // bad option values fail here, before any rank starts
  if (o.batch % uint32_t(o.ranks) != 0)
    throw Failure(GW_ERR_INVALID_ARGUMENT, "train: the global batch (" + std::to_string(o.batch) +
                                               ") must be a multiple of the " + std::to_string(o.ranks) +
                                               " ranks, so every rank takes an equal shard");
  const gwtrain::Dataset data = load_data(o.data);              // and a missing or corrupt data set
  std::printf("Fashion-MNIST: %u training and %u test images of %ux%u from %s\n", data.train.count, data.test.count,
              data.train.rows, data.train.cols, o.data.c_str());
  std::error_code ec;
  fs::create_directories(o.out, ec);
  if (ec) throw Failure(GW_ERR_INVALID_ARGUMENT, "train: cannot create the output directory " + o.out + ": " + ec.message());

  std::vector<Row> rows;
  for (const auto& name : names) {
    std::printf("== %s: %s (%d ranks)\n", name.c_str(), find_configuration(name).help, o.ranks);
    const fs::path result_path = fs::path(o.out) / (name + ".json");
    fs::remove(result_path, ec);
    const int status = launch(o, name);
    if (status != 0)
      throw Failure(GW_ERR_INTERNAL, "train: configuration '" + name + "' failed: its ranks exited with status " +
                                         std::to_string(status) + " (their messages are above)");
    std::ifstream in(result_path);
    if (!in) throw Failure(GW_ERR_INTERNAL, "train: configuration '" + name + "' left no result in " + result_path.string());
    rows.push_back(summarize(name, json::parse(in)));
  }

  const std::string text = table(rows, o);
  std::printf("\n%s", text.c_str());
  std::ofstream(fs::path(o.out) / "table.txt") << text;
  const fs::path svg = fs::path(o.out) / "train.svg";
  std::ofstream(svg) << picture(rows);
  std::printf("wrote %s and %s\n", (fs::path(o.out) / "table.txt").c_str(), svg.c_str());
}

}  // namespace gwcli::train
