// The data cache behind gw_cache (docs/cache.md): a data set of fixed-size samples sharded over the
// ranks of a communicator (rank r holds the contiguous block [r n / N, (r + 1) n / N)), loaded once from
// storage through the application's loader and served to any rank by a collective exchange: gathered
// request lists, then one alltoallv of the samples. With GW_CACHE_NODE_SHARED the shards of a node's
// ranks live in one POSIX shared-memory segment, and a sample held on the same node is a memcpy.
#pragma once

#include <gradwire/gradwire.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "comm/communicator.hpp"

namespace gw::cache {

// The first sample of each rank's shard, and num_samples at the end (ranks + 1 entries).
std::vector<uint64_t> shard_starts(uint64_t num_samples, uint32_t ranks);
// The hash of sample `index` with these bytes; a data set's checksum is the sum (mod 2^64) of its
// samples' hashes, so it does not depend on how the data set is sharded.
uint64_t sample_hash(uint64_t index, const unsigned char* data, uint64_t bytes);

// A POSIX shared-memory segment mapped into this process.
class SharedSegment {
 public:
  SharedSegment() = default;
  ~SharedSegment();
  SharedSegment(const SharedSegment&) = delete;
  SharedSegment& operator=(const SharedSegment&) = delete;
  // create: a new segment of `bytes` (an old one of the same name is removed first); else opens it.
  void map(const std::string& name, uint64_t bytes, bool create);
  // Removes the name (the mappings stay valid); idempotent.
  void unlink() noexcept;
  unsigned char* data() const { return data_; }
  uint64_t size() const { return bytes_; }

 private:
  std::string name_;
  bool owner_ = false;
  unsigned char* data_ = nullptr;
  uint64_t bytes_ = 0;
};

class Cache {
 public:
  Cache(comm::Communicator& comm, const gw_cache_options& options);
  Cache(const Cache&) = delete;
  Cache& operator=(const Cache&) = delete;

  void get(const uint64_t* indices, uint64_t n, void* out);
  gw_cache_stats stats() const { return stats_; }
  uint64_t first() const { return starts_[rank_]; }
  uint64_t count() const { return starts_[rank_ + 1] - starts_[rank_]; }

 private:
  uint32_t owner_of(uint64_t index) const;
  // Where this process can read sample `index` without a message, or nullptr.
  const unsigned char* local_sample(uint64_t index) const;
  // Allgather of `words` u64 per rank (this rank's at all[rank * words]); throws with `what` on failure.
  void allgather(std::vector<uint64_t>& all, uint64_t words, const std::string& what);
  void create(const gw_cache_options& o);
  void check_options(const std::vector<uint64_t>& all, uint64_t words, const std::string& local_error);
  comm::Task get_rounds(comm::Collective& c);

  comm::Communicator& comm_;
  uint32_t rank_ = 0, size_ = 1;
  uint64_t num_samples_ = 0, sample_bytes_ = 0;
  bool shared_ = false;
  std::vector<uint64_t> starts_;
  std::vector<unsigned char> private_;  // this rank's shard, unless shared
  SharedSegment segment_;               // this node's shards, when shared
  std::vector<uint64_t> segment_offset_;  // by rank: its shard's offset in this node's segment; ~0: not here
  std::vector<uint32_t> node_of_;
  gw_cache_stats stats_ = GW_CACHE_STATS_INIT;
  // gw_cache_get's state and buffers, kept between calls (by peer)
  static constexpr uint32_t kNoRank = ~0u;
  uint64_t capacity_ = 0;  // indices that travel inline in round 0: the longest list of the previous call
  uint64_t req_n_ = 0, req_status_ = 0, req_bad_pos_ = 0, req_bad_value_ = 0;  // this rank's request
  uint32_t verdict_rank_ = kNoRank;  // the first rank whose request was bad, and its header
  uint64_t verdict_[4] = {0, 0, 0, 0};
  std::vector<std::vector<uint64_t>> want_;   // the indices this rank wants from each owner, in its order
  std::vector<std::vector<uint64_t>> asked_;  // the indices each peer asked this rank for
  std::vector<std::vector<uint64_t>> head_out_, head_in_;
  std::vector<std::vector<unsigned char>> send_, recv_;
  std::vector<uint64_t> taken_;
};

}  // namespace gw::cache

struct gw_cache {
  std::unique_ptr<gw::cache::Cache> impl;
};
