// `gradwire calibrate` (calibrate.cpp): fits the cost model (docs/cost-model.md) from short measurements on
// this machine, and under a launcher the link between hosts, and saves it as TOML.
#pragma once

#include <cstdint>
#include <string>

namespace gwcli {

struct CalibrateArgs {
  std::string output = "gradwire-model.toml";
  std::string config;
  std::string codecs;      // comma-separated; empty: every codec plugin
  std::string inter_rate;  // e.g. 100mbit
  std::string intra_rate;
  // Beyond the caches, like a gradient: a VM that reports its host's 480 MiB L3 kept 64 MiB buffers in
  // them (every codec's decode and the sum ran twice as fast as at 256 MiB or 1 GiB, which agree).
  uint64_t bytes = 256 << 20;
  int repetitions = 5;
  bool no_links = false;
  int concurrent = 1;  // processes measuring the codecs at once
  int codec_threads = 0;  // copies of a codec measured at once in a process; 0: the cores (over --concurrent)
  // Under a launcher (2 ranks or more): the link between hosts.
  bool inter_only = false;   // measure only that link, into the model file -o names (kept otherwise)
  std::string nominal_rate;  // the link's nominal rate; default GW_LINK_RATE (gradwire run --link)
  uint64_t link_bytes = 0;   // the largest message of the sweep; 0: about 0.3 s at the nominal rate
};

// Runs the subcommand; its exit status (a Failure or std::exception for bad input).
int run_calibrate(const CalibrateArgs& args);

}  // namespace gwcli
