// The formulas of the cost model. Notation (docs/cost-model.md): n ranks, M f32 bytes, a link's alpha
// and beta, the machine's gamma, a codec's encode e, decode d (per f32 byte) and size ratio r.
#include "model/model.hpp"

#include "model/two_level_cross.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>
#include <stdexcept>

namespace gw::model {
namespace {

// Work of the ranks of one node shared by its cores: per_node ranks on `cores` cores take turns. A
// fraction of a core is a node that shares a machine with others (ranks each behind a link of their
// own on one host: cores / ranks each).
double oversubscription(const Topology& t) {
  return std::max(1.0, double(t.per_node) / std::max(1e-6, t.cores));
}

// The link a flat algorithm over all ranks sees. A ring crosses node boundaries on one edge per node, so
// every hop is paced by the slower link. Algorithms where every rank sends to every other (all-to-all)
// share a node's inter-node link among its ranks for the fraction (n - g) / (n - 1) of destinations
// that are off the node.
Link flat_link(const Topology& t, bool all_to_all) {
  if (t.nodes <= 1) return t.intra;
  if (t.per_node <= 1) {
    // Two nodes of one rank: the all-to-all is one flow each way, as a ring's.
    Link l = t.inter;
    if (t.nodes == 2) l.all_to_all_beta = 0;
    return l;
  }
  const double n = double(t.ranks()), g = double(t.per_node);
  Link l;
  l.alpha = std::max(t.intra.alpha, t.inter.alpha);
  const double shared = all_to_all ? g * (n - g) / (n - 1) : 1.0;
  l.beta = std::max(t.intra.beta, t.inter.beta * shared);
  if (all_to_all && t.inter.all_to_all_beta > 0)
    l.all_to_all_beta = std::max(t.intra.beta, t.inter.all_to_all_beta * shared);
  // The cores' work is the bytes' on each link: of a rank's bytes, a ring sends 1 / g off the node (one
  // edge of the node's g), an all-to-all (n - g) / (n - 1); the rest goes over the node's own link.
  const double off = all_to_all ? (n - g) / (n - 1) : 1 / g;
  l.cpu = off * t.inter.cpu + (1 - off) * t.intra.cpu;
  return l;
}

// The wire's seconds per byte of an algorithm where every rank sends to every other at once.
double all_to_all_beta(const Link& l) { return std::max(l.beta, l.all_to_all_beta); }

// Pipelined stages: the slower of the wire and the cores' work (the codec's, the reduction's and the
// transport's), plus the faster of wire and codec work's share of one piece: the pipeline fills and
// drains (a piece is encoded before it travels and decoded after; the transport's work per byte runs
// while its bytes travel, so it adds nothing there).
double pipelined(double wire, double cpu, double pieces, double transport) {
  return std::max(wire, cpu + transport) + std::min(wire, cpu) / std::max(1.0, pieces);
}

void crowd(Link& step, const Link& l, double bytes, double s);
void crowd_ring(Link& step, const Link& l, double bytes, double s, double swept_beta);
bool has_crowded_steps(const Link& l);
bool has_crowded_sums(const Link& l);
bool has_ring_steps(const Link& l);
double ring_step(const Link& l, double block);
double in_ring_sum(const Link& l, const std::vector<double>& plain, const std::vector<double>& summed,
                   double per_core, double block);

Cost ring(double M, double n, const Link& link, double gamma, double s) {
  Cost c;
  c.algorithm = Algorithm::Ring;
  if (n <= 1) return c;
  // Each step moves a block: alpha (and the hand-over between ranks sharing a core) is a block's. The
  // copies run at the speed of the buffer the ring sweeps, M on every rank: a block read or written
  // for the first time is as far from the caches as the buffer it belongs to, whatever its own size.
  // The table's exchange of X each way keeps 2 X bytes on each core (X sent and X received by its one
  // rank), and the ring's s ranks per core keep s M: the exchange of s M / 2 sweeps as much.
  // A step is never faster than the block's exchange alone, though (its protocol's handshakes: a 32 KiB
  // block goes by rendezvous).
  Link l = at_message(link, M / n, 1);
  const Link swept = at_message(link, s * M / 2, 1);
  const double block_beta = l.beta;
  if (swept.beta > l.beta) {
    l.beta = swept.beta;
    l.cpu = swept.cpu;
  }
  if (s <= 1 && has_ring_steps(link)) {
    // Ranks on cores of their own, with the 2-rank ring's table: its step of the block, its copies
    // slowed as the exchanges' by a larger buffer swept, and its sums in place of gamma, from the 2-rank
    // ring whose buffer is as large as this one (its block M / 2).
    const double slowed = block_beta > 0 ? std::max(1.0, swept.beta / block_beta) : 1.0;
    const double beta = std::max(0.0, ring_step(link, M / n) - link.alpha) / (M / n) * slowed;
    if (l.beta > 0) l.cpu *= beta / l.beta;
    l.beta = beta;
    l.alpha = link.alpha;
    gamma = in_ring_sum(link, link.ring_seconds, link.ring_summed_seconds, 1, M / 2);
  } else if (s > 1 && has_crowded_sums(link)) {
    // Ranks sharing cores: the sums of the crowded table's ring at the block (its ranks two to a core).
    gamma = in_ring_sum(link, link.crowded_seconds, link.crowded_summed_seconds, 2, M / n);
  }
  // Ranks sharing cores: the crowded table's step of the block (crowd_ring).
  crowd_ring(l, link, M / n, s, swept.beta);
  c.latency = 2 * (n - 1) * l.alpha;
  c.bytes_sent = 2 * (n - 1) / n * M;
  c.wire = c.bytes_sent * l.beta;
  c.transport = c.bytes_sent * l.cpu * s;
  c.cpu = (n - 1) / n * M * gamma * s;
  // The dense ring reduces a block after it arrived (no overlap with the wire); the transport's own work
  // runs while the bytes travel, so the slower of the two paces the transfer.
  c.total = c.latency + std::max(c.wire, c.transport) + c.cpu;
  return c;
}

Cost recursive_doubling(double M, double n, const Link& link, double gamma, double s) {
  Cost c;
  c.algorithm = Algorithm::RecursiveDoubling;
  if (n <= 1) return c;
  const Link l = at_message(link, M, s);  // each round moves the whole buffer
  const double p = std::exp2(std::floor(std::log2(n)));
  const double rounds = std::log2(p) + (p < n ? 2 : 0);  // non-powers of two fold in and unfold
  c.latency = rounds * l.alpha;
  c.bytes_sent = rounds * M;
  c.wire = c.bytes_sent * l.beta;
  c.transport = c.bytes_sent * l.cpu * s;
  c.cpu = (std::log2(p) + (p < n ? 1 : 0)) * M * gamma * s;
  c.total = c.latency + std::max(c.wire, c.transport) + c.cpu;
  return c;
}

Cost dense(double M, double n, const Link& l, double gamma, double s, const Settings& st) {
  return M >= st.ring_threshold_bytes && M >= 4 * n ? ring(M, n, l, gamma, s) : recursive_doubling(M, n, l, gamma, s);
}

// Pieces per block for the alpha term of the pipelined algorithms: each piece is a message.
double pieces_of(double bytes, const Settings& st) { return std::max(1.0, std::ceil(bytes / st.chunk_bytes)); }

// A decode that adds into a buffer: measured, or a decode followed by a sum.
double decode_adding(const CodecCost& k, double gamma) {
  return k.decode_accumulate > 0 ? k.decode_accumulate : k.decode + gamma;
}

Cost summable(const CodecCost& k, double M, double n, const Link& l, double gamma, double s, const Settings& st) {
  Cost c;
  c.algorithm = Algorithm::Summable;
  const double pieces = pieces_of(M / n, st);
  c.latency = 2 * (n - 1) * pieces * l.alpha;
  c.bytes_sent = 2 * (n - 1) / n * M / k.ratio;
  c.wire = c.bytes_sent * l.beta;
  // Reduce-scatter: per hop, decode a block adding it onto this rank's values and re-encode it; the
  // owner encodes its block once and decodes that encoding too (every rank holds the same values);
  // allgather: decode every arriving block.
  c.encode = (M / n * (k.encode + k.decode) + (n - 1) / n * M * (k.encode + decode_adding(k, gamma) + k.decode)) * s;
  c.cpu = c.encode;
  c.transport = c.bytes_sent * l.cpu * s;
  c.total = c.latency + pipelined(c.wire, c.cpu, pieces, c.transport);
  return c;
}

// piece_gamma: the sum's cost per byte on a piece just written, still in the caches (the machine's sum at
// the pipeline's piece size, gamma_at): what the average of a finished piece costs.
Cost scatter_reduce_allgather(const CodecCost& k, double M, double n, const Link& l, double gamma,
                              double piece_gamma, double s, const Settings& st) {
  Cost c;
  c.algorithm = Algorithm::ScatterReduceAllgather;
  const double pieces = pieces_of(M / n, st);
  c.latency = 2 * (n - 1) * pieces * l.alpha;
  c.bytes_sent = 2 * (n - 1) / n * M / k.ratio;
  c.wire = c.bytes_sent * all_to_all_beta(l);
  // Every rank encodes the n - 1 blocks it contributes; the owner decodes the n - 1 contributions adding
  // them into its sum, adds its own values and re-quantizes its block once; every rank decodes all n
  // owners' results, its own too (so that every rank holds the same values).
  c.encode = ((n - 1) / n * M * k.encode + M / n * k.encode +
              (n - 1) / n * M * decode_adding(k, gamma) + M * k.decode) * s;
  c.cpu = c.encode + M / n * piece_gamma * s;  // the owner's sum averaged as it is finished
  c.transport = c.bytes_sent * l.cpu * s;
  c.total = c.latency + pipelined(c.wire, c.cpu, pieces, c.transport);
  return c;
}

Cost sparse_allgather(const CodecCost& k, double M, double n, const Link& l, double gamma, double s,
                      const Settings& st) {
  Cost c;
  c.algorithm = Algorithm::SparseAllgather;
  const double pieces = pieces_of(M, st);
  const double payload = M / k.ratio;
  c.latency = (n - 1) * pieces * l.alpha;
  c.bytes_sent = (n - 1) * payload;
  c.wire = c.bytes_sent * all_to_all_beta(l);
  // Encode the whole buffer; combine the n payloads into the dense result (sparse_combine: written once,
  // n payloads' values added), and average it.
  const double combine = M * sparse_combine(k, n, gamma);
  c.encode = (M * k.encode + combine - (k.gather_ranks.empty() ? M * gamma : 0)) * s;
  c.cpu = c.encode + M * gamma * s;  // the dense result written once (table: its average)
  c.transport = c.bytes_sent * l.cpu * s;
  c.total = c.latency + pipelined(c.wire, c.cpu, pieces, c.transport);
  return c;
}

// The two-level cross phase when it gathers (two_level_cross): every rank encodes its M bytes once,
// sends the payload to the n - 1 others and decodes all n payloads into its result (piece_gamma as in
// scatter_reduce_allgather).
Cost gather_encoded(const CodecCost& k, double M, double n, const Link& l, double gamma, double piece_gamma,
                    double s, const Settings& st) {
  Cost c;
  c.algorithm = Algorithm::TwoLevel;
  const double pieces = pieces_of(M, st);
  c.latency = (n - 1) * pieces * l.alpha;
  c.bytes_sent = (n - 1) * M / k.ratio;
  c.wire = c.bytes_sent * all_to_all_beta(l);
  // The first payload decoded into the result, the other n - 1 added onto it.
  c.encode = (M * k.encode + M * k.decode + (n - 1) * M * decode_adding(k, gamma)) * s;
  c.cpu = c.encode + M * piece_gamma * s;  // each piece averaged as it is finished
  c.transport = c.bytes_sent * l.cpu * s;
  c.total = c.latency + pipelined(c.wire, c.cpu, pieces, c.transport);
  return c;
}

Cost sparse_dense(const CodecCost& k, double M, double n, const Link& l, double gamma, double s, const Settings& st) {
  Cost c = dense(M, n, l, gamma, s, st);
  c.algorithm = Algorithm::SparseDense;
  c.encode = (M * k.encode + M / k.ratio * k.decode) * s;
  c.cpu += c.encode;
  c.total += c.encode;
  return c;
}

Cost shared_indices(const CodecCost& k, double M, double n, const Link& l, double gamma, double s, const Settings& st) {
  Cost c = dense(M / k.ratio, n, l, gamma, s, st);  // the k values of every rank reduced densely
  c.algorithm = Algorithm::SharedIndices;
  // Every rank encodes its whole buffer at the same moment, and decodes it at the same moment after the
  // values' allreduce: the codec's cost with every core running it, where measured.
  const double encode = k.encode_all_cores > 0 ? k.encode_all_cores : k.encode;
  const double decode = k.decode_all_cores > 0 ? k.decode_all_cores : k.decode;
  c.encode = (M * encode + M * decode) * s;
  c.cpu += c.encode;
  c.total += c.encode;
  return c;
}

}  // namespace

const char* kind_name(CodecKind k) {
  switch (k) {
    case CodecKind::Dense: return "dense";
    case CodecKind::Summable: return "summable";
    case CodecKind::Quantized: return "quantized";
    case CodecKind::Sparse: return "sparse";
    case CodecKind::SharedIndices: return "shared-indices";
  }
  return "?";
}

std::optional<CodecKind> kind_from_name(const std::string& name) {
  for (CodecKind k : {CodecKind::Dense, CodecKind::Summable, CodecKind::Quantized, CodecKind::Sparse,
                      CodecKind::SharedIndices})
    if (name == kind_name(k)) return k;
  return std::nullopt;
}

const char* algorithm_name(Algorithm a) {
  switch (a) {
    case Algorithm::Auto: return "auto";
    case Algorithm::Ring: return "ring";
    case Algorithm::RecursiveDoubling: return "recursive doubling";
    case Algorithm::Summable: return "summable ring";
    case Algorithm::ScatterReduceAllgather: return "scatter-reduce-allgather";
    case Algorithm::SparseAllgather: return "sparse allgather";
    case Algorithm::SparseDense: return "sparse, dense ring";
    case Algorithm::SharedIndices: return "shared indices";
    case Algorithm::TwoLevel: return "two-level";
  }
  return "?";
}

const CodecCost* Model::codec(const std::string& name) const {
  for (const CodecCost& c : codecs)
    if (c.name == name) return &c;
  return nullptr;
}

const Link& Model::link(const std::string& name) const {
  auto it = links.find(name);
  if (it == links.end()) {
    std::string known;
    for (const auto& [k, v] : links) known += (known.empty() ? "" : ", ") + k;
    throw std::invalid_argument("the model has no link '" + name + "' (it has: " + (known.empty() ? "none" : known) +
                                "); run gradwire calibrate, or name one of those");
  }
  return it->second;
}

}  // namespace gw::model

