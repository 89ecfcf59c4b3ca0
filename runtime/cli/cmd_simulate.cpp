// `gradwire simulate`: the command line of the cost model's what-if tool (tools/costmodel/simulate.cpp).
#include <iostream>
#include <memory>

#include "commands.hpp"
#include "costmodel/simulate.hpp"

namespace gwcli {

void add_simulate_command(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand("simulate", "Predict exchange and step time per codec and algorithm from the cost model");
  auto a = std::make_shared<SimulateArgs>();
  cmd->add_option("--model", a->model,
                  "The cost model (gradwire calibrate writes it); default ./gradwire-model.toml, else the embedded "
                  "model of the reference machine");
  cmd->add_option("--params", a->params, "Parameters of the model (f32), e.g. 25M, 1.5B (default 25M)");
  cmd->add_option("--bytes", a->bytes, "Gradient bytes (f32)");
  cmd->add_option("--tensors", a->tensors, "Comma-separated tensor element counts (fused into buckets)");
  cmd->add_option("--torch-json", a->torch_json, "JSON of a PyTorch model's parameter counts ({name: numel})");
  cmd->add_option("--bucket-bytes", a->bucket_bytes, "Fusion threshold for --tensors / --torch-json ([bucket] bytes)");
  cmd->add_option("--ranks", a->ranks, "Comma-separated rank counts");
  cmd->add_option("--per-node", a->per_node, "Ranks per node")->check(CLI::Range(uint64_t{1}, uint64_t{1} << 20));
  cmd->add_option("--cores", a->cores, "Cores per node for codec work (default: the model's)");
  cmd->add_option("--intra-rate", a->intra_rate, "Link rate inside a node (e.g. 100gbit); default the model's");
  cmd->add_option("--inter-rate", a->inter_rate, "Link rate between nodes (e.g. 10gbit); default the model's");
  cmd->add_option("--inter-rates", a->inter_rates, "Sweep these inter-node rates (at the first --ranks value)");
  cmd->add_option("--compute", a->compute, "Compute seconds per step (forward + backward)")->check(CLI::Range(0.0, 1e6));
  cmd->add_option("--backward-fraction", a->backward_fraction, "Share of the compute that can overlap the exchange")
      ->check(CLI::Range(0.0, 1.0));
  cmd->add_option("--every", a->every, "Local SGD / accumulation: one exchange every H steps")
      ->check(CLI::Range(uint64_t{1}, uint64_t{1000000}));
  cmd->add_flag("--cpu-compute", a->cpu_compute, "Training computes on the CPU cores that encode (no overlap of codec work)");
  cmd->add_option("--codecs", a->codecs, "Comma-separated codecs (default: every codec in the model)");
  cmd->add_flag("--json", a->json_out, "One JSON object");
  cmd->add_option("--svg", a->svg, "Write a plot of step time against ranks (or link rate) here");
  cmd->callback([&exit_code, a] {
    try {
      exit_code = run_simulate(*a);
    } catch (const std::exception& e) {
      std::cerr << "gradwire simulate: " << e.what() << "\n";
      exit_code = 2;
    }
  });
}

}  // namespace gwcli
