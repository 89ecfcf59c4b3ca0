// P4: dense allreduce (f32 sum, in place), 2 and 4 ranks, 4 KiB - 256 MiB, against Open MPI's
// MPI_Allreduce with the same placement (every rank on this host, none bound to a core).
//
//   ours: N forked ranks (bench_ranks) with UCX's default transports; per size a warm-up (WARMUP calls
//     back to back, below) and the repetitions, each started after a barrier, ITERS calls back to back
//     (about 32 MiB of buffer per repetition: 1 to 200 calls), timed as the slowest rank's (an allreduce
//     max) per call. One call of a small buffer lasts tens of microseconds, less than the scheduler's
//     jitter on a shared machine.
//   peer: `mpirun` (mpirun_argv) `--oversubscribe -np N gradwire-mpi-allreduce COUNT
//     REPS ITERS WARMUP` (bench/peers/mpi_allreduce.c), warmed and timed the same way.
//   The repetitions run in up to seven rounds, each round ours at every size and then the peer at
//     every size, and each side's samples are pooled: a shared VM has phases of seconds to a minute in
//     which everything runs at half speed, and one that fell on a single contiguous run of one side
//     skewed its ratios (and the model's errors) at every size it covered. With three rounds a phase
//     that covered one round still held two or three of seven samples and one of three passes (2 ranks'
//     1 and 4 MiB measured 3-4 times their usual time, 4 ranks' 4 MiB half of it, a minute apart); with
//     a repetition per round it holds one of seven of each.
//   With --model, the cost model's prediction. Its shared-memory link (the exchange table, the crowded
//     ring step and the 2-rank ring's, each without and with its sums, a collective call's cost) and
//     the machine's sums (by buffer size and gamma) are measured again in this run, one pass before
//     each round (bench::LinkPasses, as `calibrate` measures them),
//     each figure the median of the passes before the rounds of its rank count: on a shared VM the
//     exchanges move by half and more within minutes, and a calibration taken in another stretch of time
//     predicted 2 ranks' 4 MiB +118 %. The model file gives the cores; the file's own prediction is
//     reported beside it (calibrated_predicted_ms).
// ratio = MPI median / ours median (target >= 1.0 from 1 MiB up). extra: busbw of both (GB/s, the
// nccl-tests convention: bytes / time * 2 (n - 1) / n), the algorithm gradwire used, spreads.
#include <gradwire/gradwire.h>

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <optional>
#include <stdexcept>
#include <vector>

#include "suites/bench.hpp"
#include "suites/bench_ranks.hpp"
#include "suites/link_tables.hpp"
#include "suites/peer_extras.hpp"
#include "model/measure.hpp"
#include "model/model.hpp"

namespace gwcli::bench {
namespace {

using Clock = std::chrono::steady_clock;
using json = nlohmann::json;

constexpr uint64_t kRingThreshold = 65536;  // [collectives] ring_threshold_bytes' default
constexpr int kRounds = 7;                  // rounds the repetitions are split into, alternating the sides

uint64_t iterations_for(uint64_t size) { return std::clamp<uint64_t>((uint64_t{32} << 20) / size, 1, 200); }

// The warm-up's calls, on both sides: about 256 MiB of buffer, at least 4 calls and at most 1000. A
// process's memory here gets faster with use over its first hundreds of MiB moved: in a new process, a
// 64 MiB memcpy took 9.4, 8.9, 7.7, 7.0, 6.5, 5.9 and, from the tenth on, 5.0 ms. 2 ranks' allreduce of
// 16 MiB took 7.0, 4.0, 2.7, 2.5, 2.3, 2.3, 2.1 ms in its first calls, of 64 MiB 26, 19, 16 ms, of
// 256 MiB 109, 88, 79, 78 ms; a hand-written ring of whole blocks did the same. After one repetition's
// warm-up (2 calls of 16 MiB, 1 of 64 and 256 MiB) the timed calls measured this settling, 10 to 25 %
// above the steady time that a training's thousands of steps see.
uint64_t warmup_calls_for(uint64_t size) {
  return std::clamp<uint64_t>(((uint64_t{256} << 20) + size - 1) / size, 4, 1000);
}

// What every element holds after `iters` in-place sums over n ranks that each started with 1.0.
float expected_after(int n, uint64_t iters) {
  float e = 1.0f;
  for (uint64_t k = 0; k < iters; ++k) e *= float(n);
  return e;
}

json measure_ours(int n, const std::vector<uint64_t>& sizes, const Options& o, int reps) {
  return run_forked_ranks(n, {}, {o.config}, [&](gw_runtime*, gw_comm* comm) {
    json out = json::array();
    std::vector<float> buf(sizes.back() / 4);
    for (uint64_t size : sizes) {
      const uint64_t count = size / 4;
      gw_tensor t = GW_TENSOR_INIT;
      t.data = buf.data();
      t.count = count;
      // Fills the buffer, runs `calls` allreduces after a barrier and checks the sums; the slowest rank's
      // seconds per call.
      const auto run = [&](uint64_t calls) {
        std::fill(buf.begin(), buf.begin() + long(count), 1.0f);
        check_bench(gw_barrier(comm), "barrier");
        const auto t0 = Clock::now();
        for (uint64_t k = 0; k < calls; ++k) check_bench(gw_allreduce(comm, &t, &t, GW_REDUCE_SUM), "allreduce");
        const double s =
            slowest_rank(comm, std::chrono::duration<double>(Clock::now() - t0).count() / double(calls));
        const float expected = expected_after(n, calls);
        if (buf[0] != expected || buf[count - 1] != expected) throw std::runtime_error("P4: wrong allreduce result");
        return s;
      };
      run(warmup_calls_for(size));
      std::vector<double> seconds;
      for (int rep = 0; rep < reps; ++rep) seconds.push_back(run(iterations_for(size)));
      out.push_back({{"size", size}, {"seconds", seconds}});
    }
    return out;
  });
}

std::vector<double> measure_mpi(int n, uint64_t size, int reps) {
  const std::string peer = mpi_peer_path("P4");
  std::string out;
  std::vector<std::string> argv = mpirun_argv();
  argv.insert(argv.end(), {"--oversubscribe", "-np", std::to_string(n), peer, std::to_string(size / 4),
                           std::to_string(reps), std::to_string(iterations_for(size)),
                           std::to_string(warmup_calls_for(size))});
  const int status = run_captured(argv, {}, &out);
  return mpi_peer_result(status, out, "P4: mpirun")["seconds"].get<std::vector<double>>();
}

// The model's inputs P4 measures in its own run (above): shared memory's passes and the machine's sums,
// one pass each before every round.
class InRunInputs {
 public:
  explicit InRunInputs(const std::string& config) : shm_("shm", config) {}
  void pass() {
    shm_.pass();
    sums_.push_back(measure_sum_table());
    gammas_.push_back(gw::model::measure_gamma(kGammaBytes, kGammaPasses));
  }
  // The model file's `m` with this run's shared-memory link (its cpu, as calibrate's, is beta) and sums.
  gw::model::Model applied_to(gw::model::Model m) const {
    double call = 0;
    gw::model::Link shm = shm_.fit(&call);
    shm.cpu = shm.beta;
    m.links["shm"] = shm;
    m.machine.call = call;
    m.machine.gamma = summarize(gammas_).median;
    m.machine.sum_sizes.assign(sum_table_sizes().begin(), sum_table_sizes().end());
    m.machine.sum_seconds = median_by_index(sums_);
    return m;
  }

