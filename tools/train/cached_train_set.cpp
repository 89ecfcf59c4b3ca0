#include "cached_train_set.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <utility>

#include "comm_exchange.hpp"
#include "idx.hpp"

namespace gwtrain {
namespace {

using Clock = std::chrono::steady_clock;

void check(gw_status status, const std::string& doing) {
  if (status < 0) throw GwError(status, doing + ": " + gw_last_error());
}

gw_status load_trampoline(void* user, uint64_t first, uint64_t count, void* out) {
  return static_cast<CachedTrainSet*>(user)->load(first, count, out);
}

}  // namespace

CachedTrainSet::CachedTrainSet(gw_runtime* runtime, const std::string& dir, uint32_t limit,
                               double storage_bytes_per_s, uint32_t flags)
    : rate_(storage_bytes_per_s), dir_(dir), limit_(limit) {
  thread_ = std::thread([this, runtime, flags] { data_thread(runtime, flags); });
  std::unique_lock<std::mutex> lock(mutex_);
  cv_.wait(lock, [&] { return state_ != State::Creating; });
  if (error_) {
    lock.unlock();
    thread_.join();
    std::rethrow_exception(error_);
  }
}

CachedTrainSet::~CachedTrainSet() {
  {
    std::unique_lock<std::mutex> lock(mutex_);
    cv_.wait(lock, [&] { return state_ != State::Requested; });  // a prefetch in flight finishes first
    state_ = State::Stopping;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

// The data thread: creates the communicator and the cache, answers requests, destroys both.
void CachedTrainSet::data_thread(gw_runtime* runtime, uint32_t flags) {
  try {
    create(runtime, flags);
  } catch (...) {
    std::lock_guard<std::mutex> lock(mutex_);
    error_ = std::current_exception();
    state_ = State::Done;
    if (cache_) gw_cache_destroy(cache_);
    if (comm_) gw_comm_destroy(comm_);
    cache_ = nullptr;
    comm_ = nullptr;
    cv_.notify_all();
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    state_ = State::Idle;
  }
  cv_.notify_all();
  for (;;) {
    std::unique_lock<std::mutex> lock(mutex_);
    cv_.wait(lock, [&] { return state_ == State::Requested || state_ == State::Stopping; });
    if (state_ == State::Stopping) break;
    lock.unlock();
    std::exception_ptr error;
    try {
      check(gw_cache_get(cache_, indices_.data(), indices_.size(), samples_.data()), "gw_cache_get");
    } catch (...) {
      error = std::current_exception();
    }
    lock.lock();
    error_ = error;
    state_ = State::Done;
    cv_.notify_all();
  }
  gw_cache_destroy(cache_);
  gw_comm_destroy(comm_);
}

void CachedTrainSet::create(gw_runtime* runtime, uint32_t flags) {
  images_path_ = fashion_mnist_file(dir_, "train-images-idx3-ubyte");
  labels_path_ = fashion_mnist_file(dir_, "train-labels-idx1-ubyte");
  const auto dims = read_idx_dims(images_path_, 3);
  const auto label_dims = read_idx_dims(labels_path_, 1);
  if (dims[0] != label_dims[0])
    throw DataError(images_path_ + " holds " + std::to_string(dims[0]) + " images but " + labels_path_ + " holds " +
                    std::to_string(label_dims[0]) + " labels; they must come from the same release");
  count_ = limit_ ? std::min(limit_, dims[0]) : dims[0];
  rows_ = dims[1];
  cols_ = dims[2];

  // A communicator of its own (the synchronizer's is the synchronizer's), from the same launcher
  // variables: every rank creates it at the same point of its sequence of communicators.
  gw_comm_options options = GW_COMM_OPTIONS_INIT;
  check(gw_comm_create(runtime, &options, &comm_), "the data cache's communicator (gw_comm_create)");
  const uint64_t rank = gw_comm_rank(comm_), size = gw_comm_size(comm_);
  shard_first_ = uint64_t(count_) * rank / size;
  shard_count_ = uint64_t(count_) * (rank + 1) / size - shard_first_;

  gw_cache_options o = GW_CACHE_OPTIONS_INIT;
  o.num_samples = count_;
  o.sample_bytes = uint64_t(rows_) * cols_ + 1;
  o.load = load_trampoline;
  o.load_user = this;
  o.flags = flags;
  const auto start = Clock::now();
  check(gw_cache_create(comm_, &o, &cache_), "gw_cache_create");
  create_seconds_ = std::chrono::duration<double>(Clock::now() - start).count();

  // The pixels' mean and std over all shards.
  double sums[3] = {pixel_sum_, pixel_sum_sq_, double(shard_count_) * rows_ * cols_};
  gw_tensor t = GW_TENSOR_INIT;
  t.dtype = GW_DTYPE_F64;
  t.data = sums;
  t.count = 3;
  check(gw_allreduce(comm_, &t, &t, GW_REDUCE_SUM), "summing the pixels over the shards (gw_allreduce)");
  const double mean = sums[0] / sums[2];
  normalization_ = {float(mean), float(std::sqrt(std::max(sums[1] / sums[2] - mean * mean, 1e-12)))};
}

gw_status CachedTrainSet::load(uint64_t first, uint64_t count, void* out) {
  const auto start = Clock::now();
  const uint64_t pixels = uint64_t(rows_) * cols_;
  std::vector<uint8_t> images(count * pixels), labels(count);
  try {
    read_idx_range(images_path_, 3, first * pixels, images.size(), images.data());
    read_idx_range(labels_path_, 1, first, labels.size(), labels.data());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gradwire train --cache: reading samples [%llu, %llu): %s\n",
                 static_cast<unsigned long long>(first), static_cast<unsigned long long>(first + count), e.what());
    return GW_ERR_NOT_FOUND;
  }
  auto* p = static_cast<uint8_t*>(out);
  for (uint64_t i = 0; i < count; ++i) {
    std::memcpy(p + i * (pixels + 1), images.data() + i * pixels, pixels);
    p[i * (pixels + 1) + pixels] = labels[i];
  }
  if (first == shard_first_ && count == shard_count_)
    for (uint8_t v : images) {
      const double x = v / 255.0;
      pixel_sum_ += x;
      pixel_sum_sq_ += x * x;
    }
  // Slow storage: the read takes at least bytes / rate; what the real read did not take is slept.
  if (rate_ > 0) {
    const double want = double(count * (pixels + 1)) / rate_;
    const double took = std::chrono::duration<double>(Clock::now() - start).count();
    if (want > took) std::this_thread::sleep_for(std::chrono::duration<double>(want - took));
  }
  return GW_OK;
}

void CachedTrainSet::submit(const uint32_t* indices, uint32_t n) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    indices_.assign(indices, indices + n);
    samples_.resize(size_t(n) * (uint64_t(rows_) * cols_ + 1));
    state_ = State::Requested;
  }
  cv_.notify_all();
}

