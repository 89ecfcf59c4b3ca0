// One rank of `gradwire train`: trains the configuration it was started for and, on rank 0, prints the
// progress and writes OUT/<configuration>.json.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "train/comm_exchange.hpp"
#include "train_cmd/train_cmd.hpp"

namespace gwcli::train {

namespace fs = std::filesystem;

void run_worker(const Options& o) {
  const Configuration& config = find_configuration(o.worker);
  const auto wall_start = std::chrono::steady_clock::now();
  const gwtrain::Dataset data = load_data(o.data);
  const std::string toml_text = configuration_toml(o.config_file, config);
  RuntimePtr runtime = open_runtime_text(toml_text);
  json result;
  try {
    gwtrain::CommExchange exchange(runtime.get());
    const bool leader = exchange.rank() == 0;
    gwtrain::TrainOptions options = train_options(o);
    options.lr *= config.lr_scale;
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
    const gw_sync_stats st = exchange.stats();
    if (!leader) return;
    const char* link = std::getenv("GW_LINK_RATE");
    json curve = json::array();
    for (const auto& p : r.curve)
      curve.push_back({{"step", p.step}, {"epoch", p.epoch}, {"seconds", p.seconds}, {"bytes", p.bytes},
                       {"raw_bytes", p.raw_bytes}, {"train_loss", p.train_loss}, {"test_loss", p.test_loss},
                       {"test_accuracy", p.test_accuracy}});
    result = {{"configuration", o.worker}, {"ranks", exchange.size()}, {"epochs", o.epochs}, {"batch", o.batch},
              {"lr", options.lr}, {"seed", o.seed}, {"hidden", o.hidden}, {"curve", curve},
              {"link", link ? link : "loopback"}, {"buckets", exchange.describe_buckets()}, {"toml", toml_text},
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

}  // namespace gwcli::train
