// One rank of the convergence test, started by `gradwire run -n N -- convergence_rank [DATA_DIR]`: a small
// MLP (784-32-10, the model of `gradwire train`) on a Fashion-MNIST subset, trained data-parallel through
// gw_sync for a few hundred steps, once uncompressed and once per codec (error feedback on) and per
// schedule. Every configuration starts from the same weights and sees the same batches; the final mean
// test loss must lie within kTolerance of the uncompressed run's. Prints "LOSS <config> <loss>" lines
// with the synchronizer's accounting (rank 0) and "OK rank r"; a data set that is not installed prints
// "SKIP" and exits 0.
//
// `convergence_rank mixed [DATA_DIR]` is the mixed-precision check instead: the gradients reach gw_sync as
// bf16 tensors (what mixed-precision training produces: the model's f32 gradients rounded to bf16), are
// averaged through f32 (uncompressed and through int8) and rounded back; the final test accuracy must be
// within kMixedPoints percentage points of the same run with f32 gradients.
#include <cmath>
#include <cstring>
#include <filesystem>
#include <map>

#include "common.hpp"
#include "idx.hpp"
#include "mlp.hpp"

using namespace synctest;

namespace {

constexpr int kSteps = 300;
constexpr int kBatch = 32;          // per rank
constexpr uint32_t kTrain = 12000;  // the subset the ranks share
constexpr uint32_t kTest = 2000;
// Plain SGD: with momentum 0.9 the delayed (async) and the coarsest (one bit, random-k) exchanges turn
// unstable at this learning rate, which would measure the optimizer's tuning, not the exchange.
constexpr float kLearningRate = 0.1f;
constexpr float kMomentum = 0.0f;
// Final test loss allowed above the uncompressed run's (absolute, nats). The uncompressed loss after
// 300 steps is about 0.59; every codec with error feedback lands within a few hundredths of it, and the
// schedules that update less often (accumulate: half the updates) or later (async) within 0.07 — 0.10
// leaves room for the rank count without letting a broken exchange (near ln 10 = 2.3) pass.
constexpr double kTolerance = 0.10;

constexpr double kMixedPoints = 0.5;

struct Config {
  std::string name;
  std::string toml;
  bool bf16_gradients = false;  // register bf16 copies of the gradients (mixed precision)
  int steps = kSteps;
};

struct Outcome {
  double loss = 0;      // mean test loss over ranks
  double accuracy = 0;  // test accuracy, percent, mean over ranks
};

gwtrain::Matrix images(const gwtrain::Split& s, const std::vector<uint32_t>& index) {
  gwtrain::Matrix x(s.pixels(), index.size());
  for (size_t j = 0; j < index.size(); ++j)
    for (uint32_t p = 0; p < s.pixels(); ++p) x(p, j) = float(s.images[size_t(index[j]) * s.pixels() + p]) / 255.0f;
  return x;
}

Outcome train(gw_comm* comm, const Config& c, const gwtrain::Dataset& data, const gwtrain::Matrix& test_x,
              const std::vector<uint8_t>& test_y, gw_sync_stats& stats) {
  gwtrain::Mlp model({784, 32, 10});
  model.init(1234);  // the same weights on every rank
  gwtrain::Sgd sgd(model.parameters().size(), kMomentum);
  gw_runtime* rt = make_runtime(c.toml);
  gw_sync_options o = GW_SYNC_OPTIONS_INIT;
  o.runtime = rt;
  gw_sync* sync = nullptr;
  check(gw_sync_create(comm, &o, &sync), c.name + ": gw_sync_create");
  // Mixed precision: bf16 gradients, stored next to the f32 model (round to nearest even, as a bf16
  // backward pass would have produced them; NaN never occurs here).
  std::vector<uint16_t> half(c.bf16_gradients ? model.gradients().size() : 0);
  const auto to_bf16 = [](float f) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    return uint16_t((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
  };
  const auto from_bf16 = [](uint16_t h) {
    const uint32_t u = uint32_t(h) << 16;
    float f;
    std::memcpy(&f, &u, 4);
    return f;
  };
  for (const auto& t : model.tensors()) {
    gw_tensor g = f32(model.gradients().data() + t.offset, t.count());
    if (c.bf16_gradients) {
      g.dtype = GW_DTYPE_BF16;
      g.data = half.data() + t.offset;
    }
    gw_tensor p = f32(model.parameters().data() + t.offset, t.count());
    check(gw_sync_register(sync, t.name.c_str(), &g, &p), c.name + ": gw_sync_register");
  }
  check(gw_sync_finalize(sync), c.name + ": gw_sync_finalize");

  std::vector<uint32_t> index(kBatch);
  std::vector<uint8_t> labels(kBatch);
  for (int step = 0; step < c.steps; ++step) {
    for (int j = 0; j < kBatch; ++j) {  // rank r's batches: a fixed walk through its share of the subset
      index[j] = uint32_t((mix(uint64_t(step) * kBatch + j) % (kTrain / g_size)) * g_size + g_rank);
      labels[j] = data.train.labels[index[j]];
    }
    model.compute_gradients(images(data.train, index), labels.data());
    float* grads = model.gradients().data();
    for (size_t i = 0; i < half.size(); ++i) half[i] = to_bf16(grads[i]);
    uint32_t flags = 0;
    check(gw_sync_step(sync, &flags), c.name + ": gw_sync_step");
    for (size_t i = 0; i < half.size(); ++i) grads[i] = from_bf16(half[i]);
    if (flags & GW_SYNC_APPLY) sgd.step(model.parameters(), model.gradients(), kLearningRate);
  }
  check(gw_sync_get_stats(sync, GW_SYNC_ALL_BUCKETS, &stats), c.name + ": gw_sync_get_stats");
  check(gw_sync_destroy(sync), "gw_sync_destroy");
  check(gw_runtime_destroy(rt), "gw_runtime_destroy");

  int64_t correct = 0;
  double loss_sum = 0;
  model.evaluate(test_x, test_y.data(), correct, loss_sum);
  // local SGD leaves the ranks' models apart between averagings: report the mean over ranks.
  const double tested = double(test_y.size());
  double mean = loss_sum / tested;
  gw_tensor t = GW_TENSOR_INIT;
  t.dtype = GW_DTYPE_F64;
  t.data = &mean;
  t.count = 1;
  check(gw_allreduce(comm, &t, &t, GW_REDUCE_AVG), "loss average");
  double accuracy = 100.0 * double(correct) / tested;
  t.data = &accuracy;
  check(gw_allreduce(comm, &t, &t, GW_REDUCE_AVG), "accuracy average");
  return {mean, accuracy};
}

// Mixed precision: bf16 gradients against f32 ones, uncompressed and int8, trained until the accuracy
// settles (a few hundred steps leave it moving by a point from run to run) and tested on the whole
// test set.
constexpr int kMixedSteps = 3000;

int run_mixed(gw_comm* comm, const gwtrain::Dataset& data, const gwtrain::Matrix& test_x,
              const std::vector<uint8_t>& test_y) {
  const std::string int8 = "[codec]\nname = \"int8\"\nerror_feedback = true\n";
  const std::vector<std::pair<Config, Config>> pairs = {
      {{"f32/none", "", false, kMixedSteps}, {"bf16/none", "", true, kMixedSteps}},
      {{"f32/int8", int8, false, kMixedSteps}, {"bf16/int8", int8, true, kMixedSteps}},
  };
  for (const auto& [full, mixed] : pairs) {
    gw_sync_stats st = GW_SYNC_STATS_INIT;
    const Outcome a = train(comm, full, data, test_x, test_y, st);
    const Outcome b = train(comm, mixed, data, test_x, test_y, st);
    if (g_rank == 0)
      std::printf("ACCURACY %-10s %.2f %%  %-10s %.2f %%  (loss %.4f, %.4f)\n", full.name.c_str(), a.accuracy,
                  mixed.name.c_str(), b.accuracy, a.loss, b.loss);
    if (!(a.accuracy > 50)) die(full.name + " did not learn: accuracy " + std::to_string(a.accuracy));
    if (!(std::fabs(a.accuracy - b.accuracy) <= kMixedPoints))
      die(mixed.name + ": test accuracy " + std::to_string(b.accuracy) + " % is more than " +
          std::to_string(kMixedPoints) + " points from " + full.name + "'s " + std::to_string(a.accuracy) + " %");
  }
  std::printf("OK rank %d\n", g_rank);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  init_rank_from_env();
  const bool mixed = argc > 1 && std::string(argv[1]) == "mixed";
  if (mixed) {
    --argc;
    ++argv;
  }
  const std::string dir = argc > 1 ? argv[1] : gwtrain::kDefaultDataDir;
  if (!std::filesystem::exists(dir)) {
    std::printf("SKIP the Fashion-MNIST files are not in %s (Debian package dataset-fashion-mnist)\n", dir.c_str());
    std::printf("OK rank %d\n", g_rank);
    return 0;
  }
  const gwtrain::Dataset data = gwtrain::load_fashion_mnist(dir);
  std::vector<uint32_t> test_index(kTest);
  std::vector<uint8_t> test_y(kTest);
  for (uint32_t i = 0; i < kTest; ++i) {
    test_index[i] = i;
    test_y[i] = data.test.labels[i];
  }
  const gwtrain::Matrix test_x = images(data.test, test_index);

  gw_runtime* rt = make_runtime("");
  gw_comm* comm = make_comm(rt);
  if (mixed) {
    const uint32_t all = uint32_t(data.test.labels.size());
    std::vector<uint32_t> every(all);
    for (uint32_t i = 0; i < all; ++i) every[i] = i;
    const int status = run_mixed(comm, data, images(data.test, every), data.test.labels);
    check(gw_comm_destroy(comm), "gw_comm_destroy");
    check(gw_runtime_destroy(rt), "gw_runtime_destroy");
    return status;
  }
  const std::string ef = "error_feedback = true\n";
  const std::vector<Config> configs = {
      {"none/every_step", "[codec]\nname = \"none\"\n"},
      {"fp16/every_step", "[codec]\nname = \"fp16\"\n" + ef},
      {"bf16/every_step", "[codec]\nname = \"bf16\"\n" + ef},
      {"int8/every_step", "[codec]\nname = \"int8\"\n" + ef},
      {"onebit/every_step", "[codec]\nname = \"onebit\"\n" + ef},
      {"topk/every_step", "[codec]\nname = \"topk\"\n" + ef + "[codec.topk]\nratio = 0.05\n"},
      {"randomk/every_step", "[codec]\nname = \"randomk\"\n" + ef + "[codec.randomk]\nratio = 0.1\n"},
      {"none/accumulate", "[schedule]\nname = \"accumulate\"\n[schedule.accumulate]\nsteps = 2\n"},
      {"none/local_sgd", "[schedule]\nname = \"local_sgd\"\n[schedule.local_sgd]\nperiod = 4\n"},
      {"none/async", "[schedule]\nname = \"async\"\n[schedule.async]\nstaleness = 1\n"},
      {"int8/async", "[codec]\nname = \"int8\"\n" + ef + "[schedule]\nname = \"async\"\n"},
  };
  std::map<std::string, double> loss;
  for (const Config& c : configs) {
    gw_sync_stats st = GW_SYNC_STATS_INIT;
    loss[c.name] = train(comm, c, data, test_x, test_y, st).loss;
    if (g_rank == 0)
      std::printf("LOSS %-20s %.4f  compression %.2fx  exchanges %llu  encode %.3f s  decode %.3f s  transfer %.3f s\n",
                  c.name.c_str(), loss[c.name], st.compression_ratio, (unsigned long long)st.syncs,
                  st.encode_seconds, st.decode_seconds, st.transfer_seconds);
  }
  const double reference = loss["none/every_step"];
  if (!(reference < 1.0)) die("uncompressed training did not learn: final test loss " + std::to_string(reference));
  for (const Config& c : configs)
    if (!(loss[c.name] <= reference + kTolerance))
      die(c.name + ": final test loss " + std::to_string(loss[c.name]) + " is more than " +
          std::to_string(kTolerance) + " above uncompressed (" + std::to_string(reference) + ")");
  check(gw_comm_destroy(comm), "gw_comm_destroy");
  check(gw_runtime_destroy(rt), "gw_runtime_destroy");
  std::printf("OK rank %d\n", g_rank);
  return 0;
}
