// `gradwire calibrate`: the command line of the cost model's calibration (tools/costmodel/calibrate.cpp).
#include <iostream>
#include <memory>

#include "commands.hpp"
#include "costmodel/calibrate.hpp"

namespace gwcli {

void add_calibrate_command(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand("calibrate",
                                 "Fit the cost model from short measurements on this machine (under a launcher, also "
                                 "the link between hosts) and save it");
  auto args = std::make_shared<CalibrateArgs>();
  cmd->add_option("-o,--output", args->output, "The model file to write (TOML)");
  cmd->add_option("--config", args->config, "TOML file for the runtime (plugin path, codec settings)");
  cmd->add_option("--codecs", args->codecs, "Comma-separated codecs to measure; default every codec plugin");
  cmd->add_option("--bytes", args->bytes, "f32 bytes each codec encodes per repetition")
      ->check(CLI::Range(uint64_t{4096}, uint64_t{1} << 32));
  cmd->add_option("--repetitions", args->repetitions, "Timed repetitions (their median counts)")->check(CLI::Range(1, 100));
  cmd->add_option("--inter-rate", args->inter_rate, "Add a link 'inter' of this rate (e.g. 100mbit) between nodes");
  cmd->add_option("--intra-rate", args->intra_rate, "Add a link 'intra' of this rate inside a node");
  cmd->add_flag("--no-links", args->no_links, "Measure codecs only, not the transports");
  cmd->add_flag("--inter-only", args->inter_only,
                "Under a launcher: measure only the link between hosts, into the model file -o names (the other "
                "figures kept; without the file, those of the embedded reference model)");
  cmd->add_option("--nominal-rate", args->nominal_rate,
                  "Under a launcher: the nominal rate of the link between hosts (default GW_LINK_RATE, which "
                  "gradwire run --link sets), to learn what TCP delivers of it");
  cmd->add_option("--link-bytes", args->link_bytes,
                  "Under a launcher: the largest message of the link's sweep (default about 0.3 s at the nominal rate)")
      ->check(CLI::Range(uint64_t{1} << 20, uint64_t{1} << 30));
  cmd->add_option("--concurrent", args->concurrent,
                  "Measure the codecs in this many processes at once (as many as ranks will share the cores)")
      ->check(CLI::Range(1, 256));
  cmd->add_option("--codec-threads", args->codec_threads,
                  "Copies of each codec measured at once, each phase started together (default: the cores, "
                  "shared among --concurrent processes): a codec's cost while every core runs it, as in an allreduce")
      ->check(CLI::Range(1, 256));
  cmd->callback([&exit_code, args] {
    try {
      exit_code = run_calibrate(*args);
    } catch (const Failure&) {
      throw;
    } catch (const std::exception& e) {
      std::cerr << "gradwire calibrate: " << e.what() << "\n";
      exit_code = 2;
    }
  });
}

}  // namespace gwcli
