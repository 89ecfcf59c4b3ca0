// `gradwire simulate`: the cost model (docs/cost-model.md) evaluated for a model size, a list of tensor
// sizes or a PyTorch model's parameter counts, at any number of ranks, nodes x ranks per node and link
// rates: per codec, algorithm and schedule the exchange time, the step time with overlap, the bytes, the
// fastest choice, and where compression stops paying and why. --json, --svg.
#include <algorithm>
#include <cmath>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <map>
#include <sstream>

#include <nlohmann/json.hpp>

#include "costmodel/simulate.hpp"
#include "support/tool.hpp"
#include "model/model.hpp"
#include "support/plot.hpp"

namespace gwcli {
namespace {

using nlohmann::json;
namespace gm = gw::model;

std::vector<std::string> split_list(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  for (std::string item; std::getline(in, item, ',');)
    if (!item.empty()) out.push_back(item);
  return out;
}

// "25M", "1.5B", "340k", "1e9" -> a count.
double parse_count(const std::string& s, const std::string& what) {
  size_t used = 0;
  double v = -1;
  try {
    v = std::stod(s, &used);
  } catch (const std::exception&) {
  }
  const std::string unit = s.substr(std::min(used, s.size()));
  double scale = 0;
  if (unit.empty()) scale = 1;
  else if (unit == "k" || unit == "K") scale = 1e3;
  else if (unit == "M" || unit == "m") scale = 1e6;
  else if (unit == "B" || unit == "G" || unit == "b" || unit == "g") scale = 1e9;
  if (used == 0 || scale == 0 || !(v > 0) || !std::isfinite(v))
    throw std::invalid_argument("bad " + what + " '" + s + "': give a positive number, optionally with k, M or B");
  return v * scale;
}

// Tensor element counts from a JSON file: {"name": count, ...}, [count, ...], or
// [{"name": ..., "numel" | "count": n}, ...] (what the one-liner in docs/cost-model.md writes).
std::vector<double> read_torch_json(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::invalid_argument("cannot read '" + path + "'");
  json j;
  try {
    j = json::parse(in);
  } catch (const json::exception& e) {
    throw std::invalid_argument(path + ": not JSON (" + e.what() + ")");
  }
  std::vector<double> out;
  auto take = [&](const json& v, const std::string& where) {
    if (v.is_number() && v.get<double>() >= 0) return out.push_back(v.get<double>());
    if (v.is_object())
      for (const char* k : {"numel", "count", "params"})
        if (v.contains(k) && v[k].is_number()) return out.push_back(v[k].get<double>());
    throw std::invalid_argument(path + ": " + where + " is not a parameter count (a number, or an object with numel)");
  };
  if (j.is_object())
    for (auto& [k, v] : j.items()) take(v, "'" + k + "'");
  else if (j.is_array())
    for (size_t i = 0; i < j.size(); ++i) take(j[i], "entry " + std::to_string(i));
  else
    throw std::invalid_argument(path + ": expected an object {name: count} or a list of counts");
  if (out.empty()) throw std::invalid_argument(path + ": no tensors");
  return out;
}

// Bucket sizes in bytes: tensors fused in order while the bucket stays within bucket_bytes (gw_sync's
// rule: a bucket always takes its first tensor).
std::vector<double> buckets_of(const std::vector<double>& counts, double bucket_bytes) {
  std::vector<double> out;
  double open = 0;
  for (double c : counts) {
    const double b = 4 * c;
    if (open > 0 && open + b > bucket_bytes) out.push_back(open), open = 0;
    open += b;
  }
  if (open > 0) out.push_back(open);
  return out;
}

struct Point {
  uint64_t ranks = 0;
  gm::Topology topo;
  double inter_rate = 0;  // bytes/s
};

struct Row {
  std::string codec, schedule;
  gm::Algorithm algorithm;
  gm::Cost cost;  // summed over buckets, one exchange
  double per_step_exchange = 0, step = 0, bytes_per_step = 0;
};

std::string ms(double s) {
  std::ostringstream o;
  o << std::setprecision(4) << s * 1e3;
  return o.str();
}

std::string rate_text(double bytes_per_s) {
  std::ostringstream o;
  const double bits = bytes_per_s * 8;
  o << std::setprecision(3);
  if (bits >= 1e9) o << bits / 1e9 << " Gbit/s";
  else o << bits / 1e6 << " Mbit/s";
  return o.str();
}

int run(const SimulateArgs& a) {
  std::string model_name, model_note;
  const gm::Model model = gm::load_or_reference(a.model, "gradwire-model.toml", &model_name, &model_note);
  // The first line says which model answers (with --json on stderr, so that stdout stays one object).
  (a.json_out ? std::cerr : std::cout) << model_note << "\n";
  std::vector<double> counts;
  int sources = !a.params.empty() + !a.tensors.empty() + !a.torch_json.empty() + (a.bytes > 0);
  if (sources > 1) throw std::invalid_argument("give one of --params, --bytes, --tensors, --torch-json");
  if (!a.params.empty()) counts = {parse_count(a.params, "--params")};
  else if (a.bytes > 0) counts = {a.bytes / 4};
  else if (!a.tensors.empty())
    for (const std::string& t : split_list(a.tensors)) counts.push_back(parse_count(t, "tensor size"));
  else if (!a.torch_json.empty()) counts = read_torch_json(a.torch_json);
  else counts = {25e6};
  const std::vector<double> buckets = buckets_of(counts, a.bucket_bytes);
  double total_bytes = 0;
  for (double b : buckets) total_bytes += b;

  gm::Link intra = model.link(model.intra), inter = model.link(model.inter);
  if (!a.intra_rate.empty()) intra = gm::with_beta(intra, 1 / gm::parse_rate(a.intra_rate));
  // A nominal rate: what TCP delivers of it, as the model learned it (model.delivery).
  if (!a.inter_rate.empty()) inter = gm::at_nominal_rate(inter, gm::parse_rate(a.inter_rate), model.delivery);
  std::vector<std::string> codec_names = a.codecs.empty() ? std::vector<std::string>{} : split_list(a.codecs);
  if (codec_names.empty())
    for (const auto& c : model.codecs) codec_names.push_back(c.name);
  for (const auto& n : codec_names)
    if (!model.codec(n)) throw std::invalid_argument("the model has no codec '" + n + "'; calibrate it or drop it from --codecs");

  // The points: every --ranks value, or (with --inter-rates) every rate at the first --ranks value.
  std::vector<Point> points;
  // `nominal`: the link's nominal rate where it was given one (what the output names), else 0 (its rate).
  const auto make_point = [&](uint64_t n, const gm::Link& inter_link, double nominal) {
    Point p;
    p.ranks = n;
    p.topo.per_node = std::min<uint64_t>(std::max<uint64_t>(1, a.per_node), n);
    p.topo.nodes = (n + p.topo.per_node - 1) / p.topo.per_node;
    p.topo.intra = intra;
    p.topo.inter = inter_link;
    p.topo.cores = a.cores > 0 ? a.cores : model.machine.cores;
    gw::model::use_machine(p.topo, model.machine);
    p.inter_rate = nominal > 0 ? nominal : inter_link.beta > 0 ? 1 / inter_link.beta : 0;
    return p;
  };
  std::vector<uint64_t> rank_list;
  for (const auto& r : split_list(a.ranks)) {
    const double v = parse_count(r, "--ranks value");
    if (v < 1 || v > 1e8) throw std::invalid_argument("--ranks: " + r + " is outside 1 .. 100000000");
    rank_list.push_back(uint64_t(v));
  }
  if (rank_list.empty()) throw std::invalid_argument("--ranks is empty");
  const bool rate_sweep = !a.inter_rates.empty();
  if (rate_sweep)
    for (const auto& r : split_list(a.inter_rates)) {
      const double rate = gm::parse_rate(r);
      points.push_back(make_point(rank_list.front(), gm::at_nominal_rate(inter, rate, model.delivery), rate));
    }
  else
    for (uint64_t n : rank_list)
      points.push_back(make_point(n, inter, a.inter_rate.empty() ? 0 : gm::parse_rate(a.inter_rate)));

  gm::StepShape every_step{a.compute, a.backward_fraction, 1, a.cpu_compute};
  gm::StepShape every_h = every_step;
  every_h.exchanges_per_step = 1.0 / double(std::max<uint64_t>(1, a.every));
  const std::string h_name = "every " + std::to_string(a.every) + " steps";

  json out = {{"model", model_name},
              {"model_source", model.source},        {"bytes", total_bytes},        {"buckets", buckets.size()},
              {"compute_s", a.compute}, {"backward_fraction", a.backward_fraction}, {"points", json::array()}};
  std::map<std::string, gwtrain::Line> lines;  // best step time per codec (every step)
  std::vector<std::string> notes;
  std::optional<bool> paid_before;
  for (const Point& p : points) {
    std::vector<Row> rows;
    for (const auto& name : codec_names) {
      const gm::CodecCost& k = *model.codec(name);
      for (gm::Algorithm alg : gm::algorithms_for(k, p.topo, buckets.front())) {
        Row row;
        row.codec = name;
        row.algorithm = alg;
        for (double b : buckets) {
          const gm::Cost c = gm::exchange(k, b, p.topo, alg);
          row.cost.latency += c.latency, row.cost.wire += c.wire, row.cost.cpu += c.cpu, row.cost.encode += c.encode;
          row.cost.bytes_sent += c.bytes_sent, row.cost.total += c.total;
          row.cost.algorithm = c.algorithm;
        }
        for (const auto* shape : {&every_step, &every_h}) {
          if (shape == &every_h && a.every <= 1) continue;
          Row r = row;
          r.schedule = shape == &every_step ? "every step" : h_name;
          r.per_step_exchange = r.cost.total * shape->exchanges_per_step;
          r.step = gm::step_time(r.cost, *shape);
          r.bytes_per_step = r.cost.bytes_sent * shape->exchanges_per_step;
          rows.push_back(r);
        }
      }
    }
    // Best per codec (every step) and overall.
    std::map<std::string, const Row*> best_of;
    const Row* fastest = nullptr;
    const Row* fastest_any = nullptr;
    for (const Row& r : rows) {
      if (!fastest_any || r.step < fastest_any->step) fastest_any = &r;
      if (r.schedule != "every step") continue;
      if (!best_of.count(r.codec) || r.step < best_of[r.codec]->step) best_of[r.codec] = &r;
      if (!fastest || r.step < fastest->step) fastest = &r;
    }
    const Row* none = best_of.count("none") ? best_of["none"] : nullptr;
    const Row* best_compressed = nullptr;
    for (const auto& [name, r] : best_of)
      if (name != "none" && (!best_compressed || r->step < best_compressed->step)) best_compressed = r;
    std::string verdict, why;
    bool pays = false;
    if (none && best_compressed) {
      pays = best_compressed->step < none->step * 0.999;
      const gm::CodecCost& k = *model.codec(best_compressed->codec);
      if (pays) {
        why = best_compressed->codec + " " + ms(best_compressed->step) + " ms per step against " + ms(none->step) +
              " ms uncompressed; " + gm::explain(k, best_compressed->cost, none->cost);
      } else if (a.compute > 0 && none->step <= a.compute * 1.0001) {
        why = "overlap: the uncompressed exchange (" + ms(none->per_step_exchange) +
              " ms) already hides behind the backward pass (" + ms(a.compute * a.backward_fraction) + " ms)";
      } else {
        why = gm::explain(k, best_compressed->cost, none->cost);
      }
      verdict = (pays ? "compression pays: " : "compression does not pay: ") + why;
      if (paid_before && *paid_before != pays) {
        std::ostringstream o;
        o << (pays ? "compression starts paying at " : "compression stops paying at ")
          << (rate_sweep ? rate_text(p.inter_rate) : std::to_string(p.ranks) + " ranks") << ": " << why;
        notes.push_back(o.str());
      }
      paid_before = pays;
    }
    json jp = {{"ranks", p.ranks},
               {"nodes", p.topo.nodes},
               {"per_node", p.topo.per_node},
               {"inter_bytes_per_s", p.inter_rate},
               {"inter_delivered_bytes_per_s", p.topo.inter.beta > 0 ? 1 / p.topo.inter.beta : 0},
               {"inter_origin", p.topo.inter.origin},
               {"intra_bytes_per_s", p.topo.intra.beta > 0 ? 1 / p.topo.intra.beta : 0},
               {"fastest", fastest ? json{{"codec", fastest->codec}, {"algorithm", gm::algorithm_name(fastest->algorithm)},
                                          {"step_s", fastest->step}}
                                   : json()},
               {"fastest_any_schedule", fastest_any ? json{{"codec", fastest_any->codec},
                                                           {"algorithm", gm::algorithm_name(fastest_any->algorithm)},
                                                           {"schedule", fastest_any->schedule},
                                                           {"step_s", fastest_any->step}}
                                                    : json()},
               {"compression_pays", pays},
               {"verdict", verdict},
               {"rows", json::array()}};
    for (const Row& r : rows)
      jp["rows"].push_back({{"codec", r.codec},
                            {"algorithm", gm::algorithm_name(r.algorithm)},
                            {"schedule", r.schedule},
                            {"exchange_s", r.cost.total},
                            {"latency_s", r.cost.latency},
                            {"wire_s", r.cost.wire},
                            {"cpu_s", r.cost.cpu},
                            {"exchange_per_step_s", r.per_step_exchange},
                            {"step_s", r.step},
                            {"bytes_per_rank_per_step", r.bytes_per_step}});
    out["points"].push_back(jp);
    for (const auto& [name, r] : best_of) {
      auto& line = lines[name];
      line.name = name;
      line.dashed = name == "none";
      line.x.push_back(rate_sweep ? p.inter_rate * 8 / 1e6 : double(p.ranks));
      line.y.push_back(r->step * 1e3);
    }
    if (!a.json_out) {
      std::cout << "\n" << p.ranks << " ranks (" << p.topo.nodes << " nodes x " << p.topo.per_node << "), inter-node "
                << rate_text(p.inter_rate) << ", intra-node " << rate_text(p.topo.intra.beta > 0 ? 1 / p.topo.intra.beta : 0)
                << ", " << std::setprecision(4) << total_bytes / 1e6 << " MB in " << buckets.size() << " bucket(s), compute "
                << ms(a.compute) << " ms\n";
      if (!p.topo.inter.origin.empty()) std::cout << "  inter-node link: " << p.topo.inter.origin << "\n";
      std::cout << "  " << std::left << std::setw(9) << "codec" << std::setw(26) << "algorithm" << std::setw(15) << "schedule"
                << std::right << std::setw(13) << "exchange ms" << std::setw(11) << "step ms" << std::setw(14)
                << "MB/rank/step" << "  terms ms (latency/wire/cpu)\n";
      for (const Row& r : rows) {
        const bool star = &r == fastest || &r == fastest_any;
        std::cout << (star ? "* " : "  ") << std::left << std::setw(9) << r.codec << std::setw(26)
                  << gm::algorithm_name(r.algorithm) << std::setw(15) << r.schedule << std::right << std::setw(13)
                  << ms(r.per_step_exchange) << std::setw(11) << ms(r.step) << std::setw(14) << std::setprecision(4)
                  << r.bytes_per_step / 1e6 << "  " << ms(r.cost.latency) << " / " << ms(r.cost.wire) << " / "
                  << ms(r.cost.cpu) << "\n";
      }
      if (fastest)
        std::cout << "  fastest (every step): " << fastest->codec << ", " << gm::algorithm_name(fastest->algorithm) << ", "
                  << ms(fastest->step) << " ms per step";
      if (fastest_any && fastest_any != fastest)
        std::cout << "; with fewer exchanges: " << fastest_any->codec << " " << fastest_any->schedule << ", "
                  << ms(fastest_any->step) << " ms";
      std::cout << "\n  " << verdict << "\n";
    }
  }
  out["notes"] = notes;
  if (!a.svg.empty()) {
    std::vector<gwtrain::Line> ls;
    for (auto& [name, l] : lines) ls.push_back(l);
    gwtrain::ChartSpec spec;
    spec.title = "gradwire simulate: step time per codec (best algorithm, every step)";
    std::ostringstream sub;
    sub << std::setprecision(4) << total_bytes / 1e6 << " MB of f32 gradients, compute " << ms(a.compute)
        << " ms per step, " << a.per_node << " ranks per node; model: " << model.source;
    spec.notes.push_back(sub.str());
    for (const auto& n : notes) spec.notes.push_back(n);
    spec.x_label = rate_sweep ? "inter-node link rate (Mbit/s)" : "ranks";
    spec.y_label = "predicted step time (ms)";
    spec.log_x = true;
    double lo = 1e300, hi = 0;
    for (const auto& l : ls)
      for (double v : l.y) lo = std::min(lo, v), hi = std::max(hi, v);
    spec.log_y = lo > 0 && hi / lo > 30;
    std::ofstream f(a.svg);
    if (!f) throw std::invalid_argument("cannot write '" + a.svg + "'");
    f << gwtrain::line_chart_svg(ls, spec);
    if (!a.json_out) std::cout << "\nwrote " << a.svg << "\n";
  }
  if (a.json_out) std::cout << out.dump() << "\n";
  else
    for (const auto& n : notes) std::cout << "\n" << n << "\n";
  return 0;
}

}  // namespace

int run_simulate(const SimulateArgs& args) { return run(args); }

}  // namespace gwcli
