// The model's file: TOML, written by `gradwire calibrate` and read by `gradwire simulate` and the auto
// codec ([codec] model). Keys: docs/cost-model.md.
#include <toml++/toml.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "model/model.hpp"

namespace gw::model {
namespace {

double number(const toml::table& t, const std::string& key, const std::string& where, bool required = true,
              double fallback = 0) {
  const toml::node* n = t.get(key);
  if (!n) {
    if (!required) return fallback;
    throw std::invalid_argument(where + ": missing key '" + key + "'");
  }
  std::optional<double> v = n->value<double>();
  if (!v || !std::isfinite(*v) || *v < 0)
    throw std::invalid_argument(where + "." + key + ": expected a non-negative number");
  return *v;
}

toml::array array_of(const std::vector<double>& v) {
  toml::array a;
  for (double x : v) a.push_back(x);
  return a;
}

// An optional array of non-negative numbers; empty when absent.
std::vector<double> numbers(const toml::table& t, const std::string& key, const std::string& where) {
  std::vector<double> out;
  const toml::node* n = t.get(key);
  if (!n) return out;
  const toml::array* a = n->as_array();
  if (!a) throw std::invalid_argument(where + "." + key + ": expected an array of non-negative numbers");
  for (const toml::node& e : *a) {
    std::optional<double> v = e.value<double>();
    if (!v || !std::isfinite(*v) || *v < 0)
      throw std::invalid_argument(where + "." + key + ": expected an array of non-negative numbers");
    out.push_back(*v);
  }
  return out;
}

// A link's optional table of measured one-way times (Link::sizes): sizes ascending, as many times.
void read_times(const toml::table& t, const std::string& where, Link& l) {
  l.sizes = numbers(t, "message_bytes", where);
  l.seconds = numbers(t, "one_way_s", where);
  l.crowded_seconds = numbers(t, "two_per_core_step_s", where);
  l.crowded_summed_seconds = numbers(t, "two_per_core_summed_step_s", where);
  l.ring_seconds = numbers(t, "ring_step_s", where);
  l.ring_summed_seconds = numbers(t, "ring_summed_step_s", where);
  if (t.contains("one_way_shared_core_s"))
    throw std::invalid_argument(where + ".one_way_shared_core_s: written by an older gradwire calibrate (a ping-pong on one "
                                "core; the model now takes a ring's step with two ranks per core); run gradwire "
                                "calibrate again");
  if (l.sizes.size() != l.seconds.size())
    throw std::invalid_argument(where + ": message_bytes and one_way_s must have as many entries (" +
                                std::to_string(l.sizes.size()) + " and " + std::to_string(l.seconds.size()) + ")");
  if (!l.crowded_seconds.empty() && l.crowded_seconds.size() != l.sizes.size())
    throw std::invalid_argument(where + ": two_per_core_step_s must have as many entries as message_bytes");
  if (!l.crowded_summed_seconds.empty() && l.crowded_summed_seconds.size() != l.crowded_seconds.size())
    throw std::invalid_argument(where + ": two_per_core_summed_step_s needs two_per_core_step_s, as many entries");
  if (l.ring_seconds.size() != l.ring_summed_seconds.size() ||
      (!l.ring_seconds.empty() && l.ring_seconds.size() != l.sizes.size()))
    throw std::invalid_argument(where + ": ring_step_s and ring_summed_step_s go together, each with as many entries "
                                "as message_bytes");
  for (size_t i = 1; i < l.sizes.size(); ++i)
    if (!(l.sizes[i] > l.sizes[i - 1])) throw std::invalid_argument(where + ".message_bytes: must be ascending");
}

// A codec's table by size: its sizes and, for each cost it has, that cost at every size.
constexpr std::pair<const char*, double CodecRates::*> kCodecTable[] = {
    {"table_encode_s_per_byte", &CodecRates::encode},
    {"table_decode_s_per_byte", &CodecRates::decode},
    {"table_decode_accumulate_s_per_byte", &CodecRates::decode_accumulate},
    {"table_encode_all_cores_s_per_byte", &CodecRates::encode_all_cores},
    {"table_decode_all_cores_s_per_byte", &CodecRates::decode_all_cores},
};

void write_codec_table(const CodecCost& c, toml::table& t) {
  if (c.sizes.empty()) return;
  t.insert("table_bytes", array_of(c.sizes));
  for (const auto& [key, rate] : kCodecTable) {
    std::vector<double> v;
    for (const CodecRates& r : c.at_sizes) v.push_back(r.*rate);
    if (std::any_of(v.begin(), v.end(), [](double x) { return x > 0; })) t.insert(key, array_of(v));
  }
  t.insert("copies", c.copies);
}

void read_codec_table(const toml::table& t, const std::string& where, CodecCost& c) {
  c.sizes = numbers(t, "table_bytes", where);
  c.at_sizes.assign(c.sizes.size(), CodecRates{});
  for (size_t i = 1; i < c.sizes.size(); ++i)
    if (!(c.sizes[i] > c.sizes[i - 1])) throw std::invalid_argument(where + ".table_bytes: must be ascending");
  for (const auto& [key, rate] : kCodecTable) {
    const std::vector<double> v = numbers(t, key, where);
    if (v.empty()) continue;
    if (v.size() != c.sizes.size())
      throw std::invalid_argument(where + "." + key + ": must have as many entries as table_bytes (" +
                                  std::to_string(v.size()) + " and " + std::to_string(c.sizes.size()) + ")");
    for (size_t i = 0; i < v.size(); ++i) c.at_sizes[i].*rate = v[i];
  }
  c.copies = number(t, "copies", where, false, 1);
  if (!(c.copies >= 1)) throw std::invalid_argument(where + ".copies: must be 1 or more");
}

}  // namespace

std::string to_toml(const Model& m) {
  toml::table root;
  root.insert("format", "gradwire cost model 1");
  root.insert("source", m.source);
  toml::table machine{{"cores", m.machine.cores}, {"gamma_s_per_byte", m.machine.gamma}, {"call_s", m.machine.call}};
  if (!m.machine.sum_sizes.empty()) {
    machine.insert("sum_bytes", array_of(m.machine.sum_sizes));
    machine.insert("sum_s_per_byte", array_of(m.machine.sum_seconds));
  }
  root.insert("machine", std::move(machine));
  root.insert("use", toml::table{{"intra", m.intra}, {"inter", m.inter}});
  toml::table links;
  for (const auto& [name, l] : m.links) {
    toml::table t{{"alpha_s", l.alpha}, {"beta_s_per_byte", l.beta}, {"cpu_s_per_byte", l.cpu}};
    if (l.all_to_all_beta > 0) t.insert("all_to_all_beta_s_per_byte", l.all_to_all_beta);
    if (!l.origin.empty()) t.insert("origin", l.origin);
    if (!l.sizes.empty()) {
      t.insert("message_bytes", array_of(l.sizes));
      t.insert("one_way_s", array_of(l.seconds));
      if (!l.crowded_seconds.empty()) t.insert("two_per_core_step_s", array_of(l.crowded_seconds));
      if (!l.crowded_summed_seconds.empty()) t.insert("two_per_core_summed_step_s", array_of(l.crowded_summed_seconds));
      if (!l.ring_seconds.empty()) {
        t.insert("ring_step_s", array_of(l.ring_seconds));
        t.insert("ring_summed_step_s", array_of(l.ring_summed_seconds));
      }
    }
    links.insert(name, std::move(t));
  }
  root.insert("links", std::move(links));
  if (!m.delivery.empty()) {
    toml::table d{{"nominal_bytes_per_s", array_of(m.delivery.rates)},
                  {"efficiency", array_of(m.delivery.efficiency)},
                  {"source", m.delivery.source}};
    if (std::any_of(m.delivery.all_to_all.begin(), m.delivery.all_to_all.end(), [](double x) { return x > 0; }))
      d.insert("all_to_all_efficiency", array_of(m.delivery.all_to_all));
    if (std::any_of(m.delivery.cpu_factor.begin(), m.delivery.cpu_factor.end(), [](double x) { return x > 0; }))
      d.insert("cpu_factor", array_of(m.delivery.cpu_factor));
    root.insert("delivery", std::move(d));
  }
  toml::table codecs;
  for (const CodecCost& c : m.codecs) {
    toml::table t{{"kind", kind_name(c.kind)},
                  {"ratio", c.ratio},
                  {"encode_s_per_byte", c.encode},
                  {"decode_s_per_byte", c.decode}};
    if (c.decode_accumulate > 0) t.insert("decode_accumulate_s_per_byte", c.decode_accumulate);
    if (c.encode_all_cores > 0) t.insert("encode_all_cores_s_per_byte", c.encode_all_cores);
    if (c.decode_all_cores > 0) t.insert("decode_all_cores_s_per_byte", c.decode_all_cores);
    write_codec_table(c, t);
    if (!c.gather_ranks.empty()) {
      t.insert("gather_ranks", array_of(c.gather_ranks));
      t.insert("gather_s_per_byte", array_of(c.gather_seconds));
    }
    codecs.insert(c.name, std::move(t));
  }
  root.insert("codecs", std::move(codecs));
  std::ostringstream out;
  out << "# gradwire cost model: gradwire calibrate wrote it; docs/cost-model.md explains every key.\n"
      << root << "\n";
  return out.str();
}

Model from_toml(const std::string& text, const std::string& origin) {
  toml::table root;
  try {
    root = toml::parse(text, origin);
  } catch (const toml::parse_error& e) {
    std::ostringstream o;
    o << origin << ":" << e.source().begin.line << ":" << e.source().begin.column << ": " << e.description();
    throw std::invalid_argument(o.str());
  }
  if (root["format"].value_or(std::string()) != "gradwire cost model 1")
    throw std::invalid_argument(origin + ": not a gradwire cost model (format = \"gradwire cost model 1\" missing); "
                                "write one with gradwire calibrate");
  Model m;
  m.source = root["source"].value_or(std::string());
  if (const toml::table* t = root["machine"].as_table()) {
    m.machine.cores = number(*t, "cores", origin + ": machine");
    m.machine.gamma = number(*t, "gamma_s_per_byte", origin + ": machine");
    m.machine.call = number(*t, "call_s", origin + ": machine", false, 0);
    const std::string where = origin + ": machine";
    m.machine.sum_sizes = numbers(*t, "sum_bytes", where);
    m.machine.sum_seconds = numbers(*t, "sum_s_per_byte", where);
    if (m.machine.sum_sizes.size() != m.machine.sum_seconds.size())
      throw std::invalid_argument(where + ": sum_bytes and sum_s_per_byte must have as many entries (" +
                                  std::to_string(m.machine.sum_sizes.size()) + " and " +
                                  std::to_string(m.machine.sum_seconds.size()) + ")");
    for (size_t i = 1; i < m.machine.sum_sizes.size(); ++i)
      if (!(m.machine.sum_sizes[i] > m.machine.sum_sizes[i - 1]))
        throw std::invalid_argument(where + ".sum_bytes: must be ascending");
  } else {
    throw std::invalid_argument(origin + ": missing table [machine]");
  }
  if (const toml::table* t = root["use"].as_table()) {
    m.intra = (*t)["intra"].value_or(m.intra);
    m.inter = (*t)["inter"].value_or(m.inter);
  }
  if (const toml::table* t = root["links"].as_table())
    for (const auto& [name, node] : *t) {
      const std::string where = origin + ": links." + std::string(name.str());
      const toml::table* l = node.as_table();
      if (!l) throw std::invalid_argument(where + ": expected a table");
      Link link{number(*l, "alpha_s", where), number(*l, "beta_s_per_byte", where),
                number(*l, "cpu_s_per_byte", where, false, 0)};
      link.all_to_all_beta = number(*l, "all_to_all_beta_s_per_byte", where, false, 0);
      link.origin = (*l)["origin"].value_or(std::string());
      read_times(*l, where, link);
      m.links[std::string(name.str())] = std::move(link);
    }
  if (const toml::table* t = root["delivery"].as_table()) {
    const std::string where = origin + ": delivery";
    Delivery& d = m.delivery;
    d.rates = numbers(*t, "nominal_bytes_per_s", where);
    d.efficiency = numbers(*t, "efficiency", where);
    d.all_to_all = numbers(*t, "all_to_all_efficiency", where);
    d.cpu_factor = numbers(*t, "cpu_factor", where);
    d.source = (*t)["source"].value_or(std::string());
    if (d.rates.empty() || d.efficiency.size() != d.rates.size() ||
        (!d.all_to_all.empty() && d.all_to_all.size() != d.rates.size()) ||
        (!d.cpu_factor.empty() && d.cpu_factor.size() != d.rates.size()))
      throw std::invalid_argument(where + ": nominal_bytes_per_s and efficiency (and all_to_all_efficiency and "
                                  "cpu_factor, where present) must have as many entries, at least one");
    for (size_t i = 0; i < d.rates.size(); ++i) {
      if (i > 0 && !(d.rates[i] > d.rates[i - 1]))
        throw std::invalid_argument(where + ".nominal_bytes_per_s: must be ascending");
      if (!(d.efficiency[i] > 0) || d.efficiency[i] > 1.5)
        throw std::invalid_argument(where + ".efficiency: each a fraction of the nominal rate, above 0");
      if (!d.cpu_factor.empty() && !(d.cpu_factor[i] >= 0 && d.cpu_factor[i] < 1e3))
        throw std::invalid_argument(where + ".cpu_factor: each a multiple of the host's TCP CPU per byte (0: not "
                                    "measured), at least 0 and below 1000");
    }
  }
  bool has_none = false;
  if (const toml::table* t = root["codecs"].as_table())
    for (const auto& [name, node] : *t) {
      const std::string where = origin + ": codecs." + std::string(name.str());
      const toml::table* c = node.as_table();
      if (!c) throw std::invalid_argument(where + ": expected a table");
      CodecCost k;
      k.name = std::string(name.str());
      const std::string kind = (*c)["kind"].value_or(std::string());
      const auto parsed = kind_from_name(kind);
      if (!parsed)
        throw std::invalid_argument(where + ".kind: '" + kind +
                                    "' is not one of dense, summable, quantized, sparse, shared-indices");
      k.kind = *parsed;
      k.ratio = number(*c, "ratio", where);
      if (!(k.ratio > 0)) throw std::invalid_argument(where + ".ratio: must be above 0");
      k.encode = number(*c, "encode_s_per_byte", where);
      k.decode = number(*c, "decode_s_per_byte", where);
      k.decode_accumulate = number(*c, "decode_accumulate_s_per_byte", where, false, 0);
      k.encode_all_cores = number(*c, "encode_all_cores_s_per_byte", where, false, 0);
      k.decode_all_cores = number(*c, "decode_all_cores_s_per_byte", where, false, 0);
      read_codec_table(*c, where, k);
      k.gather_ranks = numbers(*c, "gather_ranks", where);
      k.gather_seconds = numbers(*c, "gather_s_per_byte", where);
      if (k.gather_ranks.size() != k.gather_seconds.size())
        throw std::invalid_argument(where + ": gather_ranks and gather_s_per_byte must have as many entries (" +
                                    std::to_string(k.gather_ranks.size()) + " and " +
                                    std::to_string(k.gather_seconds.size()) + ")");
      for (size_t i = 0; i < k.gather_ranks.size(); ++i)
        if (!(k.gather_ranks[i] >= 1) || (i > 0 && !(k.gather_ranks[i] > k.gather_ranks[i - 1])))
          throw std::invalid_argument(where + ".gather_ranks: rank counts, 1 or more, ascending");
      has_none = has_none || k.name == "none";
      m.codecs.push_back(k);
    }
  if (!has_none) m.codecs.insert(m.codecs.begin(), CodecCost{"none", CodecKind::Dense, 1, 0, 0});
  return m;
}

Model load(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot read the cost model '" + path + "'; write one with gradwire calibrate -o " + path);
  std::ostringstream text;
  text << in.rdbuf();
  return from_toml(text.str(), path);
}

Model reference_model() { return from_toml(reference_model_text(), kReferenceModelName); }

Model load_or_reference(const std::string& path, const std::string& default_path, std::string* used,
                        std::string* note) {
  const std::string file = !path.empty() ? path : std::ifstream(default_path) ? default_path : std::string();
  if (used) *used = file.empty() ? std::string(kReferenceModelName) : file;
  if (!file.empty()) {
    Model m = load(file);
    if (note) *note = "model: " + file + " (" + m.source + ")";
    return m;
  }
  Model m = reference_model();
  if (note)
    *note = "model: no " + default_path + " here, so " + kReferenceModelName + " of the reference machine (" + m.source +
            "); run gradwire calibrate to measure this machine, or give --model FILE";
  return m;
}

void save(const Model& m, const std::string& path) {
  std::ofstream out(path);
  if (!out) throw std::runtime_error("cannot write the cost model to '" + path + "'");
  out << to_toml(m);
  if (!out) throw std::runtime_error("writing the cost model to '" + path + "' failed");
}

}  // namespace gw::model
