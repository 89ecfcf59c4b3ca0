// `gradwire train`: data-parallel training of an MLP on Fashion-MNIST through libgradwire, once per
// configuration, then a table (accuracy, bytes per rank, compression ratio, time) and a picture.
//
// The command is its own launcher: without --worker it re-executes itself under `gradwire run -n N`
// (with --link: in the emulated cluster) once per configuration; every rank then runs
// `gradwire train --worker CONFIG ...`, creates a runtime from the user's TOML with the configuration's
// overlay merged over it, joins the others (gw_comm_create), registers the model's tensors with a
// synchronizer (gw_sync) and trains; rank 0 prints progress and writes OUT/CONFIG.json, from which the
// first process builds the table and OUT/train.svg.
#include <memory>

#include "commands.hpp"
#include "train/command/command.hpp"  // the trainer's command: tools/train/command

namespace gwcli {

using namespace gwcli::train;

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
  cmd->add_option("--elastic", o->elastic,
                  "Elastic membership (docs/elastic.md): [elastic] enabled on every rank, and a rank that fails is "
                  "started again to join the running job, at most this many times in all (gradwire run "
                  "--elastic=N); the others continue meanwhile on re-sharded batches. 0: off")
      ->check(CLI::Range(0, 1000))->capture_default_str();
  cmd->add_option("--kill-rank", o->kill_rank,
                  "Fault injection: the rank that SIGKILLs itself just before it synchronizes step --kill-step "
                  "(with --elastic: the others continue, it is started again and joins; benchmark F1); -1: none")
      ->capture_default_str();
  cmd->add_option("--kill-step", o->kill_step, "The step (counted from 0) at which --kill-rank is killed")
      ->capture_default_str();
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
