#include "cache/cache.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <map>
#include <random>

#include "collectives/algorithms.hpp"
#include "core/error.hpp"

namespace gw::cache {
namespace {

constexpr uint64_t kNone = ~uint64_t{0};

uint64_t mix(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ull;
  return x ^ (x >> 33);
}

std::string rank_text(uint32_t r) { return "rank " + std::to_string(r); }

// "ranks 0, 2 and 3" / "rank 1"
std::string ranks_text(const std::vector<uint32_t>& ranks) {
  if (ranks.size() == 1) return rank_text(ranks[0]);
  std::string s = "ranks ";
  for (size_t i = 0; i < ranks.size(); ++i) {
    if (i > 0) s += i + 1 == ranks.size() ? " and " : ", ";
    s += std::to_string(ranks[i]);
  }
  return s;
}

std::string hex(uint64_t v) {
  char b[17];
  std::snprintf(b, sizeof b, "%016llx", static_cast<unsigned long long>(v));
  return b;
}

void run_blocking(comm::Communicator& comm, gw_request* r, const std::string& what) {
  const gw_status st = comm.wait(r, -1.0);
  const std::string error = r->error;
  comm.free(r);
  if (st != GW_OK) fail(st, what + ": " + error);
}

// The samples each rank sends to and receives from every other rank in one gw_cache_get.
comm::Task exchange_samples(comm::Collective& c, std::vector<std::vector<unsigned char>>* send,
              std::vector<std::vector<unsigned char>>* recv) {
  const uint32_t n = c.size(), me = c.rank();
  for (uint32_t k = 1; k < n; ++k) {
    const uint32_t to = (me + k) % n, from = (me + n - k) % n;
    if (!(*send)[to].empty()) c.send(to, 0, (*send)[to].data(), (*send)[to].size());
    if (!(*recv)[from].empty()) c.recv(from, 0, (*recv)[from].data(), (*recv)[from].size());
  }
  co_await c.all();
}

}  // namespace

std::vector<uint64_t> shard_starts(uint64_t num_samples, uint32_t ranks) {
  std::vector<uint64_t> s(ranks + 1);
  for (uint32_t r = 0; r <= ranks; ++r)
    s[r] = num_samples / ranks * r + num_samples % ranks * r / ranks;  // floor(n r / N) without overflow
  return s;
}

uint64_t sample_hash(uint64_t index, const unsigned char* data, uint64_t bytes) {
  uint64_t h = mix(index + 0x9e3779b97f4a7c15ull);
  uint64_t i = 0;
  for (; i + 8 <= bytes; i += 8) {
    uint64_t w;
    std::memcpy(&w, data + i, 8);
    h = (h ^ w) * 0x100000001b3ull + (h >> 29);
  }
  uint64_t tail = 0;
  for (uint64_t k = 0; i < bytes; ++i, ++k) tail |= uint64_t(data[i]) << (8 * k);
  h = (h ^ tail) * 0x100000001b3ull;
  return mix(h ^ bytes);
}

// --- SharedSegment ---------------------------------------------------------------------------------

SharedSegment::~SharedSegment() {
  unlink();
  if (data_ != nullptr) munmap(data_, bytes_);
}

void SharedSegment::map(const std::string& name, uint64_t bytes, bool create) {
  name_ = name;
  owner_ = create;
  if (create) shm_unlink(name.c_str());  // a segment left by a killed job of the same id
  const int fd = shm_open(name.c_str(), create ? O_CREAT | O_EXCL | O_RDWR : O_RDWR, 0600);
  if (fd < 0)
    fail(GW_ERR_UNSUPPORTED, std::string("shm_open(\"") + name + "\") failed: " + std::strerror(errno) +
                        " (GW_CACHE_NODE_SHARED needs POSIX shared memory, /dev/shm, shared by the ranks of a node)");
  if (create && ftruncate(fd, off_t(bytes)) != 0) {
    const int e = errno;
    close(fd);
    fail(GW_ERR_NO_MEMORY, "sizing the shared-memory segment " + name + " to " + std::to_string(bytes) +
                               " bytes failed: " + std::strerror(e) + " (is /dev/shm large enough?)");
  }
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  const int e = errno;
  close(fd);
  if (p == MAP_FAILED)
    fail(GW_ERR_NO_MEMORY, "mapping the shared-memory segment " + name + " (" + std::to_string(bytes) +
                               " bytes) failed: " + std::strerror(e));
  data_ = static_cast<unsigned char*>(p);
  bytes_ = bytes;
}

void SharedSegment::unlink() noexcept {
  if (owner_ && !name_.empty()) shm_unlink(name_.c_str());
  owner_ = false;
}

// --- Cache -----------------------------------------------------------------------------------------

Cache::Cache(comm::Communicator& comm, const gw_cache_options& o)
    : comm_(comm), rank_(comm.rank()), size_(comm.size()) {
  create(o);
}

void Cache::allgather(std::vector<uint64_t>& all, uint64_t words, const std::string& what) {
  const coll::Blocks blocks = coll::blocks_of(std::vector<uint64_t>(size_, words * 8), 1);
  void* buf = all.data();
  const comm::Signature s{comm::CollectiveKind::Allgather, GW_REDUCE_SUM, GW_DTYPE_U8, words * 8, 0, 0};
  run_blocking(comm_, comm_.start_collective(s, [=](comm::Collective& c) { return coll::allgatherv_ring(c, buf, blocks); }),
               what);
}

uint32_t Cache::owner_of(uint64_t index) const {
  return uint32_t(std::upper_bound(starts_.begin(), starts_.end(), index) - starts_.begin()) - 1;
}

const unsigned char* Cache::local_sample(uint64_t index) const {
  const uint32_t o = owner_of(index);
  const uint64_t at = (index - starts_[o]) * sample_bytes_;
  if (!shared_) return o == rank_ ? private_.data() + at : nullptr;
  if (segment_offset_[o] == kNone) return nullptr;
  return segment_.data() + segment_offset_[o] + at;
}

// Round one of creation: [status, num_samples, sample_bytes, flags, checksum, nonce] from every rank.
void Cache::check_options(const std::vector<uint64_t>& all, uint64_t words, const std::string& local_error) {
  for (uint32_t r = 0; r < size_; ++r) {
    const gw_status st = gw_status(int64_t(all[r * words]));
    if (st == GW_OK) continue;
    if (r == rank_) fail(st, "gw_cache_create: " + local_error);
    fail(st, "gw_cache_create: " + rank_text(r) + " refused its options (" + status_name(st) +
                 "; its own error says why), so no rank creates the cache");
  }
  auto differ = [&](uint64_t field, const std::string& what, auto text) {
    std::map<uint64_t, std::vector<uint32_t>> groups;
    for (uint32_t r = 0; r < size_; ++r) groups[all[r * words + field]].push_back(r);
    if (groups.size() == 1) return;
    std::string s;
    for (auto& [value, ranks] : groups) s += (s.empty() ? "" : "; ") + ranks_text(ranks) + ": " + text(value);
    fail(GW_ERR_MISMATCH, "gw_cache_create: the ranks disagree on " + what + " (" + s +
                              "); every rank passes the same data set description");
  };
  auto number = [](uint64_t v) { return std::to_string(v); };
  differ(1, "the number of samples", number);
  differ(2, "the bytes per sample", number);
  differ(3, "the flags", [](uint64_t v) { return "0x" + hex(v); });
  differ(4, "the expected checksum", [](uint64_t v) { return v == 0 ? std::string("none") : "0x" + hex(v); });
}

void Cache::create(const gw_cache_options& o) {
  // 1. Every rank's description of the data set (and whether its options were valid at all), so a rank
  //    with bad options fails the creation everywhere instead of leaving the others waiting.
  constexpr uint64_t kWords1 = 6;
  std::vector<uint64_t> all(size_ * kWords1, 0);
  std::string local_error;
  gw_status st = GW_OK;
  if (o.load == nullptr) local_error = "options->load is NULL; give the function that reads samples from storage";
  else if (o.num_samples == 0) local_error = "options->num_samples is 0; a data set holds at least one sample";
  else if (o.sample_bytes == 0) local_error = "options->sample_bytes is 0; a sample holds at least one byte";
  else if ((o.flags & ~uint32_t(GW_CACHE_NODE_SHARED)) != 0)
    local_error = "options->flags has unknown bits 0x" + hex(o.flags & ~uint32_t(GW_CACHE_NODE_SHARED));
  if (!local_error.empty()) st = GW_ERR_INVALID_ARGUMENT;
  std::random_device rd;
  const uint64_t nonce = mix((uint64_t(rd()) << 32) ^ rd() ^ uint64_t(getpid()) ^
                             uint64_t(std::chrono::steady_clock::now().time_since_epoch().count()));
  uint64_t* mine = &all[rank_ * kWords1];
  mine[0] = uint64_t(int64_t(st));
  mine[1] = o.num_samples;
  mine[2] = o.sample_bytes;
  mine[3] = o.flags;
  mine[4] = o.checksum;
  mine[5] = nonce;
  allgather(all, kWords1, "gw_cache_create: comparing the ranks' data set descriptions");
  check_options(all, kWords1, local_error);
  num_samples_ = o.num_samples;
  sample_bytes_ = o.sample_bytes;
  shared_ = (o.flags & GW_CACHE_NODE_SHARED) != 0;
  starts_ = shard_starts(num_samples_, size_);
  const uint64_t job = all[5];  // rank 0's nonce names this cache's segments
  if (uint64_t(-1) / sample_bytes_ < num_samples_)
    fail(GW_ERR_INVALID_ARGUMENT, "gw_cache_create: num_samples x sample_bytes overflows 64 bits");

  // 2. Node-shared: the node's lowest rank creates one segment for the shards of the node's ranks (in
  //    their order); the creation's outcome travels in an allgather, after which the others open it.
  const comm::Topology& topo = comm_.topology();
  node_of_.assign(size_, 0);
  for (uint32_t r = 0; r < size_; ++r) node_of_[r] = topo.node_of.size() == size_ ? topo.node_of[r] : 0;
  unsigned char* shard = nullptr;
  std::string open_error;
  gw_status open_status = GW_OK;
  if (shared_) {
    segment_offset_.assign(size_, kNone);
    uint64_t bytes = 0;
    uint32_t leader = size_;  // the node's lowest rank
    for (uint32_t r = 0; r < size_; ++r)
      if (node_of_[r] == node_of_[rank_]) {
        leader = std::min(leader, r);
        segment_offset_[r] = bytes;
        bytes += (starts_[r + 1] - starts_[r]) * sample_bytes_;
      }
    const std::string name = "/gradwire-cache-" + hex(job) + "-node" + std::to_string(node_of_[rank_]);
    const uint64_t seg_bytes = std::max<uint64_t>(bytes, 1);
    if (rank_ == leader) {
      try {
        segment_.map(name, seg_bytes, true);
      } catch (const Error& e) {
        open_status = e.status();
        open_error = e.what();
      }
    }
    std::vector<uint64_t> created(size_, 0);
    created[rank_] = uint64_t(int64_t(open_status));
    allgather(created, 1, "gw_cache_create: creating the node's shared-memory segment");
    for (uint32_t r = 0; r < size_; ++r)
      if (created[r] != 0)
        fail(gw_status(int64_t(created[r])), "gw_cache_create: " + rank_text(r) +
                                                 " could not create its node's shared-memory segment" +
                                                 (r == rank_ ? ": " + open_error : " (its own error says why)"));
    if (rank_ != leader) {
      try {
        segment_.map(name, seg_bytes, false);
      } catch (const Error& e) {
        open_status = e.status();
        open_error = e.what();
      }
    }
    if (open_status == GW_OK) shard = segment_.data() + segment_offset_[rank_];
    stats_.bytes_shared = bytes;
  } else {
    private_.resize(count() * sample_bytes_);
    shard = private_.data();
    stats_.bytes_private = private_.size();
  }

  // 3. Load this rank's shard and the first sample of the next rank's shard (the probe), and hash them.
  const uint32_t next = (rank_ + 1) % size_;
  const uint64_t probe_index = starts_[next];
  const bool has_probe = size_ > 1 && starts_[next + 1] > probe_index && next != rank_;
  uint64_t shard_hash = 0, first_hash = 0, probe_hash = 0;
  gw_status load_status = open_status;
  std::string load_error = open_error;
  if (load_status == GW_OK && count() > 0) {
    const gw_status ls = o.load(o.load_user, first(), count(), shard);
    ++stats_.loads;
    stats_.bytes_loaded += count() * sample_bytes_;
    if (ls != GW_OK) {
      load_status = ls;
      load_error = "the loader returned " + std::string(status_name(ls)) + " for samples [" + std::to_string(first()) +
                   ", " + std::to_string(first() + count()) + ")";
    } else {
      for (uint64_t i = 0; i < count(); ++i) {
        const uint64_t h = sample_hash(first() + i, shard + i * sample_bytes_, sample_bytes_);
        shard_hash += h;
        if (i == 0) first_hash = h;
      }
    }
  }
  if (load_status == GW_OK && has_probe) {
    std::vector<unsigned char> probe(sample_bytes_);
    const gw_status ls = o.load(o.load_user, probe_index, 1, probe.data());
    ++stats_.loads;
    stats_.bytes_loaded += sample_bytes_;
    if (ls != GW_OK) {
      load_status = ls;
      load_error = "the loader returned " + std::string(status_name(ls)) + " for sample " + std::to_string(probe_index);
    } else {
      probe_hash = sample_hash(probe_index, probe.data(), sample_bytes_);
    }
  }

  // 4. Every rank's outcome and hashes: a failed load fails everywhere; a probe that differs from what
  //    the next rank read names both; the data set's checksum is the sum of the shards'.
  constexpr uint64_t kWords2 = 4;
  std::vector<uint64_t> hashes(size_ * kWords2, 0);
  uint64_t* h = &hashes[rank_ * kWords2];
  h[0] = uint64_t(int64_t(load_status));
  h[1] = shard_hash;
  h[2] = first_hash;
  h[3] = probe_hash;
  allgather(hashes, kWords2, "gw_cache_create: comparing the shards' checksums");
  segment_.unlink();  // every rank of the node has opened it by now; the name is no longer needed
  for (uint32_t r = 0; r < size_; ++r) {
    const gw_status s = gw_status(int64_t(hashes[r * kWords2]));
    if (s == GW_OK) continue;
    if (r == rank_) fail(s, "gw_cache_create: this rank could not load its shard: " + load_error);
    fail(s, "gw_cache_create: " + rank_text(r) + " could not load its shard (" + status_name(s) +
                "; its own error says why)");
  }
  std::vector<std::string> differences;
  for (uint32_t r = 0; r < size_ && size_ > 1; ++r) {
    const uint32_t n = (r + 1) % size_;
    if (n == r || starts_[n + 1] == starts_[n]) continue;
    const uint64_t theirs = hashes[n * kWords2 + 2], probed = hashes[r * kWords2 + 3];
    if (theirs != probed)
      differences.push_back(rank_text(r) + " and " + rank_text(n) + " read different bytes for sample " +
                            std::to_string(starts_[n]) + " (the first of " + rank_text(n) + "'s shard)");
  }
  if (!differences.empty()) {
    std::string s;
    for (auto& d : differences) s += (s.empty() ? "" : "; ") + d;
    fail(GW_ERR_MISMATCH, "gw_cache_create: checksum mismatch: " + s +
                              ". The ranks read different data from storage (another file, version or "
                              "preprocessing); every rank must see the same data set");
  }
  uint64_t checksum = 0;
  for (uint32_t r = 0; r < size_; ++r) checksum += hashes[r * kWords2 + 1];
  stats_.checksum = checksum;
  if (o.checksum != 0 && o.checksum != checksum)
    fail(GW_ERR_MISMATCH, "gw_cache_create: checksum mismatch: the data set's checksum is 0x" + hex(checksum) +
                              ", options->checksum expects 0x" + hex(o.checksum) +
                              "; the data in storage differs from the data set the checksum was taken of");
  send_.resize(size_);
  recv_.resize(size_);
}

void Cache::get(const uint64_t* indices, uint64_t n, void* out) {
  // 1. Every rank's request size and its first bad index, so a bad request fails every rank before any
  //    sample moves.
  constexpr uint64_t kWords = 4;
  std::vector<uint64_t> head(size_ * kWords, 0);
  uint64_t* mine = &head[rank_ * kWords];
  mine[0] = n;
  mine[1] = 0;
  mine[2] = kNone;
  if (n > 0 && (indices == nullptr || out == nullptr)) {
    mine[1] = uint64_t(int64_t(GW_ERR_INVALID_ARGUMENT));
  } else {
    for (uint64_t i = 0; i < n; ++i)
      if (indices[i] >= num_samples_) {
        mine[2] = i;
        mine[3] = indices[i];
        break;
      }
  }
  allgather(head, kWords, "gw_cache_get: gathering the request sizes");
  for (uint32_t r = 0; r < size_; ++r) {
    const uint64_t* h = &head[r * kWords];
    const std::string who = r == rank_ ? "this rank (" + rank_text(r) + ")" : rank_text(r);
    if (h[1] != 0)
      fail(GW_ERR_INVALID_ARGUMENT, "gw_cache_get: " + who + " passed " + std::to_string(h[0]) +
                                        " indices with a NULL indices or out pointer; no rank fetched anything");
    if (h[2] != kNone)
      fail(GW_ERR_INVALID_ARGUMENT, "gw_cache_get: " + who + " asked for index " + std::to_string(h[3]) +
                                        " (position " + std::to_string(h[2]) +
                                        " of its list), outside the data set's range [0, " +
                                        std::to_string(num_samples_) + "); no rank fetched anything");
  }
  // 2. Every rank's list.
  std::vector<uint64_t> counts(size_);
  uint64_t total = 0;
  for (uint32_t r = 0; r < size_; ++r) total += counts[r] = head[r * kWords];
  if (total == 0) {
    ++stats_.gets;
    return;
  }
  all_indices_.resize(total);
  const coll::Blocks blocks = coll::blocks_of(counts, 8);
  if (n > 0) std::memcpy(blocks.at(all_indices_.data(), rank_), indices, n * 8);
  {
    void* buf = all_indices_.data();
    const comm::Signature s{comm::CollectiveKind::Allgatherv, GW_REDUCE_SUM, GW_DTYPE_I64, total, 0, 0};
    run_blocking(comm_, comm_.start_collective(s, [=](comm::Collective& c) { return coll::allgatherv_ring(c, buf, blocks); }),
                 "gw_cache_get: gathering the request lists");
  }
  // 3. The plan, which every rank computes alike: rank q's sample j travels in a message from its owner
  //    unless q can read it locally (its own shard, or its node's segment).
  auto readable_by = [&](uint32_t q, uint32_t owner) {
    return owner == q || (shared_ && node_of_[owner] == node_of_[q]);
  };
  bool any_message = false;
  for (uint32_t q = 0; q < size_; ++q) {
    send_[q].clear();
    recv_[q].clear();
  }
  std::vector<uint64_t> recv_count(size_, 0);
  for (uint32_t q = 0; q < size_; ++q) {
    const uint64_t* list = all_indices_.data() + blocks.offset[q];
    for (uint64_t j = 0; j < counts[q]; ++j) {
      const uint32_t o = owner_of(list[j]);
      if (readable_by(q, o)) continue;
      any_message = true;
      if (o == rank_) {
        const unsigned char* src = local_sample(list[j]);
        send_[q].insert(send_[q].end(), src, src + sample_bytes_);
      }
      if (q == rank_) ++recv_count[o];
    }
  }
  auto* dst = static_cast<unsigned char*>(out);
  uint64_t fetched = 0, served = 0;
  if (any_message) {
    for (uint32_t o = 0; o < size_; ++o) recv_[o].resize(recv_count[o] * sample_bytes_);
    for (uint32_t q = 0; q < size_; ++q) served += send_[q].size();
    auto* send = &send_;
    auto* recv = &recv_;
    const comm::Signature s{comm::CollectiveKind::Alltoallv, GW_REDUCE_SUM, GW_DTYPE_U8, total, 0, 0};
    run_blocking(comm_, comm_.start_collective(s, [=](comm::Collective& c) { return exchange_samples(c, send, recv); }),
                 "gw_cache_get: exchanging the samples");
  }
  // 4. Unpack: local samples are copied, the others taken in order from their owner's message.
  std::vector<uint64_t> taken(size_, 0);
  uint64_t copied = 0;
  for (uint64_t j = 0; j < n; ++j) {
    const uint32_t o = owner_of(indices[j]);
    if (readable_by(rank_, o)) {
      std::memcpy(dst + j * sample_bytes_, local_sample(indices[j]), sample_bytes_);
      copied += sample_bytes_;
    } else {
      std::memcpy(dst + j * sample_bytes_, recv_[o].data() + taken[o] * sample_bytes_, sample_bytes_);
      ++taken[o];
      fetched += sample_bytes_;
    }
  }
  stats_.bytes_local += copied;
  stats_.bytes_fetched += fetched;
  stats_.bytes_served += served;
  ++stats_.gets;
}

}  // namespace gw::cache
