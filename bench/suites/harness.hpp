// `gradwire bench --suite T2` (and P9, T1-T5, C1, validation): the benchmarks that train, compare with
// PyTorch in Python or run for tens of minutes have their harness in Python, bench/run.py (bench/gwbench/); the
// command hands them to it, with GW set to itself, so every benchmark starts from `gradwire bench`.
#pragma once

#include <string>
#include <vector>

namespace gwcli::bench {

// The benchmarks bench/run.py runs, in the order `--help` lists them.
const std::vector<std::string>& harness_benchmarks();

// Runs `python3 bench/run.py NAME ARGS...` of the source tree this command was built from, with GW =
// this command; its exit status. A Failure when the source tree (bench/run.py) is not there.
int run_harness(const std::string& name, const std::vector<std::string>& args);

}  // namespace gwcli::bench
