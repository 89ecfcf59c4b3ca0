// What the allreduce suites add around their measurements (docs/benchmarks.md): the gloo peer
// (peers/torch_allreduce.py under `gradwire run`), the link's rate measured in the same run with one
// large plain-TCP transfer, the bytes each rank must send and the cost model's prediction.
#pragma once

#include <gradwire/gradwire.h>

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "model/model.hpp"

namespace gwcli {
class Cluster;
}

namespace gwcli::bench {

// Transfers of a link probe before the measurements (and rounds of the all-to-all and loopback
// probes): the median of each figure is reported.
constexpr int kProbeRounds = 3;

// One plain TCP transfer: its rate, and the machine's busy core-seconds during it per byte (the sender's
// and the receiver's kernel work, wherever it ran; meaningful on a quiet machine).
struct TcpProbe {
  double bytes_per_s = 0;
  double cpu_s_per_byte = 0;
};

// Inside a run: rank `sender` (1 unless given: the first rank of another node) sends `bytes` to rank 0
// over one plain TCP connection (rank 0's GW_ROOT_ADDR, port GW_ROOT_PORT + 2) while the other ranks
// sleep on a socket. Sized from GW_LINK_RATE (about half a second of transfer) when bytes is 0. Every
// rank constructs it and calls transfer() together, as often as wanted: spread between the measurements
// it describes, its figures come from the same stretch of time as they do (what one flow costs the
// cores moves by a fifth and more over seconds on a shared VM, with where its ends run). result() is
// collective: the median of each figure over the transfers, rank 0's, on every rank.
class TcpLinkProbe {
 public:
  explicit TcpLinkProbe(gw_comm* comm, uint64_t bytes = 0, uint32_t sender = 1);
  ~TcpLinkProbe();
  TcpLinkProbe(const TcpLinkProbe&) = delete;
  TcpLinkProbe& operator=(const TcpLinkProbe&) = delete;
  void transfer();
  TcpProbe result();

 private:
  gw_comm* comm_;
  uint32_t rank_ = 0, size_ = 0, sender_ = 1;
  uint64_t bytes_ = 0;
  int data_ = -1;             // rank 0 and the sender: the connection the bytes travel on
  std::vector<int> parked_;   // rank 0: one connection per sleeping rank; a sleeping rank: its own
  std::vector<TcpProbe> transfers_;  // rank 0: each transfer's figures
};

// Inside a run: the links' rate when every node sends to every other at once over plain TCP, as the
// all-to-all algorithms (scatter-reduce, sparse allgather, the two-level cross phase) send. Nodes are
// `per_node` consecutive ranks; every rank sends to the ranks of the other nodes that have its place in
// their node (with 1 rank per node: to every rank), one connection each, a node `bytes` in all, all ranks
// at once. Returns the bytes a node sent per second of the slowest rank's time (the median of three
// rounds), on every rank: flows that share a link finish unevenly, and a round ends with its last one.
// 0 where a link would carry one flow (2 nodes of one rank: TcpLinkProbe's transfer). Sized like
// TcpLinkProbe when bytes is 0.
double measure_all_to_all(gw_comm* comm, uint64_t bytes = 0, uint32_t per_node = 1);

// Inside a run: what the ranks' own transport costs the cores per byte as a ring algorithm drives it.
// In a step every rank sends `bytes` to the rank `stride` after it and receives as many from the rank
// `stride` before it (stride 1: a ring; the ranks per node: every flow crosses a node link) through
// the communicator (gw_send_start / gw_recv_start, in pieces of `piece` bytes all posted at once), all
// ranks at once, timed to the slowest rank. Every rank calls step() together, as often as wanted: spread
// between the measurements it describes, like TcpLinkProbe's transfers, since what a byte costs the
// cores moves from one second to the next. result(): the median step's `bytes_per_s` (what a rank sent
// per second) and `cpu_s_per_byte` = its time x `cores` / (ranks x bytes), the core-seconds a byte sent
// took where the cores and not the link paced the ring (the kernel's work, the transport's copies and
// the ranks' turns on the cores together). Sized like TcpLinkProbe / 8 (1 to 16 MB) when bytes is 0.
// A ring pass (ring_pass below, P5's) runs the 2 (ranks - 1) steps of a ring allreduce one after another,
// each moving a block of bytes / (2 (ranks - 1)) and waiting for its receive and its send before the
// next, as the dense ring does; timed from a barrier to the slowest rank's end, its `bytes` being all a
// rank sent. Single large steps read the cores' cost per byte noisily with 8 ranks on 2 cores: 0.83 to
// 1.06 ns per byte in four launches whose uncompressed rings ran within 11 % of each other.
class RingStepProbe {
 public:
  RingStepProbe(gw_comm* comm, double cores, uint64_t bytes = 0, uint64_t piece = 1 << 20, uint32_t stride = 1,
                uint32_t steps = 1);
  // The ring pass of an allreduce of `allreduce_bytes` (stride 1): a rank sends 2 (n - 1) / n of them
  // in all, at most half of TcpLinkProbe's size (at least 4 MB), so that a pass behind a slow link stays
  // short.
  static RingStepProbe ring_pass(gw_comm* comm, double cores, uint64_t allreduce_bytes);
  void step();
  TcpProbe result() const;

 private:
  void exchange_block(uint32_t n, uint32_t rank, uint32_t d);

