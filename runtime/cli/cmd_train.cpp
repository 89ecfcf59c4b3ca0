// `gradwire train`: data-parallel training of an MLP on Fashion-MNIST through libgradwire, once per
// configuration, then a table (accuracy, bytes per rank, compression ratio, time) and a picture.
//
// The command is its own launcher: without --worker it re-executes itself under `gradwire run -n N`
// (with --link: in the emulated cluster) once per configuration; every rank then runs
// `gradwire train --worker CONFIG ...`, creates a runtime from the user's TOML with the configuration's
// overlay merged over it, joins the others (gw_comm_create), registers the model's tensors with a
// synchronizer (gw_sync) and trains; rank 0 prints progress and writes OUT/CONFIG.json, from which the
// first process builds the table and OUT/train.svg.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>

#include "cluster.hpp"
#include "commands.hpp"
#include "process.hpp"
#include "train_command/command.hpp"
#include "train/plot.hpp"

namespace gwcli {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using namespace gwcli::train;

// Runs `gradwire run -n N -- gradwire train --worker NAME ...` and returns its exit status.
int launch(const Options& o, const std::string& name) {
  const std::string self = self_path("train");
  const uint32_t servers = find_configuration(name).ps_servers;  // extra ranks of a parameter server
  std::vector<std::string> args{self, "run", "-n", std::to_string(o.ranks + int(servers))};
  if (!o.link.empty()) args.insert(args.end(), {"--link", o.link});
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
  return run_and_wait(args, SpawnOptions{}, "gradwire train");
}

void run_driver(const Options& o) {
  std::vector<std::string> names = split_list(o.configs);
  if (names.empty()) throw Failure(GW_ERR_INVALID_ARGUMENT, "train: --configs is empty; give e.g. --configs none");
  { RuntimePtr check_config = open_runtime(o.config_file); }  // an invalid TOML file (its own line numbers)
  for (const auto& n : names) {
    const Configuration& c = find_configuration(n);
    if ((o.cache || o.cache_node_shared) && c.ps_servers > 0)
      throw Failure(GW_ERR_INVALID_ARGUMENT, "train: --cache does not work with the parameter-server configuration '" + n +
                                                 "' (its server ranks do not draw batches, and gw_cache_get is collective)");
    RuntimePtr check_overlay = open_runtime_text(configuration_toml(o.config_file, c, o.momentum));  // codecs and schedules exist
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

}  // namespace

void add_train_command(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand("train", "Data-parallel training of an MLP on Fashion-MNIST with local ranks, once per "
                                          "configuration: table of accuracy, bytes and time, and a picture");
  auto o = std::make_shared<Options>();
  cmd->add_option("--ranks", o->ranks, "Local ranks to start")->check(CLI::Range(1, 64))->capture_default_str();
  cmd->add_option("--epochs", o->epochs, "Passes over the training set")->check(CLI::Range(1, 1000))->capture_default_str();
  cmd->add_option("--batch", o->batch, "Global batch; each rank takes batch / ranks of it")
      ->check(CLI::Range(1, 60000))->capture_default_str();
  cmd->add_option("--lr", o->lr, "Peak learning rate (cosine decay to 0)")->check(CLI::Range(1e-6, 10.0))->capture_default_str();
  cmd->add_option("--momentum", o->momentum, "SGD momentum")->check(CLI::Range(0.0, 0.999))->capture_default_str();
  cmd->add_option("--seed", o->seed, "Seed of the initial weights and the data order")->capture_default_str();
  cmd->add_option("--hidden", o->hidden, "Hidden layer sizes, comma-separated")->capture_default_str();
  cmd->add_option("--config", o->config_file, "gradwire TOML file (transport, codec settings, ...)");
  cmd->add_option("--data", o->data, "Directory with the Fashion-MNIST IDX files (.gz or plain)")->capture_default_str();
  std::string list;
  for (const auto& c : configurations()) list += std::string("\n  ") + c.name + ": " + c.help;
  cmd->add_option("--configs", o->configs, "Configurations to run, comma-separated:" + list)->capture_default_str();
  cmd->add_option("--out", o->out, "Directory for table.txt, train.svg and one JSON per configuration")->capture_default_str();
  cmd->add_option("--evals-per-epoch", o->evals_per_epoch, "Test-set evaluations per epoch (points of the curve)")
      ->check(CLI::Range(1, 1000))->capture_default_str();
  cmd->add_option("--train-images", o->train_images, "Train on the first N images only (0: all 60000)")->capture_default_str();
  cmd->add_option("--test-images", o->test_images, "Evaluate on the first N test images only (0: all 10000)")->capture_default_str();
  cmd->add_option("--link", o->link,
                  "Train in the emulated cluster: every rank in its own network namespace behind a link of this "
                  "rate (1gbit, 10gbit, ...); needs root, else loopback (scripts/cluster.sh)");
  cmd->add_option("--slow-rank", o->slow_rank,
                  "A straggler: the training rank (worker index for ps-*) that sleeps (--slow-factor - 1) x its "
                  "compute time every step (benchmark T3); -1: none")->capture_default_str();
  cmd->add_option("--slow-factor", o->slow_factor, "How many times slower the --slow-rank's steps are")
      ->check(CLI::Range(1.0, 100.0))->capture_default_str();
  cmd->add_option("--staleness", o->staleness,
                  "ps-async: pushes computed on parameters more than this many versions old are dropped")
      ->check(CLI::Range(0, 1000000))->capture_default_str();
  cmd->add_flag("--cache", o->cache,
                "Hold the training set in a data cache (gw_cache, docs/cache.md): each rank reads only its 1/N "
                "shard from storage and draws every batch through gw_cache_get, shuffled over the whole set");
  cmd->add_flag("--cache-node-shared", o->cache_node_shared,
                "With --cache: the ranks of a node keep their shards in one shared-memory segment "
                "(GW_CACHE_NODE_SHARED); implies --cache");
  cmd->add_option("--slow-storage", o->slow_storage,
                  "Emulate slow storage: reading the training set takes at least bytes / (this many MB/s); the "
                  "time the real read did not take is slept (docs/cache.md, benchmark C1); 0: off")
      ->check(CLI::Range(0.0, 100000.0))->capture_default_str();
  cmd->add_option("--worker", o->worker, "Internal: run as one rank of configuration NAME")->group("");
  cmd->footer("Example: gradwire train --ranks 4 --epochs 5 --configs none --out train-out");
  cmd->callback([o, &exit_code] {
    if (o->cache_node_shared) o->cache = true;
    if (o->worker.empty())
      run_driver(*o);
    else
      run_worker(*o);
    exit_code = 0;
  });
}

}  // namespace gwcli
