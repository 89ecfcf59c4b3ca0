// `gradwire train`: data-parallel training of an MLP on Fashion-MNIST through libgradwire, once per
// configuration, then a table (accuracy, bytes per rank, compression ratio, time) and a picture.
//
// The command is its own launcher: without --worker it re-executes itself under `gradwire run -n N`
// (with --link: in the emulated cluster) once per configuration; every rank then runs
// `gradwire train --worker CONFIG ...`, creates a runtime from the user's TOML with the configuration's
// overlay merged over it, joins the others (gw_comm_create), registers the model's tensors with a
// synchronizer (gw_sync) and trains; rank 0 prints progress and writes OUT/CONFIG.json, from which the
// first process builds the table and OUT/train.svg.
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>

#define TOML_HEADER_ONLY 1
#include <toml++/toml.h>

#include "cluster.hpp"
#include "commands.hpp"
#include "train/comm_exchange.hpp"
#include "train/plot.hpp"
#include "train/ps_exchange.hpp"
#include "train/trainer.hpp"

namespace gwcli {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

// The README of dataset-fashion-mnist lists an MLP 256-128-100 at this test accuracy.
constexpr double kReferenceAccuracy = 0.8833;
constexpr const char* kReferenceLabel = "README: MLP 256-128-100, 0.8833";
constexpr double kTargetAccuracy = 0.85;  // time-to-accuracy threshold of benchmark T1

// A configuration: a TOML overlay merged over the user's --config file (its keys win; the rest of the
// user's file — transport, buckets, codec parameters it does not set — stays). Each names its codec,
// error feedback and schedule, so a configuration means the same whatever the user's file says.
//
// lr_scale multiplies --lr for that configuration. momentum_in_sync moves the optimizer's momentum into
// the synchronizer ([codec] momentum = --momentum, the trainer's SGD without momentum): the codec then
// compresses the velocity, not the gradient (one bit at the default recipe needs it: with the momentum
// after the codec it diverged at lr 0.05 and needed 0.2 x lr; keeping the tensors of up to 16 KiB in f32
// brings it from 1.9 to 0.4 points under uncompressed, docs/train.md).
struct Configuration {
  const char* name;
  const char* help;
  const char* overlay;
  float lr_scale = 1.0f;
  bool momentum_in_sync = false;
  uint32_t ps_servers = 0;  // > 0: a parameter server (docs/ps.md) with this many extra server ranks
  gw_ps_mode ps_mode = GW_PS_SYNC;
};
constexpr Configuration kConfigurations[] = {
    {"none", "uncompressed fp32 gradients, averaged every step",
     "[codec]\nname = \"none\"\nerror_feedback = false\n[schedule]\nname = \"every_step\"\n"},
    {"fp16", "gradients as fp16",
     "[codec]\nname = \"fp16\"\nerror_feedback = false\n[schedule]\nname = \"every_step\"\n"},
    {"int8", "gradients as int8 with one scale per block of 256",
     "[codec]\nname = \"int8\"\nerror_feedback = false\n[schedule]\nname = \"every_step\"\n"},
    {"topk-ef", "top-k 1 % of the gradient with error feedback",
     "[codec]\nname = \"topk\"\nerror_feedback = true\n[codec.topk]\nratio = 0.01\n[schedule]\nname = \"every_step\"\n"},
    {"onebit-ef", "one bit per element (sign, scale per block) with error feedback, compressed after momentum; "
                  "tensors under 16 KiB uncompressed",
     "[codec]\nname = \"onebit\"\nerror_feedback = true\n[schedule]\nname = \"every_step\"\n"
     "[[rules]]\nmatch = \"*\"\nmax_bytes = 16384\ncodec = \"none\"\n", 1.0f, true},
    {"local-sgd", "local SGD: uncompressed parameters averaged every 8 steps, none in between",
     "[codec]\nname = \"none\"\nerror_feedback = false\n[schedule]\nname = \"local_sgd\"\n"
     "[schedule.local_sgd]\nperiod = 8\n"},
    {"local-sgd-int8", "local SGD every 8 steps, the parameter differences as int8 with error feedback",
     "[codec]\nname = \"int8\"\nerror_feedback = true\n[schedule]\nname = \"local_sgd\"\n"
     "[schedule.local_sgd]\nperiod = 8\n"},
    {"local-sgd-onebit", "local SGD every 8 steps, the parameter differences as one bit with error feedback",
     "[codec]\nname = \"onebit\"\nerror_feedback = true\n[schedule]\nname = \"local_sgd\"\n"
     "[schedule.local_sgd]\nperiod = 8\n"},
    {"onebit-ef-lr02", "one bit with error feedback, momentum after the codec, at 0.2 x --lr",
     "[codec]\nname = \"onebit\"\nerror_feedback = true\n[schedule]\nname = \"every_step\"\n", 0.2f},
    {"async", "the async schedule (staleness 1): each step applies the average of the step before",
     "[codec]\nname = \"none\"\nerror_feedback = false\n[schedule]\nname = \"async\"\n"},
    {"ps-sync", "parameter server, synchronous: --ranks workers plus one server rank, fp32 pushes",
     "[codec]\nname = \"none\"\nerror_feedback = false\n", 1.0f, false, 1, GW_PS_SYNC},
    {"ps-async", "parameter server, asynchronous (staleness bound --staleness): --ranks workers plus one server",
     "[codec]\nname = \"none\"\nerror_feedback = false\n", 1.0f, false, 1, GW_PS_ASYNC},
};
constexpr const char* kDefaultConfigurations = "none,fp16,int8,topk-ef,onebit-ef,local-sgd";

struct Options {
  int ranks = 4;
  uint32_t epochs = 5;
  uint32_t batch = 128;
  float lr = 0.05f;
  float momentum = 0.9f;
  uint64_t seed = 1;
  std::string hidden = "256,128";
  std::string config_file;
  std::string data = gwtrain::kDefaultDataDir;
  std::string configs = kDefaultConfigurations;
  std::string out = "train-out";
  std::string link;  // "1gbit": ranks in the emulated cluster
  uint32_t evals_per_epoch = 4;
  uint32_t train_images = 0;
  uint32_t test_images = 0;
  std::string worker;  // set in the ranks the launcher starts
  int slow_rank = -1;  // a straggler (benchmark T3)
  float slow_factor = 3.0f;
  uint32_t staleness = 16;  // ps-async
};

std::vector<std::string> split_list(const std::string& s) {
  std::vector<std::string> parts;
  std::stringstream ss(s);
  for (std::string p; std::getline(ss, p, ',');)
    if (!p.empty()) parts.push_back(p);
  return parts;
}

std::vector<uint32_t> parse_hidden(const std::string& s) {
  std::vector<uint32_t> sizes;
  for (const auto& p : split_list(s)) {
    size_t used = 0;
    unsigned long v = 0;
    try {
      v = std::stoul(p, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != p.size() || v == 0 || v > 65536)
      throw Failure(GW_ERR_INVALID_ARGUMENT, "train: --hidden takes layer sizes 1..65536 separated by commas, "
                                             "e.g. 256,128; '" + p + "' is not one");
    sizes.push_back(uint32_t(v));
  }
  if (sizes.empty()) throw Failure(GW_ERR_INVALID_ARGUMENT, "train: --hidden needs at least one layer size, e.g. 256,128");
  return sizes;
}

const Configuration& find_configuration(const std::string& name) {
  for (const auto& c : kConfigurations)
    if (name == c.name) return c;
  std::string known;
  for (const auto& c : kConfigurations) known += std::string(known.empty() ? "" : ", ") + c.name;
  throw Failure(GW_ERR_INVALID_ARGUMENT, "train: unknown configuration '" + name + "' in --configs; known: " + known);
}

gwtrain::TrainOptions train_options(const Options& o) {
  gwtrain::TrainOptions t;
  t.hidden = parse_hidden(o.hidden);
  t.epochs = o.epochs;
  t.batch = o.batch;
  t.lr = o.lr;
  t.momentum = o.momentum;
  t.seed = o.seed;
  t.evals_per_epoch = o.evals_per_epoch;
  t.train_limit = o.train_images;
  t.test_limit = o.test_images;
  t.slow_rank = o.slow_rank;
  t.slow_factor = o.slow_factor;
  return t;
}

std::string human_bytes(double b) {
  const char* units[] = {"B", "kB", "MB", "GB", "TB"};
  int u = 0;
  while (b >= 1000 && u < 4) b /= 1000, ++u;
  char buf[32];
  std::snprintf(buf, sizeof(buf), u == 0 ? "%.0f %s" : "%.2f %s", b, units[u]);
  return buf;
}

gwtrain::Dataset load_data(const std::string& dir) {
  try {
    return gwtrain::load_fashion_mnist(dir);
  } catch (const gwtrain::DataError& e) {
    throw Failure(GW_ERR_NOT_FOUND, std::string("train: ") + e.what());
  }
}

// Merges `overlay` into `base`: tables recursively, anything else (values, arrays, [[rules]]) replaced.
void merge(toml::table& base, const toml::table& overlay) {
  for (const auto& [key, value] : overlay) {
    if (value.is_table() && base.contains(key) && base[key].is_table())
      merge(*base[key].as_table(), *value.as_table());
    else
      base.insert_or_assign(key, value);
  }
}

// The user's TOML file (if any) with the configuration's overlay merged over it, as TOML text, and
// [codec] momentum = `momentum` with momentum_in_sync, else 0.
std::string configuration_toml(const std::string& user_file, const Configuration& c, float momentum) {
  toml::table merged;
  try {
    if (!user_file.empty()) merged = toml::parse_file(user_file);
    merge(merged, toml::parse(c.overlay));
    merged["codec"].as_table()->insert_or_assign("momentum", c.momentum_in_sync ? double(momentum) : 0.0);
  } catch (const toml::parse_error& e) {
    throw Failure(GW_ERR_CONFIG, "train: cannot read " + (user_file.empty() ? std::string("the overlay") : user_file) +
                                     ": " + std::string(e.description()));
  }
  std::ostringstream text;
  text << merged << "\n";
  return text.str();
}

RuntimePtr open_runtime_text(const std::string& text) {
  gw_runtime_options options = GW_RUNTIME_OPTIONS_INIT;
  options.config_text = text.c_str();
  gw_runtime* rt = nullptr;
  check(gw_runtime_create(&options, &rt), "train: the configuration");
  return RuntimePtr(rt);
}

// ---- a rank ----------------------------------------------------------------------------------------

void run_worker(const Options& o) {
  const Configuration& config = find_configuration(o.worker);
  const auto wall_start = std::chrono::steady_clock::now();
  const gwtrain::Dataset data = load_data(o.data);
  const std::string toml_text = configuration_toml(o.config_file, config, o.momentum);
  RuntimePtr runtime = open_runtime_text(toml_text);
  json result;
  try {
    std::unique_ptr<gwtrain::CommExchange> comm_exchange;
    std::unique_ptr<gwtrain::PsExchange> ps_exchange;
    if (config.ps_servers > 0) {
      gw_ps_options po = GW_PS_OPTIONS_INIT;
      po.servers = config.ps_servers;
      po.mode = config.ps_mode;
      po.staleness = o.staleness;
      po.momentum = o.momentum;
      ps_exchange = std::make_unique<gwtrain::PsExchange>(runtime.get(), po);
    } else {
      comm_exchange = std::make_unique<gwtrain::CommExchange>(runtime.get(), o.worker == "async");
    }
    gwtrain::Exchange& exchange = comm_exchange ? static_cast<gwtrain::Exchange&>(*comm_exchange) : *ps_exchange;
    const bool leader = exchange.rank() == 0 && exchange.trains();
    gwtrain::TrainOptions options = train_options(o);
    options.lr *= config.lr_scale;
    if (config.momentum_in_sync) options.momentum = 0.0f;  // the synchronizer's velocity is what arrives
    const auto on_point = [&](const gwtrain::CurvePoint& p) {
      if (!leader) return;
      std::printf("%-10s epoch %5.2f  step %6llu  loss %.4f  test acc %.4f  sent %10s  %7.1f s\n", o.worker.c_str(),
                  p.epoch, static_cast<unsigned long long>(p.step), p.train_loss, p.test_accuracy,
                  human_bytes(double(p.bytes)).c_str(), p.seconds);
      std::fflush(stdout);
    };
    if (leader) {
      std::printf("%-10s %s\n", o.worker.c_str(), config.help);
      std::fflush(stdout);
    }
    const gwtrain::TrainResult r = gwtrain::train(data, options, exchange, on_point);
    gw_sync_stats st = GW_SYNC_STATS_INIT;
    json ps_info;
    if (comm_exchange) st = comm_exchange->stats();
    if (ps_exchange) {
      const gw_ps_stats ps = ps_exchange->stats();
      st.wire_bytes = ps.wire_bytes;
      st.syncs = ps.pushes;
      ps_info = {{"servers", config.ps_servers}, {"mode", config.ps_mode == GW_PS_ASYNC ? "async" : "sync"},
                      {"staleness", o.staleness}, {"pushes", ps.pushes}, {"dropped", ps.dropped},
                      {"version", ps.version}};
    }
    if (!leader) return;
    const char* link = std::getenv("GW_LINK_RATE");
    json curve = json::array();
    for (const auto& p : r.curve)
      curve.push_back({{"step", p.step}, {"epoch", p.epoch}, {"seconds", p.seconds}, {"bytes", p.bytes},
                       {"raw_bytes", p.raw_bytes}, {"train_loss", p.train_loss}, {"test_loss", p.test_loss},
                       {"test_accuracy", p.test_accuracy}});
    result = {{"configuration", o.worker}, {"ranks", exchange.size()}, {"epochs", o.epochs}, {"batch", o.batch},
              {"lr", options.lr}, {"seed", o.seed}, {"hidden", o.hidden}, {"curve", curve},
              {"link", link ? link : "loopback"},
              {"buckets", comm_exchange ? comm_exchange->describe_buckets() : std::string("parameter server")},
              {"toml", toml_text}, {"ps", ps_info}, {"slow_rank", o.slow_rank}, {"slow_factor", o.slow_factor},
              {"sync", {{"raw_bytes", st.raw_bytes}, {"wire_bytes", st.wire_bytes},
                        {"compression_ratio", st.compression_ratio}, {"encode_seconds", st.encode_seconds},
                        {"decode_seconds", st.decode_seconds}, {"transfer_seconds", st.transfer_seconds},
                        {"steps", st.steps}, {"exchanges", st.syncs}}},
              {"wall_seconds", std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count()}};
  } catch (const gwtrain::GwError& e) {
    throw Failure(e.status, std::string("train: ") + e.what());
  } catch (const std::invalid_argument& e) {
    throw Failure(GW_ERR_INVALID_ARGUMENT, std::string("train: ") + e.what());
  }
  std::ofstream(fs::path(o.out) / (o.worker + ".json")) << result.dump(1) << "\n";
}

// ---- the first process: launch, table, picture -----------------------------------------------------

std::string self_path() {
  std::error_code ec;
  const fs::path p = fs::read_symlink("/proc/self/exe", ec);
  if (ec) throw Failure(GW_ERR_INTERNAL, "train: cannot find my own executable (/proc/self/exe): " + ec.message());
  return p.string();
}

// Runs `gradwire run -n N -- gradwire train --worker NAME ...` and returns its exit status.
int launch(const Options& o, const std::string& name) {
  const std::string self = self_path();
  const uint32_t servers = find_configuration(name).ps_servers;  // extra ranks of a parameter server
  std::vector<std::string> args{self, "run", "-n", std::to_string(o.ranks + int(servers))};
  if (!o.link.empty()) args.insert(args.end(), {"--link", o.link});
  args.insert(args.end(), {"--", self, "train", "--worker", name,
                                "--epochs", std::to_string(o.epochs), "--batch", std::to_string(o.batch),
                                "--lr", std::to_string(o.lr), "--momentum", std::to_string(o.momentum),
                                "--seed", std::to_string(o.seed), "--hidden", o.hidden, "--data", o.data,
                                "--out", o.out, "--evals-per-epoch", std::to_string(o.evals_per_epoch),
                                "--train-images", std::to_string(o.train_images),
                                "--test-images", std::to_string(o.test_images),
                                "--slow-rank", std::to_string(o.slow_rank),
                                "--slow-factor", std::to_string(o.slow_factor),
                                "--staleness", std::to_string(o.staleness)});
  if (!o.config_file.empty()) args.insert(args.end(), {"--config", o.config_file});
  std::fflush(stdout);
  const pid_t pid = fork();
  if (pid < 0) throw Failure(GW_ERR_INTERNAL, std::string("train: fork: ") + std::strerror(errno));
  if (pid == 0) {
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    execv(argv[0], argv.data());
    std::fprintf(stderr, "gradwire train: cannot start %s: %s\n", argv[0], std::strerror(errno));
    _exit(127);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  return 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

struct Row {
  std::string name;
  json result;
  double final_accuracy = 0;
  double bytes = 0, raw_bytes = 0;
  double train_seconds = 0, wall_seconds = 0;
  double seconds_to_target = -1;
};

Row summarize(const std::string& name, const json& r) {
  Row row{name, r};
  const json& curve = r.at("curve");
  if (curve.empty()) throw Failure(GW_ERR_INTERNAL, "train: configuration '" + name + "' wrote no evaluations");
  const json& last = curve.back();
  row.final_accuracy = last.at("test_accuracy").get<double>();
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

void run_driver(const Options& o) {
  std::vector<std::string> names = split_list(o.configs);
  if (names.empty()) throw Failure(GW_ERR_INVALID_ARGUMENT, "train: --configs is empty; give e.g. --configs none");
  { RuntimePtr check_config = open_runtime(o.config_file); }  // an invalid TOML file (its own line numbers)
  for (const auto& n : names) {
    const Configuration& c = find_configuration(n);
    RuntimePtr check_overlay = open_runtime_text(configuration_toml(o.config_file, c, o.momentum));  // codecs and schedules exist
  }
  if (!o.link.empty()) gwcli::Cluster::check_rate(o.link, "train");
  train_options(o);  // bad option values fail here, before any rank starts
  if (o.batch % uint32_t(o.ranks) != 0)
    throw Failure(GW_ERR_INVALID_ARGUMENT, "train: the global batch (" + std::to_string(o.batch) +
                                               ") must be a multiple of the " + std::to_string(o.ranks) +
                                               " ranks, so every rank takes an equal shard");
  const gwtrain::Dataset data = load_data(o.data);              // and a missing or corrupt data set
  std::printf("Fashion-MNIST: %u training and %u test images of %ux%u from %s\n", data.train.count, data.test.count,
              data.train.rows, data.train.cols, o.data.c_str());
  std::error_code ec;
  fs::create_directories(o.out, ec);
  if (ec) throw Failure(GW_ERR_INVALID_ARGUMENT, "train: cannot create the output directory " + o.out + ": " + ec.message());

  std::vector<Row> rows;
  for (const auto& name : names) {
    std::printf("== %s: %s (%d ranks)\n", name.c_str(), find_configuration(name).help, o.ranks);
    const fs::path result_path = fs::path(o.out) / (name + ".json");
    fs::remove(result_path, ec);
    const int status = launch(o, name);
    if (status != 0)
      throw Failure(GW_ERR_INTERNAL, "train: configuration '" + name + "' failed: its ranks exited with status " +
                                         std::to_string(status) + " (their messages are above)");
    std::ifstream in(result_path);
    if (!in) throw Failure(GW_ERR_INTERNAL, "train: configuration '" + name + "' left no result in " + result_path.string());
    rows.push_back(summarize(name, json::parse(in)));
  }

  const std::string text = table(rows, o);
  std::printf("\n%s", text.c_str());
  std::ofstream(fs::path(o.out) / "table.txt") << text;
  std::vector<gwtrain::Series> series;
  for (const auto& r : rows) {
    gwtrain::Series s{r.name, {}, {}, {}};
    for (const auto& p : r.result.at("curve")) {
      s.bytes.push_back(p.at("bytes").get<double>());
      s.seconds.push_back(p.at("seconds").get<double>());
      s.accuracy.push_back(p.at("test_accuracy").get<double>());
    }
    series.push_back(std::move(s));
  }
  const fs::path svg = fs::path(o.out) / "train.svg";
  std::ofstream(svg) << gwtrain::accuracy_svg(series, kReferenceAccuracy, kReferenceLabel);
  std::printf("wrote %s and %s\n", (fs::path(o.out) / "table.txt").c_str(), svg.c_str());
}

}  // namespace

void add_train_command(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand("train", "Data-parallel training of an MLP on Fashion-MNIST with local ranks, once per "
                                          "configuration: table of accuracy, bytes and time, and a picture");
  auto o = std::make_shared<Options>();
  cmd->add_option("--ranks", o->ranks, "Local ranks to start")->check(CLI::Range(1, 64))->capture_default_str();
  cmd->add_option("--epochs", o->epochs, "Passes over the training set")->check(CLI::Range(1, 1000))->capture_default_str();
  cmd->add_option("--batch", o->batch, "Global batch; each rank takes batch / ranks of it")
      ->check(CLI::Range(1, 60000))->capture_default_str();
  cmd->add_option("--lr", o->lr, "Peak learning rate (cosine decay to 0)")->check(CLI::Range(1e-6, 10.0))->capture_default_str();
  cmd->add_option("--momentum", o->momentum, "SGD momentum")->check(CLI::Range(0.0, 0.999))->capture_default_str();
  cmd->add_option("--seed", o->seed, "Seed of the initial weights and the data order")->capture_default_str();
  cmd->add_option("--hidden", o->hidden, "Hidden layer sizes, comma-separated")->capture_default_str();
  cmd->add_option("--config", o->config_file, "gradwire TOML file (transport, codec settings, ...)");
  cmd->add_option("--data", o->data, "Directory with the Fashion-MNIST IDX files (.gz or plain)")->capture_default_str();
  std::string list;
  for (const auto& c : kConfigurations) list += std::string("\n  ") + c.name + ": " + c.help;
  cmd->add_option("--configs", o->configs, "Configurations to run, comma-separated:" + list)->capture_default_str();
  cmd->add_option("--out", o->out, "Directory for table.txt, train.svg and one JSON per configuration")->capture_default_str();
  cmd->add_option("--evals-per-epoch", o->evals_per_epoch, "Test-set evaluations per epoch (points of the curve)")
      ->check(CLI::Range(1, 1000))->capture_default_str();
  cmd->add_option("--train-images", o->train_images, "Train on the first N images only (0: all 60000)")->capture_default_str();
  cmd->add_option("--test-images", o->test_images, "Evaluate on the first N test images only (0: all 10000)")->capture_default_str();
  cmd->add_option("--link", o->link,
                  "Train in the emulated cluster: every rank in its own network namespace behind a link of this "
                  "rate (1gbit, 10gbit, ...); needs root, else loopback (scripts/cluster.sh)");
  cmd->add_option("--slow-rank", o->slow_rank,
                  "A straggler: the training rank (worker index for ps-*) that sleeps (--slow-factor - 1) x its "
                  "compute time every step (benchmark T3); -1: none")->capture_default_str();
  cmd->add_option("--slow-factor", o->slow_factor, "How many times slower the --slow-rank's steps are")
      ->check(CLI::Range(1.0, 100.0))->capture_default_str();
  cmd->add_option("--staleness", o->staleness,
                  "ps-async: pushes computed on parameters more than this many versions old are dropped")
      ->check(CLI::Range(0, 1000000))->capture_default_str();
  cmd->add_option("--worker", o->worker, "Internal: run as one rank of configuration NAME")->group("");
  cmd->footer("Example: gradwire train --ranks 4 --epochs 5 --configs none --out train-out");
  cmd->callback([o, &exit_code] {
    if (o->worker.empty())
      run_driver(*o);
    else
      run_worker(*o);
    exit_code = 0;
  });
}

}  // namespace gwcli
