#include "trainer.hpp"

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cmath>
#include <numeric>
#include <optional>
#include <random>
#include <stdexcept>
#include <thread>

namespace gwtrain {
namespace {

using Clock = std::chrono::steady_clock;

// The epoch's order of the training images: Fisher-Yates driven by mt19937_64 (std::shuffle's algorithm
// is up to the standard library), the same on every rank.
std::vector<uint32_t> permutation(uint32_t n, uint64_t seed, uint32_t epoch) {
  std::vector<uint32_t> order(n);
  std::iota(order.begin(), order.end(), 0u);
  std::mt19937_64 gen(seed ^ (0x9e3779b97f4a7c15ull * (uint64_t(epoch) + 1)));
  for (uint32_t i = n; i > 1; --i) {
    const uint32_t j = uint32_t(gen() % i);
    std::swap(order[i - 1], order[j]);
  }
  return order;
}

// Column j of x: image j of `images` (count x pixels bytes), scaled.
void scale_batch(const uint8_t* images, uint32_t pixels, uint32_t count, const Normalization& norm, Matrix& x) {
  x.resize(pixels, count);
  const float scale = 1.0f / (255.0f * norm.std);
  const float shift = norm.mean / norm.std;
  for (uint32_t j = 0; j < count; ++j) {
    const uint8_t* img = images + size_t(j) * pixels;
    float* col = x.col(j).data();
    for (uint32_t p = 0; p < pixels; ++p) col[p] = float(img[p]) * scale - shift;
  }
}

void fill_batch(const Split& split, const Normalization& norm, const uint32_t* indices, uint32_t count, Matrix& x,
                std::vector<uint8_t>& labels) {
  const uint32_t pixels = split.pixels();
  x.resize(pixels, count);
  labels.resize(count);
  const float scale = 1.0f / (255.0f * norm.std);
  const float shift = norm.mean / norm.std;
  for (uint32_t j = 0; j < count; ++j) {
    const uint8_t* img = split.images.data() + size_t(indices[j]) * pixels;
    float* col = x.col(j).data();
    for (uint32_t p = 0; p < pixels; ++p) col[p] = float(img[p]) * scale - shift;
    labels[j] = split.labels[indices[j]];
  }
}

// Adds the test samples at `indices` to `correct` and `loss_sum`, 1000 at a time.
void evaluate_samples(Mlp& model, const Split& test, const Normalization& norm, const std::vector<uint32_t>& indices,
                      Matrix& x, std::vector<uint8_t>& labels, double& correct, double& loss_sum) {
  for (size_t b = 0; b < indices.size(); b += 1000) {
    const uint32_t n = uint32_t(std::min<size_t>(1000, indices.size() - b));
    fill_batch(test, norm, indices.data() + b, n, x, labels);
    int64_t right = 0;
    model.evaluate(x, labels.data(), right, loss_sum);
    correct += double(right);
  }
}

}  // namespace

Normalization normalization_of(const Split& train) {
  double sum = 0, sum_sq = 0;
  for (uint8_t v : train.images) {
    const double x = v / 255.0;
    sum += x;
    sum_sq += x * x;
  }
  const double n = double(train.images.size());
  const double mean = sum / n;
  return {float(mean), float(std::sqrt(std::max(sum_sq / n - mean * mean, 1e-12)))};
}

TrainResult train(const Dataset& data, const TrainOptions& o, Exchange& exchange,
                  const std::function<void(const CurvePoint&)>& on_point) {
  // Elastic mode: the membership may change to any size; the shards are unequal where it does not divide.
  const uint32_t ranks = exchange.size();
  if (o.batch < ranks || (!exchange.elastic() && o.batch % ranks != 0))
    throw std::invalid_argument("the global batch (" + std::to_string(o.batch) + ") must be a positive multiple of the " +
                                std::to_string(ranks) + " ranks, so every rank takes an equal shard");
  if (o.epochs == 0) throw std::invalid_argument("--epochs must be at least 1");
  if (!(o.lr > 0.0f)) throw std::invalid_argument("--lr must be positive");
  const uint32_t n_train = o.train_limit ? std::min(o.train_limit, data.train.count) : data.train.count;
  const uint32_t n_test = o.test_limit ? std::min(o.test_limit, data.test.count) : data.test.count;
  const uint32_t steps_per_epoch = n_train / o.batch;  // the last partial batch is dropped
  if (steps_per_epoch == 0)
    throw std::invalid_argument("the global batch (" + std::to_string(o.batch) + ") is larger than the " +
                                std::to_string(n_train) + " training images");
  const uint64_t total_steps = uint64_t(steps_per_epoch) * o.epochs;
  const uint32_t evals = std::max(1u, std::min(o.evals_per_epoch, steps_per_epoch));

  std::vector<uint32_t> sizes{data.train.pixels()};
  sizes.insert(sizes.end(), o.hidden.begin(), o.hidden.end());
  sizes.push_back(10);
  Mlp model(sizes);
  model.init(o.seed);
  Sgd sgd(model.parameters().size(), o.momentum);
  const Normalization norm = o.fetch_train ? o.normalization : normalization_of(data.train);
  exchange.attach(model.parameters(), model.gradients(), model.tensors());
  TrainResult result;
  Matrix x;
  std::vector<uint8_t> labels, fetched;
  if (!exchange.trains()) {
    // A server rank: attach served until the workers finished. Holding the final model, it evaluates it
    // on the whole test set: that is the model at the end of training, after every worker's last step.
    if (exchange.holds_final_model()) {
      std::vector<uint32_t> all(n_test);
      std::iota(all.begin(), all.end(), 0u);
      double correct = 0, loss = 0;
      evaluate_samples(model, data.test, norm, all, x, labels, correct, loss);
      result.has_final_model = true;
      result.final_model.test_accuracy = correct / n_test;
      result.final_model.test_loss = loss / n_test;
      const auto params = model.parameters();
      result.parameters.assign(params.begin(), params.end());
    }
    return result;
  }

  // This rank's share of the test set, evaluated in chunks (again after a membership change).
  std::vector<uint32_t> test_indices;
  auto share_test_set = [&] {
    const uint32_t test_begin = uint32_t(uint64_t(n_test) * exchange.eval_rank() / exchange.eval_ranks());
    const uint32_t test_end = uint32_t(uint64_t(n_test) * (exchange.eval_rank() + 1) / exchange.eval_ranks());
    test_indices.resize(test_end - test_begin);
    std::iota(test_indices.begin(), test_indices.end(), test_begin);
  };
  share_test_set();

  // Elastic mode: the momentum at the start of the last two steps, to put back the one of the step the
  // members continue from after a change (the synchronizer puts back the parameters).
  std::vector<std::pair<uint64_t, std::vector<float>>> velocity_at;
  const bool elastic = exchange.elastic();
  uint64_t step = exchange.start_step();
  const uint32_t start_rank = exchange.rank();  // --kill-rank names the rank a process started as
  if (exchange.joined()) exchange.share_state(sgd.velocity());  // as the members do after admitting it

  double loss_since = 0, train_seconds = 0;
  uint32_t steps_since = 0;
  std::vector<uint32_t> order;
  uint32_t order_epoch = UINT32_MAX;
  auto started = Clock::now();
  while (step < total_steps) {
    const uint32_t epoch = uint32_t(step / steps_per_epoch), s = uint32_t(step % steps_per_epoch);
    if (epoch != order_epoch) {
      order = permutation(n_train, o.seed, epoch);
      order_epoch = epoch;
      started = Clock::now();
    }
    // This rank's shard of the global batch: equal shards when the ranks divide it.
    const uint32_t rank = exchange.rank(), members = exchange.size();
    const uint32_t first = uint32_t(uint64_t(o.batch) * rank / members);
    const uint32_t shard = uint32_t(uint64_t(o.batch) * (rank + 1) / members) - first;
    const auto compute_start = Clock::now();
    const uint32_t* batch = order.data() + size_t(s) * o.batch + first;
    if (o.fetch_train) {
      const uint32_t* next = s + 1 < steps_per_epoch ? batch + o.batch : nullptr;
      o.fetch_train(batch, next, shard, fetched, labels);
      scale_batch(fetched.data(), data.train.pixels(), shard, norm, x);
    } else {
      fill_batch(data.train, norm, batch, shard, x, labels);
    }
    loss_since += model.compute_gradients(x, labels.data());
    ++steps_since;
    if (int64_t(rank) == o.slow_rank && o.slow_factor > 1.0f)
      std::this_thread::sleep_for((Clock::now() - compute_start) * double(o.slow_factor - 1.0f));
    const double progress = double(step) / double(total_steps);
    const float lr = float(0.5 * o.lr * (1.0 + std::cos(M_PI * progress)));
    exchange.learning_rate(lr);
    if (elastic) {
      if (velocity_at.size() == 2) velocity_at.erase(velocity_at.begin());
      const auto v = sgd.velocity();
      velocity_at.emplace_back(step, std::vector<float>(v.begin(), v.end()));
    }
    if (int64_t(step) == o.kill_step && int64_t(start_rank) == o.kill_rank) {
      std::fprintf(stderr, "gradwire train: rank %u kills itself at step %llu (--kill-rank, --kill-step)\n", start_rank,
                   static_cast<unsigned long long>(step));
      std::fflush(stderr);
      raise(SIGKILL);
    }
    const bool apply = exchange.synchronize();
    if (const std::optional<uint64_t> resume = exchange.membership_changed()) {
      // The step was discarded: every member continues from step *resume with the same parameters; put
      // the momentum of that step back and take rank 0's (a joiner has none), then compute it again with
      // the new rank and size.
      bool found = false;
      for (const auto& [at, v] : velocity_at)
        if (at == *resume) {
          std::copy(v.begin(), v.end(), sgd.velocity().begin());
          found = true;
        }
      if (!found)
        throw std::runtime_error("elastic: the members continue from step " + std::to_string(*resume) +
                                 ", and this rank kept no momentum of that step");
      velocity_at.clear();
      exchange.share_state(sgd.velocity());
      step = *resume;
      share_test_set();
      continue;
    }
    if (apply) sgd.step(model.parameters(), model.gradients(), lr);
    ++step;

    // `evals` evenly spaced evaluations per epoch, the last one after the epoch's last step.
    if (uint64_t(s + 1) * evals / steps_per_epoch == uint64_t(s) * evals / steps_per_epoch) continue;
    if (!exchange.evaluates()) continue;
    train_seconds += std::chrono::duration<double>(Clock::now() - started).count();
    // Evaluation: every rank its share of the test set, summed over ranks.
    double counters[4] = {0, 0, loss_since, double(steps_since)};
    evaluate_samples(model, data.test, norm, test_indices, x, labels, counters[0], counters[1]);
    try {
      exchange.sum(counters);
    } catch (const std::exception& e) {
      if (!elastic) throw;
      // A member failed during the evaluation: this point is lost; the next step's synchronization
      // finds the failure and the members agree on the new membership there.
      std::fprintf(stderr, "gradwire train: the evaluation after step %llu failed (%s); continuing without it\n",
                   static_cast<unsigned long long>(step), e.what());
      started = Clock::now();
      continue;
    }
    CurvePoint p;
    p.step = step;
    p.epoch = epoch + double(s + 1) / steps_per_epoch;
    p.seconds = train_seconds;
    p.bytes = exchange.bytes_sent();
    p.raw_bytes = exchange.raw_bytes();
    p.test_accuracy = counters[0] / n_test;
    p.test_loss = counters[1] / n_test;
    p.train_loss = counters[2] / counters[3];
    result.curve.push_back(p);
    if (on_point) on_point(p);
    loss_since = 0;
    steps_since = 0;
    started = Clock::now();
  }
  const auto params = model.parameters();
  result.parameters.assign(params.begin(), params.end());
  return result;
}

}  // namespace gwtrain
