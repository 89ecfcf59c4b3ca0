// `gradwire simulate` (simulate.cpp): the cost model (docs/cost-model.md) evaluated for a model size, tensor
// sizes or a PyTorch model's parameter counts at any number of ranks, nodes and link rates.
#pragma once

#include <cstdint>
#include <string>

namespace gwcli {

struct SimulateArgs {
  std::string model;  // empty: ./gradwire-model.toml where there is one, else the embedded reference model
  std::string params, tensors, torch_json;
  double bytes = 0;
  std::string ranks = "8,64,512,4096,32768,100000";
  uint64_t per_node = 8;
  double cores = 0;  // 0: the model's
  std::string intra_rate, inter_rate, inter_rates;
  double compute = 0, backward_fraction = 2.0 / 3.0;
  uint64_t every = 4;
  bool cpu_compute = false;
  std::string codecs;
  double bucket_bytes = 25e6;
  bool json_out = false;
  std::string svg;
};

// Runs the subcommand; its exit status (a Failure or std::exception for bad input).
int run_simulate(const SimulateArgs& args);

}  // namespace gwcli