void CachedTrainSet::await() {
  std::unique_lock<std::mutex> lock(mutex_);
  cv_.wait(lock, [&] { return state_ == State::Done; });
  state_ = State::Idle;
  if (error_) std::rethrow_exception(std::exchange(error_, nullptr));
}

void CachedTrainSet::fetch(const uint32_t* indices, const uint32_t* next, uint32_t n, std::vector<uint8_t>& pixels,
                           std::vector<uint8_t>& labels) {
  const uint64_t px = uint64_t(rows_) * cols_;
  bool prefetched = false;
  {
    std::unique_lock<std::mutex> lock(mutex_);
    prefetched = state_ != State::Idle && indices_.size() == n && std::equal(indices, indices + n, indices_.begin());
  }
  if (!prefetched) submit(indices, n);
  await();
  pixels.resize(size_t(n) * px);
  labels.resize(n);
  for (uint32_t j = 0; j < n; ++j) {
    std::memcpy(pixels.data() + j * px, samples_.data() + j * (px + 1), px);
    labels[j] = samples_[j * (px + 1) + px];
  }
  if (next != nullptr) submit(next, n);
}

gw_cache_stats CachedTrainSet::stats() const {
  std::unique_lock<std::mutex> lock(mutex_);
  cv_.wait(lock, [&] { return state_ != State::Requested; });  // the counters once a prefetch in flight ended
  gw_cache_stats s = GW_CACHE_STATS_INIT;
  check(gw_cache_get_stats(cache_, &s), "gw_cache_get_stats");
  return s;
}

}  // namespace gwtrain
