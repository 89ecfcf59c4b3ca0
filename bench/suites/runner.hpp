// The runner of `gradwire bench` (runner.cpp): the suites named, in order, their results printed as a
// table or as JSON lines and kept in a result file; a harness benchmark (harness.hpp) handed over.
#pragma once

#include <string>
#include <vector>

#include "suites/bench.hpp"

namespace gwcli::bench {

struct RunArgs {
  std::string suites;
  bool json = false;
  std::string out;  // a result file: the run's machine, command and commit, and every result
  Options options;
  std::vector<std::string> harness_args;  // after --: bench/run.py's benchmark's own options
};

// Runs the suites of args.suites (comma-separated; empty: P1-P8) or one harness benchmark; the exit
// status (2: an unknown suite, or a harness benchmark beside others).
int run(const RunArgs& args);

}  // namespace gwcli::bench
