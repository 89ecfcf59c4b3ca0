// The cost model: what an exchange of gradients costs, per codec and algorithm, from measured numbers
// (docs/cost-model.md). An alpha-beta-gamma model per link (seconds per message, seconds per byte on
// the wire, seconds per f32 byte reduced), each codec's measured encode and decode cost and size ratio,
// and one closed formula per algorithm. Pure functions of their inputs: `gradwire calibrate` fits the
// numbers, `gradwire simulate` evaluates the formulas at any scale, and the `auto` codec of gw_sync
// chooses with them (every rank from the same numbers, so every rank chooses alike).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace gw::model {

// One link: a message costs alpha + bytes * beta on the wire, and cpu * bytes of the node's cores (the
// transport's work per byte moved: the sender's and the receiver's kernel and copies together), which
// the ranks of a node share with their codec work.
struct Link {
  double alpha = 0;  // seconds per message (latency and per-message overhead)
  double beta = 0;   // seconds per byte (1 / bandwidth)
  double cpu = 0;    // core-seconds per byte sent (0: not measured, the wire alone paces the link)
  // Optional: seconds per byte the link carries when every rank sends to every other at once (the
  // all-to-all algorithms' traffic: flows that share a link finish unevenly); 0: beta.
  double all_to_all_beta = 0;
  // Optional, measured times of an exchange of `sizes` bytes (ascending; both ranks send one message and
  // receive the other's at once). When present, the dense algorithms take their beta from them rather
  // than from the large-transfer fit: copies of cache-sized buffers run faster. `crowded_seconds`
  // (optional, as many): the time of one step of a ring of ranks two to a core (4 ranks on 2 cores:
  // every rank sends to the next and receives from the previous), where the ranks of a core take turns.
  // `crowded_summed_seconds` (optional, as many): the same step with the sums of the ring's
  // reduce-scatter. `ring_seconds` and `ring_summed_seconds` (optional, as many): a step of a 2-rank ring
  // allreduce's pass over a buffer of two blocks of that size (one rank per core), without and with its
  // sums. The dense ring takes its step and its sums from them (ring(), model.cpp).
  std::vector<double> sizes, seconds, crowded_seconds, crowded_summed_seconds, ring_seconds, ring_summed_seconds;
  // Where the figures came from, in words (optional): measured between which ranks and hosts, or a
  // nominal rate and what TCP was taken to deliver of it.
  std::string origin;
};

// What TCP over a link delivers of its nominal rate (framing, the window, flows that share the link),
// as fractions by nominal rate, learned where calibrate measured links of known nominal rate
// (docs/cost-model.md, "A nominal rate"). Empty: unknown, the nominal rate is taken as it is.
struct Delivery {
  std::vector<double> rates;       // nominal bytes per second, ascending
  std::vector<double> efficiency;  // one flow's bytes per second / the nominal rate, at each rate
  // A node's bytes per second / the nominal rate when every node sends to every other at once (the
  // all-to-all algorithms' traffic), at each rate; empty or 0 where not measured (then `efficiency`).
  std::vector<double> all_to_all;
  // The TCP stack's core-seconds per byte over such a link, as a multiple of the host's own tcp link's
  // (loopback's), at each rate; 0 where not measured. Veths, bridges, qdiscs and real NICs cost more per
  // byte than loopback, and at rates where the cores pace TCP that decides the time (cpu_factor_at).
  std::vector<double> cpu_factor;
  std::string source;  // where and how they were measured
  bool empty() const { return rates.empty(); }
};

// The link as a dense allreduce that exchanges messages of `bytes` sees it: beta (and a cpu cost in
// proportion, as shared memory's is beta) from the measured time of a message of that size, when the
// link has such times (interpolated; past the largest in proportion to its time: copies that fit the
// caches run faster, and beyond the largest they all stream from memory; the ring takes beta at its buffer's size
// and alpha at its blocks', model.cpp); with ranks sharing cores
// (s > 1) alpha gains (s - 1) times the hand-over: the crowded step's time beyond the two-core step
// stretched by 2 (the turns the ranks of a core take, and the waits for a partner not scheduled); where
// the crowded step is the faster, the copies take its rate instead (with s = 2 the step is the crowded step).
Link at_message(const Link& l, double bytes, double s);

