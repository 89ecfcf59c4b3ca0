// The first process's summary of `gradwire train`: one row per configuration and the table.
#include <algorithm>
#include <cstdio>
#include <sstream>

#include "train/command/command.hpp"

namespace gwcli::train {

using json = nlohmann::json;

std::string human_bytes(double b) {
  const char* units[] = {"B", "kB", "MB", "GB", "TB"};
  int u = 0;
  while (b >= 1000 && u < 4) b /= 1000, ++u;
  char buf[32];
  std::snprintf(buf, sizeof(buf), u == 0 ? "%.0f %s" : "%.2f %s", b, units[u]);
  return buf;
}


Row summarize(const std::string& name, const json& r) {
  Row row{name, r};
  const json& curve = r.at("curve");
  if (curve.empty()) throw Failure(GW_ERR_INTERNAL, "train: configuration '" + name + "' wrote no evaluations");
  const json& last = curve.back();
  row.final_accuracy = row.last_eval_accuracy = last.at("test_accuracy").get<double>();
  if (r.contains("final_model")) row.final_accuracy = r.at("final_model").at("test_accuracy").get<double>();
  row.bytes = last.at("bytes").get<double>();
  row.raw_bytes = last.at("raw_bytes").get<double>();
  row.train_seconds = last.at("seconds").get<double>();
  row.wall_seconds = r.at("wall_seconds").get<double>();
  for (const auto& p : curve)
    if (p.at("test_accuracy").get<double>() >= kTargetAccuracy) {
      row.seconds_to_target = p.at("seconds").get<double>();
      break;
    }
  return row;
}

std::string table(const std::vector<Row>& rows, const Options& o) {
  std::ostringstream t;
  char line[256];
  std::snprintf(line, sizeof(line), "%-12s %9s %14s %8s %10s %9s %9s\n", "config", "test acc", "sent/rank",
                "ratio", "to 85 %", "train s", "wall s");
  t << line << std::string(77, '-') << "\n";
  for (const auto& r : rows) {
    const double ratio = r.bytes > 0 ? r.raw_bytes / r.bytes : 1.0;
    std::string to_target = r.seconds_to_target < 0 ? "never" : "";
    if (r.seconds_to_target >= 0) {
      char b[32];
      std::snprintf(b, sizeof(b), "%.1f s", r.seconds_to_target);
      to_target = b;
    }
    std::snprintf(line, sizeof(line), "%-12s %9.4f %14s %7.1fx %10s %9.1f %9.1f\n", r.name.c_str(), r.final_accuracy,
                  human_bytes(r.bytes).c_str(), ratio, to_target.c_str(), r.train_seconds, r.wall_seconds);
    t << line;
  }
  std::snprintf(line, sizeof(line), "%-12s %9.4f   (dataset-fashion-mnist README: MLP 256-128-100)\n", "reference",
                kReferenceAccuracy);
  t << line;
  for (const auto& r : rows)
    if (r.result.contains("final_model")) {
      std::snprintf(line, sizeof(line),
                    "%s: test acc is the server's model once every worker finished; worker 0's last evaluation, "
                    "at its own end: %.4f\n",
                    r.name.c_str(), r.last_eval_accuracy);
      t << line;
    }
  std::string layers = o.hidden;
  std::replace(layers.begin(), layers.end(), ',', '-');
  t << "MLP 784-" << layers << "-10, " << o.ranks << " ranks, " << o.epochs << " epochs, global batch " << o.batch
    << ", lr " << o.lr << ", seed " << o.seed << ", "
    << [&] {
         const std::string link = rows.empty() ? "loopback" : rows.front().result.value("link", std::string("loopback"));
         return link == "loopback" ? std::string("on loopback") : "behind " + link + " links";
       }()
    << "\nsent/rank: payload bytes one rank sent (gw_sync_get_stats); ratio: what an uncompressed fp32 ring allreduce "
       "of the gradients at every step sends, over that\n";
  return t.str();
}

}  // namespace gwcli::train
