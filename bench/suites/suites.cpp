#include "suites/bench.hpp"

#include <algorithm>

namespace gwcli::bench {

void run_p1(const Options& options, const Emit& emit);  // suite_p1.cpp
void run_p2(const Options& options, const Emit& emit);  // suite_p2.cpp
void run_p3(const Options& options, const Emit& emit);  // suite_p3.cpp
void run_p4(const Options& options, const Emit& emit);  // suite_p4.cpp
void run_p5(const Options& options, const Emit& emit);  // suite_p5.cpp
void run_p6(const Options& options, const Emit& emit);  // suite_p6.cpp
void run_p7(const Options& options, const Emit& emit);  // suite_p7.cpp
void run_p8(const Options& options, const Emit& emit);  // suite_p8.cpp

// Each suite lives in its own file (suite_p1.cpp, ...) and is listed here once.
const std::vector<Suite>& suites() {
  static const std::vector<Suite> all = {
      {"P1", "dense codecs encode + decode, 256 MiB f32, one core, vs read-only sum and memcpy", run_p1},
      {"P2", "top-k selection (1 %, 0.1 % of 64 Mi f32) vs exact std::nth_element; sparseq (1 %, 2 and 4 bits, 100 MB "
             "f32) encode + decode vs topk", run_p2},
      {"P3", "point-to-point bandwidth and latency over UCX (shm, tcp), 8 B - 64 MiB, vs ucx_perftest", run_p3},
      {"P4", "dense allreduce, 2 and 4 ranks, 4 KiB - 256 MiB, vs Open MPI MPI_Allreduce", run_p4},
      {"P5", "compressed allreduce of 100 MB f32, 4 ranks behind 1 and 10 Gbit/s links, vs MPI_Allreduce", run_p5},
      {"P6", "chunked, overlapped encode -> send -> decode over UCX, 2 ranks, vs the same steps serialized", run_p6},
      {"P7", "two-level compressed allreduce of 100 MB f32, 2x2 and 4x2 ranks behind 1 Gbit/s node links, vs flat, "
             "MPI_Allreduce and gloo", run_p7},
      {"P8", "compressed reduce-scatter and allgather of 100 MB f32, 4 ranks behind 1 Gbit/s links, vs "
             "MPI_Reduce_scatter_block / MPI_Allgather and gloo", run_p8},
  };
  return all;
}

Stats summarize(std::vector<double> samples) {
  Stats s;
  if (samples.empty()) return s;
  std::sort(samples.begin(), samples.end());
  const size_t n = samples.size();
  s.median = n % 2 ? samples[n / 2] : 0.5 * (samples[n / 2 - 1] + samples[n / 2]);
  s.spread = s.median > 0 ? (samples.back() - samples.front()) / s.median : 0;
  return s;
}

std::string size_name(uint64_t bytes, const char* gap) {
  if (bytes >= (uint64_t{1} << 20)) return std::to_string(bytes >> 20) + gap + "MiB";
  if (bytes >= 1024) return std::to_string(bytes >> 10) + gap + "KiB";
  return std::to_string(bytes) + gap + "B";
}

}  // namespace gwcli::bench
