// The cost model's measurements of this machine's UCX links between local ranks and of its elementwise
// sum, shared by `gradwire calibrate` and by bench P4 (docs/cost-model.md): calibrate takes its passes
// one after another; P4 takes one before each of its rounds, so that the prediction and the allreduces
// it describes come from the same stretch of time (a shared VM's shared-memory exchanges move by half
// and more over minutes).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "model/model.hpp"

namespace gwcli::bench {

// Passes over the message times of one UCX transport (UCX_TLS = tls) between local ranks, each pass by
// ranks of its own, and the link fitted from the median of each size over the passes taken so far:
// alpha the smallest message's time, beta the slope between 1 MiB and the last size (16 MiB for tcp,
// 64 MiB for shm). tcp: a ping-pong's one way.
// shm: an exchange (both ranks sending at once, as in every step of a ring or recursive doubling), a
// table of them by message size, a ring's step with ranks two to a core and a 2-rank ring's step, each
// over the ring's buffer without and with its sums, and a one-f32 allreduce's time (what a collective
// call costs beyond its message).
class LinkPasses {
 public:
  LinkPasses(std::string tls, std::string config);
  void pass();  // one more pass (forks its ranks; a second or two for shm)
  // The link (cpu unset) from the passes so far (at least one); *call: the collective call's own cost
  // (shm; 0 for tcp).
  gw::model::Link fit(double* call) const;

 private:
  std::string tls_, config_;
  bool table_;  // shared memory: the exchanges both ways, by size, the crowded step and the 2-rank ring's
  std::vector<uint64_t> sizes_;
  std::vector<std::vector<double>> exchanges_, crowded_, crowded_summed_, rings_, summed_;
};

// Buffer sizes of the machine's sum table (Machine::sum_sizes); past the last one the model takes gamma.
const std::vector<uint64_t>& sum_table_sizes();

// Seconds per f32 byte of out += in for each of sum_table_sizes(), in this process: the median of passes
// that sum about 128 MiB in all (the buffers stay where the last pass left them).
std::vector<double> measure_sum_table();

// Per index, the median over the rows (every row as long as the first).
std::vector<double> median_by_index(const std::vector<std::vector<double>>& rows);

}  // namespace gwcli::bench