// The link with another bandwidth (1 / beta); its measured message times no longer describe it.
Link with_beta(Link l, double beta);

// The link at a nominal rate (bytes per second): its beta from what `d` says TCP delivers of that rate
// (interpolated on the logarithm of the rate; below the first and past the last rate, held), its
// all-to-all beta likewise where `d` has it, its cpu times `d`'s CPU factor there; the nominal rate
// itself where `d` is empty. The result's origin says which.
Link at_nominal_rate(const Link& l, double nominal_bytes_per_s, const Delivery& d);
// The fractions `d` gives at a nominal rate: {one flow's, all-to-all's} (both 1 where d is empty).
std::pair<double, double> delivered_at(const Delivery& d, double nominal_bytes_per_s);
// The CPU factor `d` gives at a nominal rate: interpolated on the logarithm of the rate between the
// rates where it was measured, held beyond them; 1 where none was.
double cpu_factor_at(const Delivery& d, double nominal_bytes_per_s);
// Adds (or replaces, at the same rate) one measured point; all_to_all and cpu_factor 0: not measured
// (an earlier measurement at the same rate is kept).
void add_delivery(Delivery& d, double nominal_bytes_per_s, double efficiency, double all_to_all,
                  double cpu_factor = 0);

// How a codec's payloads are combined, from its properties (collectives/compressed.hpp picks the same).
enum class CodecKind {
  Dense,          // "none": the dense allreduce of f32
  Summable,       // fp16, bf16: a ring over encoded pieces (decode, add, re-encode per hop)
  Quantized,      // int8, onebit: scatter-reduce-allgather, re-quantized by each block's owner
  Sparse,         // topk: every rank's payload to every rank (sparse allgather)
  SharedIndices,  // randomk: the same coordinates everywhere, their values reduced densely
};
const char* kind_name(CodecKind k);
std::optional<CodecKind> kind_from_name(const std::string& name);

// A codec's five costs (CodecCost's) at one size of its table by size.
struct CodecRates {
  double encode = 0, decode = 0, decode_accumulate = 0, encode_all_cores = 0, decode_all_cores = 0;
};

struct CodecCost {
  std::string name;
  CodecKind kind = CodecKind::Dense;
  double ratio = 1;   // f32 bytes / payload bytes (header included)
  double encode = 0;  // seconds per f32 byte encoded
  double decode = 0;  // seconds per f32 byte decoded into a dense buffer (Sparse: per payload byte)
  // Seconds per f32 byte of a decode that adds into a buffer (GW_DECODE_ACCUMULATE: how the summable
  // ring and the owners of scatter-reduce-allgather sum contributions); 0 when not measured, where the
  // formulas take decode + gamma (a decode, then a sum).
  double decode_accumulate = 0;
  // Optional: encode and decode per f32 byte while every core of the node runs the codec at once (each
  // phase started together; the memory's bandwidth shared), as the ranks of a node encode and decode
  // at the same moment where an algorithm has no transfers between its codec phases (shared indices);
  // 0 when not measured, where the formulas take encode and decode.
  double encode_all_cores = 0;
  double decode_all_cores = 0;
  // Optional: the same costs with buffers of `sizes` f32 bytes per copy of the codec (ascending; the
  // figures above are those of the last size), `copies` copies at once for the all-cores costs: a
  // buffer the caches hold is encoded and decoded faster (codec_at).
  std::vector<double> sizes;
  std::vector<CodecRates> at_sizes;
  double copies = 1;
  // Sparse codecs, optional: what the sparse allgather's combining costs with `gather_ranks` ranks
  // (ascending), seconds per f32 byte of the buffer: each piece's n payloads, each from another rank's
  // gradient, decoded into it in rank order (the first writing the piece, the others adding their
  // values at their indices), as measure_sparse_combine times it. Where present, the sparse allgather
  // takes its combining from it (interpolated in n; past the last count, grown by the last interval's
  // slope per rank) rather than n payloads at `decode` per payload byte: the index handling and the
  // scattered adds into a buffer that more payloads touch at more places.
  std::vector<double> gather_ranks, gather_seconds;
};

// The sparse allgather's combining of `n` payloads per f32 byte of the buffer (CodecCost::gather_ranks),
// or, without that table, n payloads at decode per payload byte plus a write of the buffer (gamma).
double sparse_combine(const CodecCost& k, double n, double gamma);

