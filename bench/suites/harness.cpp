#include "suites/harness.hpp"

#include <filesystem>

#include "support/process.hpp"
#include "support/tool.hpp"

#ifndef GW_SOURCE_BENCH_DIR
#define GW_SOURCE_BENCH_DIR ""
#endif

namespace gwcli::bench {

const std::vector<std::string>& harness_benchmarks() {
  static const std::vector<std::string> all = {"P9", "T1", "T2", "T3", "T4", "T5", "C1", "validation"};
  return all;
}

int run_harness(const std::string& name, const std::vector<std::string>& args) {
  const std::filesystem::path script = std::filesystem::path(GW_SOURCE_BENCH_DIR) / "run.py";
  std::error_code ec;
  if (!*GW_SOURCE_BENCH_DIR || !std::filesystem::exists(script, ec))
    throw Failure(GW_ERR_NOT_FOUND, "bench: " + name + " runs from the source tree's bench/run.py, which is not at " +
                                        script.string() + "; run it there (bench/run.py " + name + ")");
  std::vector<std::string> argv{"python3", script.string(), name};
  argv.insert(argv.end(), args.begin(), args.end());
  SpawnOptions options;
  options.env.push_back({"GW", self_path("bench")});
  return run_and_wait(argv, options, "gradwire bench");
}

}  // namespace gwcli::bench
