// `gradwire train`, the parts its files share: the command's options, the catalog of configurations
// (configurations.cpp), the driver that launches each configuration (driver.cpp), one rank's work
// (worker.cpp) and the first process's summary (report.cpp). runtime/cli/cmd_train.cpp holds the command
// line only.
#pragma once

#include <gradwire/gradwire.h>

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "support/tool.hpp"
#include "train/idx.hpp"
#include "train/trainer.hpp"

namespace gwcli::train {

// The README of dataset-fashion-mnist lists an MLP 256-128-100 at this test accuracy.
inline constexpr double kReferenceAccuracy = 0.8833;
inline constexpr const char* kReferenceLabel = "README: MLP 256-128-100, 0.8833";
inline constexpr double kTargetAccuracy = 0.85;  // time-to-accuracy threshold of benchmark T1

// A configuration: a TOML overlay merged over the user's --config file (its keys win; the rest of the
// user's file — transport, buckets, codec parameters it does not set — stays). Each names its codec,
// error feedback and schedule, so a configuration means the same whatever the user's file says.
//
// lr_scale multiplies --lr for that configuration. momentum_in_sync moves the optimizer's momentum into
// the synchronizer ([codec] momentum = --momentum, the trainer's SGD without momentum): the codec then
// compresses the velocity, not the gradient (one bit at the default recipe needs it: with the momentum
// after the codec it diverged at lr 0.05 and needed 0.2 x lr; keeping the tensors of up to 16 KiB in f32
// brings it from 1.9 to 0.4 points under uncompressed, docs/train.md).
struct Configuration {
  const char* name;
  const char* help;
  const char* overlay;
  float lr_scale = 1.0f;
  bool momentum_in_sync = false;
  uint32_t ps_servers = 0;  // > 0: a parameter server (docs/ps.md) with this many extra server ranks
  gw_ps_mode ps_mode = GW_PS_SYNC;
};
// Every configuration `--configs` may name, in the order `--help` lists them.
const std::vector<Configuration>& configurations();
inline constexpr const char* kDefaultConfigurations = "none,fp16,int8,topk-ef,onebit-ef,local-sgd";
// The configuration called `name`; a Failure listing the known ones otherwise.
const Configuration& find_configuration(const std::string& name);
// The user's TOML file (if any) with the configuration's overlay merged over it, as TOML text, and
// [codec] momentum = `momentum` with momentum_in_sync, else 0; with `elastic`, [elastic] enabled = true.
std::string configuration_toml(const std::string& user_file, const Configuration& c, float momentum, bool elastic = false);
// A runtime from TOML text; a Failure with the runtime's message otherwise.
RuntimePtr open_runtime_text(const std::string& text);

struct Options {
  int ranks = 4;
  uint32_t epochs = 5;
  uint32_t batch = 128;
  float lr = 0.05f;
  float momentum = 0.9f;
  uint64_t seed = 1;
  std::string hidden = "256,128";
  std::string config_file;
  std::string data = gwtrain::kDefaultDataDir;
  std::string configs = kDefaultConfigurations;
  std::string out = "train-out";
  std::string link;  // "1gbit": ranks in the emulated cluster
  uint32_t evals_per_epoch = 4;
  uint32_t train_images = 0;
  uint32_t test_images = 0;
  std::string worker;  // set in the ranks the launcher starts
  int slow_rank = -1;  // a straggler (benchmark T3)
  float slow_factor = 3.0f;
  uint32_t staleness = 16;  // ps-async
  bool cache = false;              // the training set in a data cache (gw_cache), each rank loading 1/N
  bool cache_node_shared = false;  // ... with GW_CACHE_NODE_SHARED
  double slow_storage = 0;         // MB/s: reading the training set from storage takes bytes / rate
  int elastic = 0;                 // > 0: [elastic] enabled, a failed rank restarted at most this many times
  int kill_rank = -1;              // fault injection: this rank SIGKILLs itself before synchronizing kill_step
  int64_t kill_step = -1;
};

// The comma-separated parts of `s`, empty ones dropped.
std::vector<std::string> split_list(const std::string& s);
// The trainer's options from the command's; a Failure for a bad --hidden.
gwtrain::TrainOptions train_options(const Options& o);
// Fashion-MNIST from `dir`; a Failure (GW_ERR_NOT_FOUND) that says what is missing.
gwtrain::Dataset load_data(const std::string& dir);

// The first process: checks the options, then launches every configuration's ranks (`gradwire run -n N --
// gradwire train --worker NAME ...`) in turn and writes OUT/table.txt and OUT/train.svg (driver.cpp).
void run_driver(const Options& o);

// One rank of configuration o.worker: trains, and on rank 0 writes OUT/NAME.json.
void run_worker(const Options& o);

// The first process's summary of one configuration's OUT/NAME.json.
struct Row {
  std::string name;
  nlohmann::json result;
  double final_accuracy = 0;      // the final model's (the server's, where it holds one), else the last evaluation's
  double last_eval_accuracy = 0;  // the evaluating rank's last evaluation (differs where result has final_model)
  double bytes = 0, raw_bytes = 0;
  double train_seconds = 0, wall_seconds = 0;
  double seconds_to_target = -1;
};

Row summarize(const std::string& name, const nlohmann::json& result);
// The table printed and written to OUT/table.txt.
std::string table(const std::vector<Row>& rows, const Options& o);
// 1234567 -> "1.23 MB".
std::string human_bytes(double b);

}  // namespace gwcli::train