// The codec as ranks whose buffers hold `swept` f32 bytes together in one machine's caches see it (the
// measured copy held x f32 bytes in and x out, a rank of a collective its buffer in and out): each cost
// interpolated in its table at `swept`, the all-cores costs at swept / copies per copy; below the first
// size that size's, past the last the codec's own figures. Without a table the codec as it is. The
// result has no table.
CodecCost codec_at(const CodecCost& k, double swept);

struct Machine {
  double cores = 1;  // cores per node the ranks of a node share for codec and reduction work
  double gamma = 0;  // seconds per f32 byte of an elementwise sum (read two, write one)
  double call = 0;   // seconds one collective call costs beyond its messages (start, bookkeeping, completion)
  // Optional: the same sum over buffers of `sum_sizes` bytes (ascending) that stay where the last pass
  // left them, seconds per f32 byte: buffers that fit the caches are summed faster than gamma says.
  std::vector<double> sum_sizes, sum_seconds;
};

struct Model {
  Machine machine;
  std::map<std::string, Link> links;  // by name: "shm", "tcp", "inter", ...
  std::string intra = "shm";          // the link between ranks of one node
  std::string inter = "tcp";          // the link between nodes
  // "none" is always present: kind Dense, ratio 1 (the dense allreduce: no codec work), with the none
  // codec's copies as its encode and decode costs when measured (the two-level allreduce runs them).
  std::vector<CodecCost> codecs;
  Delivery delivery;                  // what TCP delivers of a nominal rate (at_nominal_rate)
  std::string source;                 // where the numbers came from (one line)

  const CodecCost* codec(const std::string& name) const;
  const Link& link(const std::string& name) const;  // throws std::invalid_argument naming the known ones
};

// Where ranks run.
struct Topology {
  uint64_t nodes = 1;
  uint64_t per_node = 1;  // ranks per node
  Link intra;
  Link inter;
  double cores = 1;  // per node
  double gamma = 0;  // seconds per f32 byte summed (the machine's)
  double call = 0;   // seconds per collective call (Machine::call)
  std::vector<double> sum_sizes, sum_seconds;  // Machine's, optional
  // The ranks whose buffers share one machine's caches: 0, a node's (per_node); more where nodes share
  // a host (ranks each behind a link of their own on one machine).
  uint64_t host_ranks = 0;
  uint64_t ranks() const { return nodes * per_node; }
};

// The cost per f32 byte of summing a buffer of `bytes` (the dense algorithms' reduction sweeps their
// buffer): from the machine's table by size where it has one (interpolated; below its first size that
// size's; past its last size gamma), else gamma.
double gamma_at(const Topology& t, double bytes);

// A topology of the machine's nodes: its sum (gamma and the table by size) and a call's cost.
void use_machine(Topology& t, const Machine& m);

// The collective algorithm an exchange uses.
enum class Algorithm {
  Auto,               // what gradwire runs for the codec (the kind's algorithm; dense: ring or doubling)
  Ring,               // dense ring allreduce (reduce-scatter + allgather)
  RecursiveDoubling,  // dense, log2(n) exchanges of the whole buffer
  Summable,           // ring over encoded pieces
  ScatterReduceAllgather,
  SparseAllgather,
  SparseDense,    // top-k whose gathered payloads would outweigh the dense ring: dense ring after encoding
  SharedIndices,  // the k values reduced by a dense allreduce
  TwoLevel,       // dense reduce-scatter inside nodes, the codec's algorithm between nodes on 1/g, allgather inside
};
const char* algorithm_name(Algorithm a);

// One exchange's predicted cost, its terms kept apart so callers can say what dominates.
struct Cost {
  Algorithm algorithm = Algorithm::Auto;
  double latency = 0;     // alpha terms
  double wire = 0;        // beta terms (bytes on the slowest link of the path)
  double cpu = 0;         // encode + decode + reduction, already scaled for ranks sharing cores
  double encode = 0;      // of which encoding and decoding
  double transport = 0;   // the link's cpu per byte sent and received, scaled alike (concurrent with wire)
  double bytes_sent = 0;  // per rank
  double total = 0;       // latency + the pipelined combination of wire and cpu
};