  gw_comm* comm_;
  double cores_;
  uint64_t bytes_, piece_;
  uint32_t stride_, steps_;
  std::vector<float> out_, in_;
  std::vector<double> seconds_;
};

// The transport's CPU per byte for a prediction, from a run's figures (the workers' "link_bytes_per_s",
// "link_cpu_s_per_byte", "ring_bytes_per_s", "ring_cpu_s_per_byte"): the ring step's where the `ranks`
// outnumber this machine's cores (they take turns on them) and the cores paced the step, its ranks,
// `per_link` of them sharing a link, having sent at most 60 % of the link's rate together at no more
// than 3 times the plain transfer's CPU per byte; else the busy time of the plain transfer, whose two
// ends each had a core. A step the link paces reaches 0.58 to 1.0 of the link (0.58 and 0.76: 8 flows
// of 4 nodes behind 100 Mbit/s, whose short transfers TCP's start slows; 0.58 read 6 times the
// transfer's CPU per byte), one the cores pace at 10 Gbit/s 0.2 to 0.54 (2 to 8 ranks on 2 cores, 0.9
// to 1.9 times the transfer's CPU per byte).
double transport_cpu_per_byte(const nlohmann::json& run, int ranks, int per_link);
// The rate at which a prediction prices the wire of P5's links (the plain transfer's rate otherwise):
// where the ring pass ("ring_bytes_per_s", one rank to a link) was not paced by the cores, the slower
// of the plain transfer and the pass, which is what a ring gets from the link with every rank sending
// and receiving at once (2 ranks at 10 Gbit/s: the pass 890 to 1124 MB/s in six launches where one
// transfer reached 1146 to 1197); where the cores paced it, the plain transfer's, the cores' share
// being in the pass's CPU per byte.
double ring_wire_rate(const nlohmann::json& run, int ranks);

// A plain TCP transfer between two threads of this process over loopback (gradwire calibrate's tcp
// link): the median of three transfers of `bytes`.
TcpProbe measure_loopback_tcp(uint64_t bytes);

// The gloo peer: `gradwire run -n ranks [--link rate] -- python3 torch_allreduce.py count reps`. Returns
// its JSON ({"seconds": [...]}) or nullopt with *why set (PyTorch missing, run failed).
std::optional<nlohmann::json> run_gloo_peer(int ranks, const std::string& rate, uint64_t count, int reps,
                                            std::string* why);
// Any PyTorch peer of peers/ the same way: `gradwire run -n ranks [--link rate] -- python3 FILE ARGS...`,
// its JSON line or nullopt with *why set. The interpreter is GRADWIRE_BENCH_PYTHON (a virtual environment
// with another PyTorch) when set, else /usr/bin/python3 (Debian's python3-torch).
std::optional<nlohmann::json> run_torch_peer(const std::string& file, int ranks, const std::string& rate,
                                             const std::vector<std::string>& args, std::string* why);

// An MPI peer (`program`: its path and arguments) as `ranks` ranks under mpirun, restricted to TCP: inside
// `cluster` when given (every node, `per_node` ranks, a host of its own reached through `cluster.sh rsh`,
// Open MPI's TCP on the veths), else oversubscribed on this host. Its JSON line; throws, naming `what`,
// when mpirun fails.
nlohmann::json run_mpi_peer(const std::vector<std::string>& program, int ranks, int per_node,
                            const gwcli::Cluster* cluster, const std::string& what);

// The torch.topk peer of P2 (peers/torch_topk.py): its JSON ({"seconds": [...], "threads": T}) or
// nullopt with *why set.
std::optional<nlohmann::json> run_torch_topk(uint64_t n, uint64_t k, int reps, std::string* why);

// `--model PATH` of a suite: nullopt when empty, else the loaded model; a file that cannot be read or
// parsed is a GW_ERR_CONFIG failure naming the suite and the file's problem.
// What the operator has for a link of nominal rate `rate` (tc syntax): the model alone. The rate TCP
// delivers of it to one flow and to all-to-all traffic (the model's delivery, gw::model::delivered_at),
// the model's tcp link's σ (0 without one).
struct NominalInputs {
  double bytes_per_s = 0, all_to_all_bytes_per_s = 0, cpu_s_per_byte = 0;
};
NominalInputs nominal_link_inputs(const gw::model::Model& model, const std::string& rate);

std::optional<gw::model::Model> load_model_option(const std::string& path, const char* suite);

// The algorithm gradwire runs for a codec of this kind and size ratio on n ranks (one per link): its
// bytes sent per rank, and with a model (codec costs, gamma, alpha of its "tcp" link) its predicted time
// at `bytes_per_s` with the link's `cpu_s_per_byte` (both measured in the same run) and the ranks
// sharing `cores` cores; the all-to-all algorithms' wire at `all_to_all_bytes_per_s` where it is given
// (measure_all_to_all).
gw::model::Cost allreduce_cost(const gw::model::Model* model, const std::string& codec, gw::model::CodecKind kind,
                               double size_ratio, double bytes, int ranks, double bytes_per_s, double cores,
                               double cpu_s_per_byte = 0, double all_to_all_bytes_per_s = 0);

// The same for nodes of `per_node` ranks behind one link each (P7): the model's "shm" link (else its
// intra link) inside a node, the measured rate and CPU per byte with the model's TCP alpha between
// nodes, the machine's cores shared by all nodes (the all-to-all traffic at `all_to_all_bytes_per_s` where
// it is given); the flat algorithm, or the two-level one. Nullopt when the model has no figures for `codec`.
std::optional<gw::model::Cost> node_allreduce_cost(const gw::model::Model& model, const std::string& codec,
                                                   double bytes, int nodes, int per_node, double bytes_per_s,
                                                   double cpu_s_per_byte, bool two_level,
                                                   double all_to_all_bytes_per_s = 0);

}  // namespace gwcli::bench
