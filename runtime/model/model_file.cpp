// The model's file: TOML, written by `gradwire calibrate` and read by `gradwire simulate` and the auto
// codec ([codec] model). Keys: docs/cost-model.md.
#include <toml++/toml.h>

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

}  // namespace

std::string to_toml(const Model& m) {
  toml::table root;
  root.insert("format", "gradwire cost model 1");
  root.insert("source", m.source);
  root.insert("machine", toml::table{{"cores", m.machine.cores}, {"gamma_s_per_byte", m.machine.gamma}});
  root.insert("use", toml::table{{"intra", m.intra}, {"inter", m.inter}});
  toml::table links;
  for (const auto& [name, l] : m.links)
    links.insert(name, toml::table{{"alpha_s", l.alpha}, {"beta_s_per_byte", l.beta}, {"cpu_s_per_byte", l.cpu}});
  root.insert("links", std::move(links));
  toml::table codecs;
  for (const CodecCost& c : m.codecs)
    codecs.insert(c.name, toml::table{{"kind", kind_name(c.kind)},
                                      {"ratio", c.ratio},
                                      {"encode_s_per_byte", c.encode},
                                      {"decode_s_per_byte", c.decode}});
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
      m.links[std::string(name.str())] = Link{number(*l, "alpha_s", where), number(*l, "beta_s_per_byte", where),
                                              number(*l, "cpu_s_per_byte", where, false, 0)};
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

void save(const Model& m, const std::string& path) {
  std::ofstream out(path);
  if (!out) throw std::runtime_error("cannot write the cost model to '" + path + "'");
  out << to_toml(m);
  if (!out) throw std::runtime_error("writing the cost model to '" + path + "' failed");
}

}  // namespace gw::model