// Tunables of the algorithms, as the runtime's configuration has them.
struct Settings {
  double chunk_bytes = 1 << 20;             // [collectives] pipeline_chunk_bytes: pipelined piece (f32 bytes)
  double ring_threshold_bytes = 64 << 10;   // [collectives] ring_threshold_bytes
  std::string two_level_cross = "auto";     // [collectives] two_level_cross: auto, gather, scatter
};

// The cost of averaging `bytes` f32 bytes over the topology with codec `c` and algorithm `a` (Auto:
// what gradwire runs), the codec's costs at the bytes the ranks of a host keep in its caches (codec_at:
// twice `bytes` per rank of the host, model.cpp). Throws std::invalid_argument for an algorithm that
// does not apply to the codec.
Cost exchange(const CodecCost& c, double bytes, const Topology& t, Algorithm a = Algorithm::Auto,
              const Settings& s = {});

// The algorithms that apply to a codec on a topology (Auto resolved), in a fixed order.
std::vector<Algorithm> algorithms_for(const CodecCost& c, const Topology& t, double bytes, const Settings& s = {});

// A training step: `compute` seconds of forward + backward, of which the backward pass (the last
// `backward_fraction`) can overlap the exchange; `exchanges_per_step` (1, or 1 / H for local SGD and
// accumulation over H steps); `codec_shares_compute` when encode/decode run on the cores that compute
// (CPU training) so they cannot hide behind it.
struct StepShape {
  double compute = 0;
  double backward_fraction = 2.0 / 3.0;
  double exchanges_per_step = 1;
  bool codec_shares_compute = false;
};
double step_time(const Cost& exchange_cost, const StepShape& shape, bool overlap = true);

// Fits a link from timed messages: least squares of t = alpha + bytes * beta (alpha, beta >= 0).
// Needs two distinct sizes; throws std::invalid_argument otherwise.
Link fit_link(const std::vector<double>& bytes, const std::vector<double>& seconds);

// A tc-style rate ("100mbit", "1gbit", "10gbit", "2.5gbit", "800kbit", "1000000" bit/s) in bytes per
// second; throws std::invalid_argument with the accepted forms.
double parse_rate(const std::string& rate);

// The model as a TOML document and back (docs/cost-model.md lists the keys). from_toml throws
// std::invalid_argument naming the missing or bad key.
std::string to_toml(const Model& m);
Model from_toml(const std::string& text, const std::string& origin);
Model load(const std::string& path);  // throws std::runtime_error when the file cannot be read

// The reference machine's model, embedded at build time from the committed calibration
// (bench/results/calibration.toml; docs/cost-model.md, "The reference machine"): what `gradwire
// simulate` uses where no model file is given or found. Its `source` says where it came from.
const char* reference_model_text();
Model reference_model();
// The name a model from reference_model() goes by in messages.
inline constexpr const char* kReferenceModelName = "the embedded reference model";

// The model a command uses: `path` when it names a file (an error when it cannot be read), else
// `default_path` when that file exists, else the embedded reference model. *used (optional) gets the file's
// name or kReferenceModelName, *note (optional) the line to print first: which model, and for the
// reference one that `gradwire calibrate` replaces it.
Model load_or_reference(const std::string& path, const std::string& default_path, std::string* used,
                        std::string* note);
void save(const Model& m, const std::string& path);

// The auto codec's choice for one bucket: the allowed codec the model predicts fastest, "none" unless
// a codec beats it by more than `margin` (a fraction; noise in the measurements should not switch
// compression on), with the reason in words.
struct Choice {
  std::string codec;
  std::string reason;
  double predicted = 0;       // seconds, the chosen codec
  double predicted_none = 0;  // seconds, uncompressed
  // Every candidate's cost: uncompressed first, then each allowed codec the model has, in `allowed` order.
  std::vector<std::pair<std::string, Cost>> candidates;
};
// The choice rule: a codec is chosen over uncompressed only when it is more than `margin` faster.
inline bool beats_uncompressed(double codec_seconds, double none_seconds, double margin) {
  return codec_seconds < (1 - margin) * none_seconds;
}
Choice choose(const Model& m, const std::vector<std::string>& allowed, double bytes, const Topology& t,
              double margin = 0.05, const Settings& s = {});

// Why `codec` does not beat `none` (or by how much it does), from the terms of the two costs.
std::string explain(const CodecCost& codec, const Cost& with_codec, const Cost& without);

}  // namespace gw::model