namespace gw::model {
namespace {

Algorithm own_algorithm(const CodecCost& k, double M, double n, const Settings& st) {
  switch (k.kind) {
    case CodecKind::Dense: return M >= st.ring_threshold_bytes && M >= 4 * n ? Algorithm::Ring : Algorithm::RecursiveDoubling;
    case CodecKind::Summable: return Algorithm::Summable;
    case CodecKind::Quantized: return Algorithm::ScatterReduceAllgather;
    case CodecKind::Sparse:  // as choose_compressed: gather while n payloads weigh at most twice the buffer
      return n * M / k.ratio <= 2 * M ? Algorithm::SparseAllgather : Algorithm::SparseDense;
    case CodecKind::SharedIndices: return Algorithm::SharedIndices;
  }
  return Algorithm::Ring;
}

bool applies(const CodecCost& k, Algorithm a) {
  switch (a) {
    case Algorithm::Auto:
    case Algorithm::TwoLevel: return true;
    case Algorithm::Ring:
    case Algorithm::RecursiveDoubling: return k.kind == CodecKind::Dense;
    case Algorithm::Summable: return k.kind == CodecKind::Summable;
    case Algorithm::ScatterReduceAllgather: return k.kind == CodecKind::Quantized || k.kind == CodecKind::Summable;
    case Algorithm::SparseAllgather:
    case Algorithm::SparseDense: return k.kind == CodecKind::Sparse;
    case Algorithm::SharedIndices: return k.kind == CodecKind::SharedIndices;
  }
  return false;
}

Cost flat(const CodecCost& k, double M, const Topology& t, Algorithm a, const Settings& st) {
  const double n = double(t.ranks()), s = oversubscription(t), gamma = t.gamma;
  const bool all_to_all = a == Algorithm::ScatterReduceAllgather || a == Algorithm::SparseAllgather ||
                          a == Algorithm::RecursiveDoubling;
  const Link l = flat_link(t, all_to_all);
  switch (a) {
    // The reductions sweep M on each of a node's ranks, which share its caches.
    case Algorithm::Ring: return ring(M, n, l, gamma_at(t, M * double(t.per_node)), s);
    case Algorithm::RecursiveDoubling: return recursive_doubling(M, n, l, gamma_at(t, M * double(t.per_node)), s);
    case Algorithm::Summable: return summable(k, M, n, l, gamma, s, st);
    case Algorithm::ScatterReduceAllgather:
      return scatter_reduce_allgather(k, M, n, l, gamma, gamma_at(t, st.chunk_bytes), s, st);
    case Algorithm::SparseAllgather: return sparse_allgather(k, M, n, l, gamma, s, st);
    case Algorithm::SparseDense: return sparse_dense(k, M, n, l, gamma, s, st);
    case Algorithm::SharedIndices: return shared_indices(k, M, n, l, gamma, s, st);
    default: break;
  }
  throw std::invalid_argument(std::string("no flat formula for ") + algorithm_name(a));
}

// Piecewise linear through (sizes, seconds), held at the end points beyond them (what a size past the
// table costs is each caller's own rule).
double interpolate(const std::vector<double>& x, const std::vector<double>& y, double at) {
  if (x.size() == 1 || at <= x.front()) return y.front();
  if (at >= x.back()) return y.back();
  size_t i = 1;
  while (i + 1 < x.size() && at > x[i]) ++i;
  const double slope = (y[i] - y[i - 1]) / (x[i] - x[i - 1]);
  return std::max(0.0, y[i - 1] + (at - x[i - 1]) * slope);
}

}  // namespace

CodecCost codec_at(const CodecCost& k, double swept) {
  CodecCost out = k;
  out.sizes.clear();
  out.at_sizes.clear();
  if (k.sizes.empty() || k.sizes.size() != k.at_sizes.size()) return out;
  const double per_copy = swept / std::max(1.0, k.copies);
  // One cost through the table: held at the first size below it, the codec's own figure past the last.
  const auto at = [&](double CodecRates::*rate, double own, double bytes) {
    if (own <= 0 || bytes >= k.sizes.back()) return own;
    std::vector<double> y;
    for (const CodecRates& r : k.at_sizes) y.push_back(r.*rate);
    if (std::find(y.begin(), y.end(), 0.0) != y.end()) return own;  // not measured at every size
    return interpolate(k.sizes, y, bytes);
  };
  out.encode = at(&CodecRates::encode, k.encode, swept);
  out.decode = at(&CodecRates::decode, k.decode, swept);
  out.decode_accumulate = at(&CodecRates::decode_accumulate, k.decode_accumulate, swept);
  out.encode_all_cores = at(&CodecRates::encode_all_cores, k.encode_all_cores, per_copy);
  out.decode_all_cores = at(&CodecRates::decode_all_cores, k.decode_all_cores, per_copy);
  return out;
}

double gamma_at(const Topology& t, double bytes) {
  if (t.sum_sizes.empty() || t.sum_sizes.size() != t.sum_seconds.size() || bytes > t.sum_sizes.back()) return t.gamma;
  return interpolate(t.sum_sizes, t.sum_seconds, bytes);
}

void use_machine(Topology& t, const Machine& m) {
  t.gamma = m.gamma;
  t.call = m.call;
  t.sum_sizes = m.sum_sizes;
  t.sum_seconds = m.sum_seconds;
}

Link with_beta(Link l, double beta) {
  l.beta = beta;
  l.all_to_all_beta = 0;
  l.sizes.clear();
  l.seconds.clear();
  l.crowded_seconds.clear();
  l.crowded_summed_seconds.clear();
  l.ring_seconds.clear();
  l.ring_summed_seconds.clear();
  return l;
}

std::pair<double, double> delivered_at(const Delivery& d, double rate) {
  if (d.empty() || d.efficiency.size() != d.rates.size() || !(rate > 0)) return {1.0, 1.0};
  std::vector<double> x;
  for (double r : d.rates) x.push_back(std::log(r));
  const double flow = interpolate(x, d.efficiency, std::log(rate));
  double all = 0;
  if (d.all_to_all.size() == d.rates.size()) {
    // Only the rates where it was measured.
    std::vector<double> ax, ay;
    for (size_t i = 0; i < x.size(); ++i)
      if (d.all_to_all[i] > 0) ax.push_back(x[i]), ay.push_back(d.all_to_all[i]);
    if (!ax.empty()) all = interpolate(ax, ay, std::log(rate));
  }
  return {flow > 0 ? flow : 1.0, all > 0 ? all : (flow > 0 ? flow : 1.0)};
}

double cpu_factor_at(const Delivery& d, double rate) {
  if (d.cpu_factor.size() != d.rates.size() || !(rate > 0)) return 1.0;
  std::vector<double> x, y;  // only the rates where it was measured
  for (size_t i = 0; i < d.rates.size(); ++i)
    if (d.cpu_factor[i] > 0) x.push_back(std::log(d.rates[i])), y.push_back(d.cpu_factor[i]);
  if (x.empty()) return 1.0;
  const double f = interpolate(x, y, std::log(rate));
  return f > 0 ? f : 1.0;
}

void add_delivery(Delivery& d, double rate, double efficiency, double all_to_all, double cpu_factor) {
  d.all_to_all.resize(d.rates.size(), 0.0);
  d.cpu_factor.resize(d.rates.size(), 0.0);
  size_t i = 0;
  while (i < d.rates.size() && d.rates[i] < rate) ++i;
  if (i < d.rates.size() && d.rates[i] == rate) {
    d.efficiency[i] = efficiency;
    if (all_to_all > 0) d.all_to_all[i] = all_to_all;
    if (cpu_factor > 0) d.cpu_factor[i] = cpu_factor;
    return;
  }
  d.rates.insert(d.rates.begin() + long(i), rate);
  d.efficiency.insert(d.efficiency.begin() + long(i), efficiency);
  d.all_to_all.insert(d.all_to_all.begin() + long(i), all_to_all);
  d.cpu_factor.insert(d.cpu_factor.begin() + long(i), cpu_factor);
}

Link at_nominal_rate(const Link& l, double rate, const Delivery& d) {
  const auto [flow, all] = delivered_at(d, rate);
  Link out = with_beta(l, 1 / (rate * flow));
  std::ostringstream o;
  o.precision(3);
  o << "nominal rate " << rate * 8 / 1e9 << " Gbit/s";
  if (d.empty()) {
    o << ", taken as it is (the model has no measured delivery of TCP)";
  } else {
    out.all_to_all_beta = all != flow ? 1 / (rate * all) : 0;
    const double cpu = cpu_factor_at(d, rate);
    out.cpu = l.cpu * cpu;
    o << ", of which TCP delivers " << flow * 100 << " % to one flow and " << all * 100
      << " % to a node sending to all others at once, at " << cpu << " times the host's TCP CPU per byte ("
      << d.source << ")";
  }
  out.origin = o.str();
  return out;
}

namespace {

// Whether the link's table has the crowded steps (as many as its sizes).
bool has_crowded_steps(const Link& l) { return !l.sizes.empty() && l.crowded_seconds.size() == l.sizes.size(); }

// What a step of ranks two to a core takes beyond the two-core step stretched by 2 (the model's form at
// s = 2: alpha + 2 (time - alpha)), at `bytes`: interpolated between the measured sizes, past the last
// one held at its value (the rest of a large step is copies, which the stretched beta already has).
double hand_over(const Link& l, double bytes) {
  std::vector<double> extra(l.sizes.size());
  for (size_t i = 0; i < extra.size(); ++i)
    extra[i] = std::max(0.0, l.crowded_seconds[i] - (2 * l.seconds[i] - l.alpha));
  return interpolate(l.sizes, extra, bytes);
}

// Ranks sharing cores (s > 1) on `step`, a step of `bytes` of the tabled link `l` whose copies run at
// step.beta, against the two-core step stretched by 2 (alpha + 2 bytes beta): where the crowded step is
// the slower, (s - 1) hand-overs added to alpha (never more than the table's own hand-over at `bytes`);
// where it is the faster, within the measured sizes, its copies' rate: beta (and cpu) scaled so that
// with s = 2 the step is the crowded step (half the partners share a core there, and their copies do
// not cross to the other core's cache as every copy of the two-core exchange does). Past the largest
// measured size the hand-over held there.
void crowd(Link& step, const Link& l, double bytes, double s) {
  if (s <= 1 || !has_crowded_steps(l)) return;
  if (bytes > l.sizes.back()) {
    step.alpha += (s - 1) * hand_over(l, bytes);
    return;
  }
  const double crowded = interpolate(l.sizes, l.crowded_seconds, bytes);
  const double stretched = l.alpha + 2 * bytes * step.beta;
  if (crowded >= stretched) {
    step.alpha += (s - 1) * std::min(crowded - stretched, hand_over(l, bytes));
  } else if (bytes > 0 && step.beta > 0) {
    const double scale = std::max(0.0, crowded - l.alpha) / (2 * bytes * step.beta);
    step.beta *= scale;
    step.cpu *= scale;
  }
}

// The two-core exchange of `bytes` each way from the table: interpolated between its sizes, past the last
// in proportion to its time (at_message).
double exchange_seconds(const Link& l, double bytes) {
  return bytes > l.sizes.back() ? l.seconds.back() * bytes / l.sizes.back() : interpolate(l.sizes, l.seconds, bytes);
}

// A ring's step of `bytes` blocks with s ranks per core (s > 1) on `step`: within the tabled sizes the
// crowded table's step of that block, split into its hand-over and its copies against the two-core
// exchange that keeps as many bytes on a core (the crowded step's two ranks per core each send and
// receive a block, 4 blocks on the core; the exchange of 2 blocks keeps as many). The hand-over is
// what the crowded step takes beyond that exchange, once per rank beyond the first on a core; the
// copies, stretched by s / 2, run at the slower of that exchange's beta and the beta of the buffer the
// ring sweeps (`swept_beta`): the table's steps of a 1 MiB block keep 4 MiB on a core, a 4-rank ring of
// 4 MiB keeps 8 MiB, and the exchange that keeps 8 MiB (4 MiB each way) ran at about half the rate of
// the one that keeps 4 MiB in this machine's calibrations. Held against the exchange of one block
// instead (cache-resident where the crowded step was not), the crowded step read as the faster, and 4
// ranks' 4 MiB was predicted 22-53 % short. Past the largest size, as crowd(): the hand-over held there
// (the copies keep the swept beta).
void crowd_ring(Link& step, const Link& l, double bytes, double s, double swept_beta) {
  if (s <= 1 || bytes <= 0 || !has_crowded_steps(l)) return;
  if (bytes > l.sizes.back()) {
    step.alpha += (s - 1) * hand_over(l, bytes);
    return;
  }
  const double crowded = interpolate(l.sizes, l.crowded_seconds, bytes);
  const double same_bytes = exchange_seconds(l, 2 * bytes);
  const double extra = std::max(0.0, crowded - same_bytes);  // the hand-over
  const double copies = std::max(0.0, crowded - l.alpha - extra);
  const double beta_same = std::max(0.0, same_bytes - l.alpha) / (2 * bytes);
  const double slowed = beta_same > 0 ? std::max(1.0, swept_beta / beta_same) : 1.0;
  const double beta = copies * slowed / (2 * bytes);
  if (step.beta > 0) step.cpu *= beta / step.beta;
  step.beta = beta;
  step.alpha = l.alpha + (s - 1) * extra;
}

// Whether the link has the crowded steps with their sums as well (as many as its sizes).
bool has_crowded_sums(const Link& l) {
  return has_crowded_steps(l) && l.crowded_summed_seconds.size() == l.sizes.size();
}

// Whether the link has the 2-rank ring's steps, without and with its sums (as many as its sizes).
bool has_ring_steps(const Link& l) {
  return !l.sizes.empty() && l.ring_seconds.size() == l.sizes.size() && l.ring_summed_seconds.size() == l.sizes.size();
}

// The 2-rank ring's step of `block` bytes (Link::ring_seconds): interpolated, past the largest size in
// proportion to its time.
double ring_step(const Link& l, double block) {
  return block > l.sizes.back() ? l.ring_seconds.back() * block / l.sizes.back()
                                : interpolate(l.sizes, l.ring_seconds, block);
}

// A ring's sums per f32 byte as they run in its pass, from a table of the pass's steps without (`plain`)
// and with its sums (`summed`), its ranks `per_core` to a core: a pass of 2 (n - 1) steps sums n - 1
// blocks on each rank, the ranks of a core one after another, so the summed steps' excess is per_core / 2
// sums of a block per step. At the `block` size, past the largest size held. In the pass, as in the
// allreduce run back to back, a block is summed in place just after the next rank read it (the previous
// allgather sent it): every line written is taken back from that rank's cache first. On one VM 2 ranks'
// sums of 128 to 512 KiB blocks ran at 0.13 to 0.18 ns per byte where its sum table read 0.02 to 0.04,
// and the table had 2 ranks' 256 KiB and 1 MiB predicted 19-23 % short; 4 ranks on 2 cores summed their
// 4 MiB blocks near the table's 16 MiB rate, where the buffers the ranks swept (64 MiB) had them at
// gamma's, 2.4 times slower, and 4 ranks' 16 MiB predicted 22 and 31 % long.
double in_ring_sum(const Link& l, const std::vector<double>& plain, const std::vector<double>& summed,
                   double per_core, double block) {
  std::vector<double> sum(l.sizes.size());
  for (size_t i = 0; i < sum.size(); ++i)
    sum[i] = l.sizes[i] > 0 ? std::max(0.0, 2 * (summed[i] - plain[i])) / (per_core * l.sizes[i]) : 0;
  return interpolate(l.sizes, sum, block);
}

}  // namespace

double sparse_combine(const CodecCost& k, double n, double gamma) {
  const std::vector<double>& x = k.gather_ranks;
  const std::vector<double>& y = k.gather_seconds;
  if (x.empty() || x.size() != y.size()) return n * k.decode / k.ratio + gamma;
  if (x.size() == 1) return y[0] * n / x[0];  // in proportion to the payloads
  if (n <= x.front()) return y.front() * n / x.front();
  if (n >= x.back()) {
    const double slope = std::max(0.0, (y.back() - y[y.size() - 2]) / (x.back() - x[x.size() - 2]));
    return y.back() + (n - x.back()) * slope;
  }
  return interpolate(x, y, n);
}

Link at_message(const Link& l, double bytes, double s) {
  if (l.sizes.empty() || l.sizes.size() != l.seconds.size()) return l;
  Link out = l;
  // Past the largest measured message, in proportion to its time: beyond it every copy streams from
  // memory (the table reaches 64 MiB each way, past the last-level caches calibrate has met).
  const double own = exchange_seconds(l, bytes);
  if (bytes > 0) {
    out.beta = std::max(0.0, own - l.alpha) / bytes;
    if (l.beta > 0) out.cpu = l.cpu * out.beta / l.beta;
  }
  crowd(out, l, bytes, s);
  return out;
}

namespace {

// exchange() without the call's own cost, which exchange() adds once (the two-level cross groups' inner
// exchange runs inside the same call).
Cost exchange_of(const CodecCost& k, double M, const Topology& t, Algorithm a, const Settings& st) {
  if (t.nodes == 0 || t.per_node == 0)
    throw std::invalid_argument("the topology has no ranks; give at least one node with one rank");
  if (!(M >= 0)) throw std::invalid_argument("the exchanged size is negative or not a number");
  if (!applies(k, a))
    throw std::invalid_argument(std::string("algorithm '") + algorithm_name(a) + "' does not apply to codec '" +
                                k.name + "' (" + kind_name(k.kind) + ")");
  const double n = double(t.ranks());
  if (n <= 1 || M == 0) {  // one rank: decode(encode(x)) only
    Cost c;
    c.algorithm = a == Algorithm::Auto ? own_algorithm(k, M, 1, st) : a;
    // (The dense allreduce, "none", leaves one rank's values as they are.)
    if (k.kind != CodecKind::Dense)
      c.encode = c.cpu = M * (k.encode + (k.kind == CodecKind::Sparse ? k.decode / k.ratio : k.decode));
    c.total = c.cpu;
    return c;
  }
  if (a == Algorithm::TwoLevel && t.nodes > 1 && t.per_node > 1) {
    // Dense reduce-scatter inside each node, the codec's own algorithm between the nodes on each rank's
    // 1/g shard (the g shards of a node cross its one inter-node link at once), dense allgather inside.
    const double g = double(t.per_node), s = oversubscription(t);
    Cost c;
    c.algorithm = Algorithm::TwoLevel;
    const double intra_bytes = (g - 1) / g * M;
    c.latency = 2 * (g - 1) * t.intra.alpha;
    c.wire = 2 * intra_bytes * t.intra.beta;
    c.transport = 2 * intra_bytes * t.intra.cpu * s;
    c.cpu = intra_bytes * t.gamma * s;
    c.bytes_sent = 2 * intra_bytes;
    const double intra_paced = std::max(c.wire, c.transport);
    Topology between;
    between.nodes = t.nodes;
    between.per_node = 1;
    between.inter = Link{t.inter.alpha, t.inter.beta * g, t.inter.cpu};  // cpu: between.cores is per shard
    between.inter.all_to_all_beta = t.inter.all_to_all_beta * g;
    between.intra = between.inter;
    between.cores = t.cores / g;
    between.gamma = t.gamma;
    // The runtime's cross phase (collectives/allreduce_two_level_pipelined.cpp) encodes the node sums
    // with the codec, "none" (a copy) included: it gathers them under two_level_cross = gather (auto:
    // with 2 nodes), else runs a scatter-reduce-allgather. The model keeps the sparse codecs' own
    // algorithms (their payloads' decode is priced per payload byte).
    const bool dense_payload =
        k.kind == CodecKind::Dense || k.kind == CodecKind::Quantized || k.kind == CodecKind::Summable;
    const double nodes = double(t.nodes), sb = oversubscription(between), piece_gamma = gamma_at(t, st.chunk_bytes);
    const Cost x = !dense_payload ? exchange(k, M / g, between, Algorithm::Auto, st)
                   : coll::gathers_encoded(t.nodes, st.two_level_cross)
                       ? gather_encoded(k, M / g, nodes, between.inter, t.gamma, piece_gamma, sb, st)
                       : scatter_reduce_allgather(k, M / g, nodes, between.inter, t.gamma, piece_gamma, sb, st);
    const double intra_cpu = c.cpu;
    c.latency += x.latency;
    c.wire += x.wire;
    c.cpu += x.cpu;
    c.transport += x.transport;
    c.encode = x.encode;
    c.bytes_sent += x.bytes_sent;
    // The node's exact reduce-scatter and allgather, the cross groups' codec work and their exchange run
    // as one pipeline over pieces (collectives/allreduce_two_level_pipelined.cpp): the node's traffic is
    // work of the node's cores (a node-local link such as shared memory moves bytes with their copies),
    // beside the inter-node wire.
    c.total = c.latency + pipelined(x.wire, intra_paced + intra_cpu + x.cpu, pieces_of(M / g, st), x.transport);
    return c;
  }
  const Algorithm resolved = a == Algorithm::Auto || a == Algorithm::TwoLevel ? own_algorithm(k, M, n, st) : a;
  return flat(k, M, t, resolved, st);
}

}  // namespace

Cost exchange(const CodecCost& k, double M, const Topology& t, Algorithm a, const Settings& st) {
  // The codec's costs at the bytes the host's ranks keep in its caches, each rank's buffers counted
  // twice (kReuse): calibrate's copies ran pass after pass over their two buffers and nothing else,
  // where a rank between two passes over its buffers also runs the transport's copies, the algorithm's
  // scratch and payload buffers and the rest of its step (docs/cost-model.md: counted once, random-k
  // with 2 and 4 ranks was predicted up to 38 % short in one validation run; twice, all its P5 points
  // came within 17 %).
  constexpr double kReuse = 2;
  const double host_ranks = double(t.host_ranks > 0 ? t.host_ranks : t.per_node);
  Cost c = exchange_of(codec_at(k, kReuse * M * host_ranks), M, t, a, st);
  if (t.ranks() > 1 && M > 0) {  // one rank runs no collective
    c.latency += t.call;
    c.total += t.call;
  }
  return c;
}

std::vector<Algorithm> algorithms_for(const CodecCost& k, const Topology& t, double M, const Settings& st) {
  std::vector<Algorithm> out;
  switch (k.kind) {
    case CodecKind::Dense: out = {Algorithm::Ring, Algorithm::RecursiveDoubling}; break;
    case CodecKind::Summable: out = {Algorithm::Summable}; break;
    case CodecKind::Quantized: out = {Algorithm::ScatterReduceAllgather}; break;
    case CodecKind::Sparse: out = {own_algorithm(k, M, double(t.ranks()), st)}; break;
    case CodecKind::SharedIndices: out = {Algorithm::SharedIndices}; break;
  }
  if (t.nodes > 1 && t.per_node > 1) out.push_back(Algorithm::TwoLevel);
  return out;
}

double step_time(const Cost& x, const StepShape& shape, bool overlap) {
  const double f = shape.exchanges_per_step;
  if (!overlap) return shape.compute + f * x.total;
  const double busy = shape.compute + (shape.codec_shares_compute ? f * x.encode : 0);
  return std::max(busy, (1 - shape.backward_fraction) * shape.compute + f * x.total);
}

Link fit_link(const std::vector<double>& bytes, const std::vector<double>& seconds) {
  if (bytes.size() != seconds.size() || bytes.size() < 2)
    throw std::invalid_argument("fit_link needs as many times as sizes, at least two");
  const double m = double(bytes.size());
  double sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (size_t i = 0; i < bytes.size(); ++i) {
    sx += bytes[i], sy += seconds[i], sxx += bytes[i] * bytes[i], sxy += bytes[i] * seconds[i];
  }
  const double det = m * sxx - sx * sx;
  if (!(det > 0)) throw std::invalid_argument("fit_link needs at least two distinct message sizes");
  Link l;
  l.beta = (m * sxy - sx * sy) / det;
  l.alpha = (sy - l.beta * sx) / m;
  if (l.beta < 0) l.beta = 0, l.alpha = sy / m;
  if (l.alpha < 0) {  // refit through the origin
    l.alpha = 0;
    l.beta = sxx > 0 ? sxy / sxx : 0;
  }
  return l;
}

double parse_rate(const std::string& rate) {
  size_t used = 0;
  double v = 0;
  try {
    v = std::stod(rate, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  std::string unit = rate.substr(used);
  std::transform(unit.begin(), unit.end(), unit.begin(), [](unsigned char ch) { return char(std::tolower(ch)); });
  double scale = 0;
  if (unit.empty() || unit == "bit") scale = 1;
  else if (unit == "kbit") scale = 1e3;
  else if (unit == "mbit") scale = 1e6;
  else if (unit == "gbit") scale = 1e9;
  else if (unit == "tbit") scale = 1e12;
  if (used == 0 || scale == 0 || !(v > 0) || !std::isfinite(v))
    throw std::invalid_argument("bad link rate '" + rate +
                                "': give a positive number of bits per second with an optional unit, e.g. "
                                "100mbit, 1gbit, 10gbit, 2.5gbit");
  return v * scale / 8;
}

std::string explain(const CodecCost& k, const Cost& with, const Cost& without) {
  auto ms = [](double s) {
    std::ostringstream o;
    o.precision(3);
    o << s * 1e3 << " ms";
    return o.str();
  };
  // Moving the bytes takes the longer of the wire and the transport's CPU work per byte.
  const double saved_wire = std::max(without.wire, without.transport) - std::max(with.wire, with.transport);
  const double extra_cpu = with.cpu - without.cpu;
  const double extra_latency = with.latency - without.latency;
  if (with.total < without.total)
    return k.name + " saves " + ms(saved_wire) + " of wire time for " + ms(std::max(0.0, extra_cpu)) +
           " of encoding and decoding";
  if (saved_wire <= 0)
    return k.name + " sends no fewer bytes over the slowest link than uncompressed (" + ms(with.wire) + " against " +
           ms(without.wire) + ")";
  if (extra_latency > extra_cpu)
    return "latency term: " + k.name + "'s messages cost " + ms(extra_latency) + " more than uncompressed's, more than the " +
           ms(saved_wire) + " of wire time it saves";
  return "encode cost: " + k.name + "'s encoding and decoding (" + ms(extra_cpu) + ") exceed the " + ms(saved_wire) +
         " of wire time it saves";
}

Choice choose(const Model& m, const std::vector<std::string>& allowed, double M, const Topology& t, double margin,
              const Settings& st) {
  const CodecCost none{"none", CodecKind::Dense, 1, 0, 0};
  const Cost base = exchange(none, M, t, Algorithm::Auto, st);
  Choice best{"none", "", base.total, base.total, {{"none", base}}};
  const CodecCost* best_codec = nullptr;
  Cost best_cost = base;
  std::string skipped;
  for (const std::string& name : allowed) {
    if (name == "none") continue;
    const CodecCost* k = m.codec(name);
    if (!k) {
      skipped += (skipped.empty() ? "" : ", ") + name;
      continue;
    }
    const Cost c = exchange(*k, M, t, Algorithm::Auto, st);
    best.candidates.emplace_back(name, c);
    if (!best_codec || c.total < best_cost.total) best_codec = k, best_cost = c;
  }
  auto ms = [](double s) {
    std::ostringstream o;
    o.precision(3);
    o << s * 1e3 << " ms";
    return o.str();
  };
  const std::string tail = skipped.empty() ? "" : " (no measurements of " + skipped + ")";
  if (!best_codec) {
    best.reason = "no compressing codec allowed and measured; uncompressed predicted " + ms(base.total) + tail;
    return best;
  }
  if (beats_uncompressed(best_cost.total, base.total, margin)) {
    best.codec = best_codec->name;
    best.predicted = best_cost.total;
    best.reason = best_codec->name + " (" + algorithm_name(best_cost.algorithm) + ") predicted " + ms(best_cost.total) +
                  " against uncompressed " + ms(base.total) + ": " + explain(*best_codec, best_cost, base) + tail;
  } else {
    best.reason = "uncompressed predicted " + ms(base.total) + ", best codec " + best_codec->name + " " +
                  ms(best_cost.total) + (best_cost.total < base.total ? " (within the margin)" : "") + ": " +
                  explain(*best_codec, best_cost, base) + tail;
  }
  return best;
}

}  // namespace gw::model
