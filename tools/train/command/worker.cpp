// One rank of `gradwire train --worker NAME`: the runtime from the configuration's TOML, the exchange
// (a synchronizer over a communicator, or a parameter server), the training, and on rank 0 the result
// as OUT/NAME.json for the first process.
#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "train/cached_train_set.hpp"
#include "train/comm_exchange.hpp"
#include "train/command/command.hpp"
#include "train/ps_exchange.hpp"

namespace gwcli::train {

using json = nlohmann::json;

namespace {

uint64_t fnv1a(const void* data, size_t bytes) {
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < bytes; ++i) h = (h ^ static_cast<const unsigned char*>(data)[i]) * 1099511628211ull;
  return h;
}

}  // namespace

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

gwtrain::Dataset load_data(const std::string& dir) {
  try {
    return gwtrain::load_fashion_mnist(dir);
  } catch (const gwtrain::DataError& e) {
    throw Failure(GW_ERR_NOT_FOUND, std::string("train: ") + e.what());
  }
}

void run_worker(const Options& o) {
  const Configuration& config = find_configuration(o.worker);
  const auto wall_start = std::chrono::steady_clock::now();
  // The data: the whole set in every rank's memory (the default), or with --cache the test set here and
  // the training set's sizes only (the samples go into the cache below). --slow-storage makes reading
  // the training set take at least its bytes / rate.
  gwtrain::Dataset data;
  double load_seconds = 0;
  if (o.cache) {
    try {
      data.test = gwtrain::load_fashion_mnist_split(o.data, "t10k");
    } catch (const gwtrain::DataError& e) {
      throw Failure(GW_ERR_NOT_FOUND, std::string("train: ") + e.what());
    }
  } else {
    data = load_data(o.data);
    const double train_bytes = double(data.train.images.size() + data.train.labels.size());
    const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
    if (o.slow_storage > 0 && train_bytes / (o.slow_storage * 1e6) > took)
      std::this_thread::sleep_for(std::chrono::duration<double>(train_bytes / (o.slow_storage * 1e6) - took));
    load_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
  }
  const std::string toml_text = configuration_toml(o.config_file, config, o.momentum, o.elastic > 0);
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
      comm_exchange = std::make_unique<gwtrain::CommExchange>(runtime.get(), o.worker == "async", o.elastic > 0);
    }
    gwtrain::Exchange& exchange = comm_exchange ? static_cast<gwtrain::Exchange&>(*comm_exchange) : *ps_exchange;
    std::unique_ptr<gwtrain::CachedTrainSet> cached;
    if (o.cache) {
      try {
        cached = std::make_unique<gwtrain::CachedTrainSet>(runtime.get(), o.data, o.train_images, o.slow_storage * 1e6,
                                                           o.cache_node_shared ? uint32_t(GW_CACHE_NODE_SHARED) : 0u);
      } catch (const gwtrain::DataError& e) {
        throw Failure(GW_ERR_NOT_FOUND, std::string("train: ") + e.what());
      }
      data.train.count = cached->count();
      data.train.rows = cached->rows();
      data.train.cols = cached->cols();
      load_seconds = cached->create_seconds();
    }
    // The rank that reports: rank 0 of the current membership (elastic mode: not always the first one).
    const auto leader = [&] { return exchange.rank() == 0 && exchange.trains(); };
    gwtrain::TrainOptions options = train_options(o);
    // A process `gradwire run --elastic` started again joins instead: it does not kill itself again.
    if (const char* join = std::getenv("GW_ELASTIC_JOIN"); !(join && std::string(join) == "1")) {
      options.kill_rank = o.kill_rank;
      options.kill_step = o.kill_step;
    }
    options.lr *= config.lr_scale;
    if (config.momentum_in_sync) options.momentum = 0.0f;  // the synchronizer's velocity is what arrives
    if (cached) {
      options.fetch_train = [&](const uint32_t* indices, const uint32_t* next, uint32_t n, std::vector<uint8_t>& pixels,
                                std::vector<uint8_t>& labels) { cached->fetch(indices, next, n, pixels, labels); };
      options.normalization = cached->normalization();
    }
    const auto on_point = [&](const gwtrain::CurvePoint& p) {
      if (!leader()) return;
      std::printf("%-10s epoch %5.2f  step %6llu  loss %.4f  test acc %.4f  sent %10s  %7.1f s\n", o.worker.c_str(),
                  p.epoch, static_cast<unsigned long long>(p.step), p.train_loss, p.test_accuracy,
                  human_bytes(double(p.bytes)).c_str(), p.seconds);
      std::fflush(stdout);
    };
    if (leader()) {
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
    // What this rank holds of the training set, and its peak resident memory.
    json data_info = {{"cache", o.cache}, {"node_shared", o.cache_node_shared}, {"slow_storage_mb_s", o.slow_storage},
                      {"load_seconds", load_seconds}};
    if (cached) {
      const gw_cache_stats cs = cached->stats();
      // A node's segment is in memory once: each of its ranks' share of it (GW_LOCAL_SIZE ranks per node).
      const char* local = std::getenv("GW_LOCAL_SIZE");
      const uint64_t per_node = local && std::atoi(local) > 0 ? uint64_t(std::atoi(local)) : 1;
      data_info["train_bytes_held"] = cs.bytes_private + cs.bytes_shared / per_node;
      data_info["cache"] = {{"bytes_private", cs.bytes_private}, {"bytes_shared", cs.bytes_shared},
                            {"bytes_local", cs.bytes_local}, {"bytes_fetched", cs.bytes_fetched},
                            {"bytes_served", cs.bytes_served}, {"loads", cs.loads},
                            {"bytes_loaded", cs.bytes_loaded}, {"gets", cs.gets}, {"checksum", cs.checksum}};
    } else {
      data_info["train_bytes_held"] = data.train.images.size() + data.train.labels.size();
    }
    struct rusage usage {};
    getrusage(RUSAGE_SELF, &usage);
    data_info["max_rss_bytes"] = uint64_t(usage.ru_maxrss) * 1024;
    if (r.has_final_model) {  // the parameter server's final model, merged into the leader's result
      const json final_model = {{"test_accuracy", r.final_model.test_accuracy}, {"test_loss", r.final_model.test_loss},
                                {"evaluated_by", "server"}, {"server", ps_info}};
      std::ofstream(std::filesystem::path(o.out) / (o.worker + ".final.json")) << final_model.dump(1) << "\n";
    }
    if (o.elastic > 0) {  // every member, so that a test or benchmark can compare them
      std::printf("%-10s elastic: rank %u of %u ended at step %llu with parameters fnv1a %016llx\n", o.worker.c_str(),
                  exchange.rank(), exchange.size(), static_cast<unsigned long long>(st.steps),
                  static_cast<unsigned long long>(fnv1a(r.parameters.data(), r.parameters.size() * sizeof(float))));
      std::fflush(stdout);
    }
    if (!leader()) return;
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
              {"toml", toml_text}, {"ps", ps_info}, {"data", data_info},
              {"elastic", {{"restarts", o.elastic}, {"kill_rank", o.kill_rank}, {"kill_step", o.kill_step}}},
              {"slow_rank", o.slow_rank}, {"slow_factor", o.slow_factor},
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
  std::ofstream(std::filesystem::path(o.out) / (o.worker + ".json")) << result.dump(1) << "\n";
}

}  // namespace gwcli::train
