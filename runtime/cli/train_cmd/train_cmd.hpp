// `gradwire train`, by concern: the catalog of configurations (catalog.cpp), the TOML overlay merged over
// the user's file (toml_merge.cpp), the options checked (options.cpp), one rank's training (worker.cpp),
// the launcher that starts the ranks of each configuration and collects their results (launcher.cpp),
// the table (table.cpp) and the picture (picture.cpp). cmd_train.cpp adds the command line.
//
// The command is its own launcher: without --worker it re-executes itself under `gradwire run -n N`
// (with --link: in the emulated cluster) once per configuration; every rank then runs
// `gradwire train --worker CONFIG ...`, creates a runtime from the user's TOML with the configuration's
// overlay merged over it, joins the others (gw_comm_create), registers the model's tensors with a
// synchronizer (gw_sync) and trains; rank 0 prints progress and writes OUT/CONFIG.json, from which the
// first process builds the table and OUT/train.svg.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "commands.hpp"
#include "train/idx.hpp"
#include "train/trainer.hpp"

namespace gwcli::train {

using json = nlohmann::json;

// The README of dataset-fashion-mnist lists an MLP 256-128-100 at this test accuracy.
constexpr double kReferenceAccuracy = 0.8833;
constexpr const char* kReferenceLabel = "README: MLP 256-128-100, 0.8833";
constexpr double kTargetAccuracy = 0.85;  // time-to-accuracy threshold of benchmark T1

// ---- catalog.cpp --------------------------------------------------------------------------------------

// A configuration: a TOML overlay merged over the user's --config file (its keys win; the rest of the
// user's file — transport, buckets, codec parameters it does not set — stays). Each names its codec,
// error feedback and schedule, so a configuration means the same whatever the user's file says.
// lr_scale multiplies --lr for that configuration.
struct Configuration {
  const char* name;
  const char* help;
  const char* overlay;
  float lr_scale = 1.0f;
};
constexpr const char* kDefaultConfigurations = "none,fp16,int8,topk-ef,onebit-ef,local-sgd";
const std::vector<Configuration>& configurations();
// The configuration `name`; a Failure listing the known ones otherwise.
const Configuration& find_configuration(const std::string& name);

// ---- options.cpp --------------------------------------------------------------------------------------

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
};

// "a,b,,c" -> {"a", "b", "c"}.
std::vector<std::string> split_list(const std::string& s);
// The trainer's options; a Failure for a bad --hidden.
gwtrain::TrainOptions train_options(const Options& o);
// The data set; a Failure naming the file and the package when it is missing or corrupt.
gwtrain::Dataset load_data(const std::string& dir);

// ---- toml_merge.cpp -----------------------------------------------------------------------------------

// The user's TOML file (if any) with the configuration's overlay merged over it, as TOML text.
std::string configuration_toml(const std::string& user_file, const Configuration& c);
// A runtime from TOML text.
RuntimePtr open_runtime_text(const std::string& text);

// ---- worker.cpp, launcher.cpp -------------------------------------------------------------------------

// One rank of configuration o.worker: trains and, on rank 0, writes OUT/<worker>.json.
void run_worker(const Options& o);
// Checks everything, runs every configuration's ranks, then writes the table and the picture.
void run_driver(const Options& o);

// ---- table.cpp, picture.cpp ---------------------------------------------------------------------------

// One configuration's result (OUT/<name>.json), summarized.
struct Row {
  std::string name;
  json result;
  double final_accuracy = 0;
  double bytes = 0, raw_bytes = 0;
  double train_seconds = 0, wall_seconds = 0;
  double seconds_to_target = -1;
};
Row summarize(const std::string& name, const json& result);
// "1.23 MB".
std::string human_bytes(double bytes);
// The table printed at the end and written to OUT/table.txt.
std::string table(const std::vector<Row>& rows, const Options& o);
// Test accuracy against bytes and seconds, every configuration a line (OUT/train.svg).
std::string picture(const std::vector<Row>& rows);

}  // namespace gwcli::train
