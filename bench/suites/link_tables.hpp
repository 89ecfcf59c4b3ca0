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

struct gw_comm;

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

// The link between two hosts, measured inside a launched run (`gradwire calibrate` under `gradwire run`,
// torchrun or mpirun): ranks 0 and 1 (on different hosts) time a ping-pong of 8 B (alpha: the median
// half round trip) and a sweep of messages from 64 KiB to `largest` bytes in each direction, each
// answered by 8 B (a direction's beta: the slope of its one-way times over the sizes of 1 MiB and up),
// through the communicator, so over the configured transport; with 3 ranks or more, one to a host, every
// rank also sends to every other at once (measure_all_to_all over plain TCP); and rank 1 sends to rank 0
// over one plain TCP connection (TcpLinkProbe: its rate, and the machine's busy core-seconds per byte,
// which say what the TCP stack costs the cores over this path). Every rank calls it; the result is rank
// 0's, on rank 0 (the others get zeros).
struct CrossLink {
  double alpha = 0;                  // seconds
  double beta_out = 0, beta_in = 0;  // seconds per byte, rank 0 to rank 1 and back
  double all_to_all_bytes_per_s = 0; // a host's bytes per second sending to all others at once (0: not measured)
  double tcp_bytes_per_s = 0;        // the plain TCP transfer's rate
  double tcp_cpu_s_per_byte = 0;     // busy core-seconds per byte during it (both ends, wherever they ran)
  uint32_t ranks = 0;
  uint64_t largest = 0;
};
CrossLink measure_cross_link(gw_comm* comm, uint64_t largest);

// Buffer sizes of the machine's sum table (Machine::sum_sizes); past the last one the model takes gamma.
const std::vector<uint64_t>& sum_table_sizes();

// Seconds per f32 byte of out += in for each of sum_table_sizes(), in this process: the median of passes
// that sum about 128 MiB in all (the buffers stay where the last pass left them).
std::vector<double> measure_sum_table();

// Per index, the median over the rows (every row as long as the first).
std::vector<double> median_by_index(const std::vector<std::vector<double>>& rows);

}  // namespace gwcli::bench
