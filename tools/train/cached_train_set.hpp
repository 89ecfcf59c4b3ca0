// `gradwire train --cache`: the Fashion-MNIST training set in a data cache (gw_cache, docs/cache.md) over
// a communicator of its own. Each rank reads only its shard of the IDX files (optionally through storage
// slowed to a given rate) and draws every batch through gw_cache_get, so each epoch shuffles over the
// whole set while every rank holds 1/N of it. Samples are the image's pixels followed by its label.
//
// The communicator and the cache live on a thread of their own (a communicator is used from one thread):
// while the trainer computes a step, that thread already fetches the next batch (prefetch), so the
// exchange overlaps the step instead of adding to it.
#pragma once

#include <gradwire/gradwire.h>

#include <condition_variable>
#include <cstdint>
#include <exception>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "trainer.hpp"

namespace gwtrain {

class CachedTrainSet {
 public:
  // Collective. `limit`: the first N training images only (0: all); `storage_bytes_per_s` > 0: reads
  // take at least bytes / rate (the rest of the time is slept); `flags`: GW_CACHE_*.
  CachedTrainSet(gw_runtime* runtime, const std::string& dir, uint32_t limit, double storage_bytes_per_s,
                 uint32_t flags);
  ~CachedTrainSet();
  CachedTrainSet(const CachedTrainSet&) = delete;
  CachedTrainSet& operator=(const CachedTrainSet&) = delete;

  uint32_t count() const { return count_; }
  uint32_t rows() const { return rows_; }
  uint32_t cols() const { return cols_; }
  // Mean and std of the pixels over the whole training set (each rank's shard, summed over the ranks).
  Normalization normalization() const { return normalization_; }
  // Collective: the samples at `indices`; `next` (n indices, or NULL) is fetched in the background for
  // the following call.
  void fetch(const uint32_t* indices, const uint32_t* next, uint32_t n, std::vector<uint8_t>& pixels,
             std::vector<uint8_t>& labels);
  gw_cache_stats stats() const;
  // Seconds gw_cache_create took (reading the shard from storage, checking it).
  double create_seconds() const { return create_seconds_; }

  // The loader gw_cache calls.
  gw_status load(uint64_t first, uint64_t count, void* out);

 private:
  void data_thread(gw_runtime* runtime, uint32_t flags);
  void create(gw_runtime* runtime, uint32_t flags);
  // Hands `indices` to the data thread.
  void submit(const uint32_t* indices, uint32_t n);
  // Waits for the data thread's answer to the last submit; throws its error.
  void await();

  gw_comm* comm_ = nullptr;
  gw_cache* cache_ = nullptr;
  std::string images_path_, labels_path_;
  uint32_t count_ = 0, rows_ = 0, cols_ = 0;
  double rate_ = 0;
  uint64_t shard_first_ = 0, shard_count_ = 0;
  double pixel_sum_ = 0, pixel_sum_sq_ = 0;
  Normalization normalization_;
  double create_seconds_ = 0;
  // Between the trainer and the data thread, under mutex_.
  std::thread thread_;
  mutable std::mutex mutex_;
  mutable std::condition_variable cv_;
  enum class State { Creating, Idle, Requested, Done, Stopping } state_ = State::Creating;
  std::exception_ptr error_;
  std::vector<uint64_t> indices_;  // the request
  std::vector<uint8_t> samples_;   // its answer
  std::string dir_;
  uint32_t limit_ = 0;
};

}  // namespace gwtrain