 private:
  static constexpr uint64_t kGammaBytes = 256 << 20;  // calibrate's default --bytes, beyond the caches
  static constexpr int kGammaPasses = 4;              // 1 GiB, as calibrate's
  LinkPasses shm_;
  std::vector<std::vector<double>> sums_;
  std::vector<double> gammas_;
};

double predict(const gw::model::Model& m, int n, uint64_t size) {
  gw::model::Topology t;
  t.nodes = 1, t.per_node = uint64_t(n), t.cores = m.machine.cores;
  gw::model::use_machine(t, m.machine);
  t.intra = t.inter = m.link(m.links.count("shm") ? "shm" : m.intra);
  return gw::model::exchange(*m.codec("none"), double(size), t).total;
}

}  // namespace

void run_p4(const Options& o, const Emit& emit) {
  const std::vector<uint64_t> sizes =
      o.quick ? std::vector<uint64_t>{4096, 1u << 20}
              : std::vector<uint64_t>{4096, 65536, 262144, 1u << 20, 4u << 20, 16u << 20, 64u << 20, 256u << 20};
  const std::optional<gw::model::Model> model = load_model_option(o.model, "P4");
  const int rounds = std::clamp(o.repetitions, 1, kRounds);
  for (int n : {2, 4}) {
    std::vector<std::vector<double>> ours(sizes.size()), mpi(sizes.size());
    std::optional<InRunInputs> inputs;
    if (model) inputs.emplace(o.config);
    for (int round = 0; round < rounds; ++round) {
      if (inputs) inputs->pass();
      const int reps = o.repetitions / rounds + (round < o.repetitions % rounds ? 1 : 0);
      const json run = measure_ours(n, sizes, o, reps);  // every size in one launch, then MPI size by size
      for (size_t i = 0; i < sizes.size(); ++i) {
        for (double s : run[i]["seconds"].get<std::vector<double>>()) ours[i].push_back(s);
        for (double s : measure_mpi(n, sizes[i], reps)) mpi[i].push_back(s);
      }
    }
    const std::optional<gw::model::Model> in_run = inputs ? std::optional(inputs->applied_to(*model)) : std::nullopt;
    for (size_t i = 0; i < sizes.size(); ++i) {
      const uint64_t size = sizes[i];
      const Stats us = summarize(ours[i]);
      const Stats peer = summarize(mpi[i]);
      const double factor = 2.0 * (n - 1) / n;
      Result r{"P4",
               std::to_string(n) + " ranks " + size_name(size),
               us.median * 1e3,
               peer.median * 1e3,
               "ms",
               peer.median / us.median,
               "MPI_Allreduce",
               {{"busbw_GBps", double(size) / us.median * factor / 1e9},
                {"peer_busbw_GBps", double(size) / peer.median * factor / 1e9},
                {"algorithm", size >= kRingThreshold ? "ring" : "recursive doubling"},
                {"spread", us.spread},
                {"peer_spread", peer.spread}}};
      if (size >= (1u << 20)) r.extra["target"] = ">= 1.0";
      if (in_run) {  // the cost model's prediction: every rank on this host, over its shm link
        const double p = predict(*in_run, n, size), f = predict(*model, n, size);
        r.extra["predicted_ms"] = p * 1e3;
        r.extra["error"] = (p - us.median) / us.median;
        r.extra["calibrated_predicted_ms"] = f * 1e3;
        r.extra["calibrated_error"] = (f - us.median) / us.median;
      }
      emit(r);
    }
  }
}

}  // namespace gwcli::bench
