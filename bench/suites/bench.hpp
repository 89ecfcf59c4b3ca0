// `gradwire bench`: suites of measurements, each figure a ratio against a peer measured in the same
// run (../docs/benchmarks.md). A suite emits one Result per case; ratio > 1 always means gradwire is
// better (peer time / our time, or our throughput / peer throughput).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace gwcli::bench {

struct Options {
  int repetitions = 5;    // timed repetitions after one warm-up; the median is reported
  bool quick = false;     // smaller sizes, for a smoke run in the tests
  std::string config;     // TOML file handed to gw_runtime_create, or empty
  std::string link;       // "1gbit", ...: place ranks in the emulated cluster (when supported)
  std::string transport;  // [transport] inter for every rank, or empty: the configuration's
  int ranks = 0;          // P5: ranks (0: the suite's default)
  uint64_t bytes = 0;     // P5: f32 bytes reduced (0: the suite's default)
  std::string model;      // P4, P5, P7: a cost model file (gradwire calibrate): add its predictions
};

struct Result {
  std::string suite;       // "P1"
  std::string case_name;   // "int8 256MiB"
  double ours = 0;         // our figure (median)
  double peer = 0;         // the peer's figure (median), same unit
  std::string unit;        // "GB/s", "ms", ...
  double ratio = 0;        // > 1: gradwire is better
  std::string peer_name;   // "memcpy", "MPI_Allreduce", ...
  nlohmann::json extra = nlohmann::json::object();  // spread, recall, counts, target, ...
};

using Emit = std::function<void(const Result&)>;

struct Suite {
  const char* id;     // "P1"
  const char* title;  // one line
  void (*run)(const Options& options, const Emit& emit);
};

// Every suite, in order. Defined in suites.cpp: a suite is added there with one line.
const std::vector<Suite>& suites();

// Median and spread ((max - min) / median) of repeated timings.
struct Stats {
  double median = 0;
  double spread = 0;
};
Stats summarize(std::vector<double> samples);

// A size as the suites' case names write it: "256MiB", "64KiB", "8B" (`gap` between number and unit).
std::string size_name(uint64_t bytes, const char* gap = "");

}  // namespace gwcli::bench
