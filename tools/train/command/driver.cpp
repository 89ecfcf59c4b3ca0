// `gradwire train`'s driver: without --worker the command re-executes itself under `gradwire run -n N`
// (with --link: in the emulated cluster) once per configuration, then builds the table and the picture
// from each configuration's OUT/NAME.json (command.hpp).
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>

#include "support/cluster.hpp"
#include "support/plot.hpp"
#include "support/process.hpp"
#include "support/tool.hpp"
#include "train/command/command.hpp"

namespace gwcli::train {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

// Runs `gradwire run -n N -- gradwire train --worker NAME ...` and returns its exit status.
int launch(const Options& o, const std::string& name) {
  const std::string self = self_path("train");
  const uint32_t servers = find_configuration(name).ps_servers;  // extra ranks of a parameter server
  std::vector<std::string> args{self, "run", "-n", std::to_string(o.ranks + int(servers))};
  if (!o.link.empty()) args.insert(args.end(), {"--link", o.link});
  if (o.elastic > 0) args.push_back("--elastic=" + std::to_string(o.elastic));
  args.insert(args.end(), {"--", self, "train", "--worker", name,
                                "--epochs", std::to_string(o.epochs), "--batch", std::to_string(o.batch),
                                "--lr", std::to_string(o.lr), "--momentum", std::to_string(o.momentum),
                                "--seed", std::to_string(o.seed), "--hidden", o.hidden, "--data", o.data,
                                "--out", o.out, "--evals-per-epoch", std::to_string(o.evals_per_epoch),
                                "--train-images", std::to_string(o.train_images),
                                "--test-images", std::to_string(o.test_images),
                                "--slow-rank", std::to_string(o.slow_rank),
                                "--slow-factor", std::to_string(o.slow_factor),
                                "--staleness", std::to_string(o.staleness)});
  if (!o.config_file.empty()) args.insert(args.end(), {"--config", o.config_file});
  if (o.cache) args.push_back("--cache");
  if (o.cache_node_shared) args.push_back("--cache-node-shared");
  if (o.slow_storage > 0) args.insert(args.end(), {"--slow-storage", std::to_string(o.slow_storage)});
  if (o.elastic > 0) args.insert(args.end(), {"--elastic", std::to_string(o.elastic)});
  if (o.kill_rank >= 0)
    args.insert(args.end(), {"--kill-rank", std::to_string(o.kill_rank), "--kill-step", std::to_string(o.kill_step)});
  return run_and_wait(args, SpawnOptions{}, "gradwire train");
}

}  // namespace

void run_driver(const Options& o) {
  std::vector<std::string> names = split_list(o.configs);
  if (names.empty()) throw Failure(GW_ERR_INVALID_ARGUMENT, "train: --configs is empty; give e.g. --configs none");
  { RuntimePtr check_config = open_runtime(o.config_file); }  // an invalid TOML file (its own line numbers)
  for (const auto& n : names) {
    const Configuration& c = find_configuration(n);
    if ((o.cache || o.cache_node_shared) && c.ps_servers > 0)
      throw Failure(GW_ERR_INVALID_ARGUMENT, "train: --cache does not work with the parameter-server configuration '" + n +
                                                 "' (its server ranks do not draw batches, and gw_cache_get is collective)");
    if (o.elastic > 0 && (c.ps_servers > 0 || o.cache))
      throw Failure(GW_ERR_INVALID_ARGUMENT, "train: --elastic works with the configurations of one synchronizer without "
                                             "--cache, not with '" + n + "'" + (o.cache ? " and --cache" : "") +
                                             " (a parameter server's ranks and the data cache are fixed sets)");
    // Codecs and schedules exist.
    RuntimePtr check_overlay = open_runtime_text(configuration_toml(o.config_file, c, o.momentum, o.elastic > 0));
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
    const fs::path final_path = fs::path(o.out) / (name + ".final.json");  // a parameter server's final model
    fs::remove(result_path, ec);
    fs::remove(final_path, ec);
    const int status = launch(o, name);
    if (status != 0)
      throw Failure(GW_ERR_INTERNAL, "train: configuration '" + name + "' failed: its ranks exited with status " +
                                         std::to_string(status) + " (their messages are above)");
    std::ifstream in(result_path);
    if (!in) throw Failure(GW_ERR_INTERNAL, "train: configuration '" + name + "' left no result in " + result_path.string());
    json result = json::parse(in);
    if (std::ifstream final_in(final_path); final_in) {
      result["final_model"] = json::parse(final_in);
      std::ofstream(result_path) << result.dump(1) << "\n";
      fs::remove(final_path, ec);
    }
    rows.push_back(summarize(name, result));
  }

  const std::string text = table(rows, o);
  std::printf("\n%s", text.c_str());
  std::ofstream(fs::path(o.out) / "table.txt") << text;
  std::vector<gwtrain::Series> series;
  for (const auto& r : rows) {
    gwtrain::Series s{r.name, {}, {}, {}};
    for (const auto& p : r.result.at("curve")) {
      s.bytes.push_back(p.at("bytes").get<double>());
      s.seconds.push_back(p.at("seconds").get<double>());
      s.accuracy.push_back(p.at("test_accuracy").get<double>());
    }
    series.push_back(std::move(s));
  }
  const fs::path svg = fs::path(o.out) / "train.svg";
  std::ofstream(svg) << gwtrain::accuracy_svg(series, kReferenceAccuracy, kReferenceLabel);
  std::printf("wrote %s and %s\n", (fs::path(o.out) / "table.txt").c_str(), svg.c_str());
}

}  // namespace gwcli::train
