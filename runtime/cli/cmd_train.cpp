// `gradwire train`: data-parallel training of an MLP on Fashion-MNIST through libgradwire, once per
// configuration, then a table (accuracy, bytes per rank, compression ratio, time) and a picture. This file
// adds the command line; the parts, one file per concern, are in train_cmd/ (train_cmd.hpp says which).
#include <memory>

#include "commands.hpp"
#include "train_cmd/train_cmd.hpp"

namespace gwcli {

void add_train_command(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand("train", "Data-parallel training of an MLP on Fashion-MNIST with local ranks, once per "
                                          "configuration: table of accuracy, bytes and time, and a picture");
  auto o = std::make_shared<train::Options>();
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
  for (const auto& c : train::configurations()) list += std::string("\n  ") + c.name + ": " + c.help;
  cmd->add_option("--configs", o->configs, "Configurations to run, comma-separated:" + list)->capture_default_str();
  cmd->add_option("--out", o->out, "Directory for table.txt, train.svg and one JSON per configuration")->capture_default_str();
  cmd->add_option("--evals-per-epoch", o->evals_per_epoch, "Test-set evaluations per epoch (points of the curve)")
      ->check(CLI::Range(1, 1000))->capture_default_str();
  cmd->add_option("--train-images", o->train_images, "Train on the first N images only (0: all 60000)")->capture_default_str();
  cmd->add_option("--test-images", o->test_images, "Evaluate on the first N test images only (0: all 10000)")->capture_default_str();
  cmd->add_option("--link", o->link,
                  "Train in the emulated cluster: every rank in its own network namespace behind a link of this "
                  "rate (1gbit, 10gbit, ...); needs root, else loopback (scripts/cluster.sh)");
  cmd->add_option("--worker", o->worker, "Internal: run as one rank of configuration NAME")->group("");
  cmd->footer("Example: gradwire train --ranks 4 --epochs 5 --configs none --out train-out");
  cmd->callback([o, &exit_code] {
    if (o->worker.empty())
      train::run_driver(*o);
    else
      train::run_worker(*o);
    exit_code = 0;
  });
}

}  // namespace gwcli
