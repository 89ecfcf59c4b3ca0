#include "cache/cache.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <map>
#include <new>
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
    try {
      private_.resize(count() * sample_bytes_);
      shard = private_.data();
      stats_.bytes_private = private_.size();
    } catch (const std::bad_alloc&) {  // reported through the next allgather, so no rank waits for this one
      open_status = GW_ERR_NO_MEMORY;
      open_error = "allocating its " + std::to_string(count() * sample_bytes_) + "-byte shard failed";
    }
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
  want_.resize(size_);
  asked_.resize(size_);
  head_out_.resize(size_);
  head_in_.resize(size_);
}

// One gw_cache_get is one collective of two (rarely three) rounds, every rank messaging every other
// directly (docs/cache.md):
//   0. to each peer a 48-byte header — its list length, its verdict on its own list (NULL pointers, the
//      first index out of range), how many samples it wants from that peer — followed by those indices
//      when they fit the capacity every rank agrees on (the longest list of the previous call);
//   1. only for lists over that capacity: the indices, now that their count is known;
//   2. each owner sends each requester the samples it asked for, in its order.
// After round 0 every rank knows every rank's verdict, so a bad request ends the call on every rank at
// the same point, before any sample moves, without failing the communicator.
comm::Task Cache::get_rounds(comm::Collective& c) {
  const uint32_t n = c.size(), me = c.rank();
  constexpr uint64_t kHead = 6;  // u64: n, status, bad position, bad value, wanted from you, inline
  const uint64_t cap = capacity_;
  for (uint32_t k = 1; k < n; ++k) {
    const uint32_t to = (me + k) % n, from = (me + n - k) % n;
    std::vector<uint64_t>& h = head_out_[to];
    h.assign(kHead, 0);
    h[0] = req_n_;
    h[1] = req_status_;
    h[2] = req_bad_pos_;
    h[3] = req_bad_value_;
    h[4] = want_[to].size();
    h[5] = want_[to].size() <= cap ? 1 : 0;
    if (h[5]) h.insert(h.end(), want_[to].begin(), want_[to].end());
    c.send(to, 0, h.data(), h.size() * 8);
    head_in_[from].resize(kHead + cap);
    c.recv_upto(from, 0, head_in_[from].data(), head_in_[from].size() * 8);
  }
  co_await c.all();
  // Every rank's verdict, in rank order, the same on every rank.
  uint64_t longest = req_n_;
  verdict_rank_ = kNoRank;
  for (uint32_t r = 0; r < n; ++r) {
    const uint64_t* h = r == me ? nullptr : head_in_[r].data();
    const uint64_t rn = h ? h[0] : req_n_, st = h ? h[1] : req_status_, bad = h ? h[2] : req_bad_pos_;
    longest = std::max(longest, rn);
    if (verdict_rank_ == kNoRank && (st != 0 || bad != kNone)) {
      verdict_rank_ = r;
      verdict_[0] = rn;
      verdict_[1] = st;
      verdict_[2] = bad;
      verdict_[3] = h ? h[3] : req_bad_value_;
    }
  }
  capacity_ = longest;
  if (verdict_rank_ != kNoRank) co_return;
  // Round 1: the lists that did not fit.
  for (uint32_t k = 1; k < n; ++k) {
    const uint32_t to = (me + k) % n, from = (me + n - k) % n;
    const uint64_t* h = head_in_[from].data();
    asked_[from].clear();
    if (h[4] > 0 && h[5]) {
      asked_[from].assign(h + kHead, h + kHead + h[4]);
    } else if (h[4] > 0) {
      asked_[from].resize(h[4]);
      c.recv(from, 1, asked_[from].data(), h[4] * 8);
    }
    if (want_[to].size() > cap) c.send(to, 1, want_[to].data(), want_[to].size() * 8);
  }
  co_await c.all();
  // Round 2: the samples.
  for (uint32_t k = 1; k < n; ++k) {
    const uint32_t to = (me + k) % n, from = (me + n - k) % n;
    send_[to].resize(asked_[to].size() * sample_bytes_);
    for (size_t j = 0; j < asked_[to].size(); ++j) {
      const uint64_t i = asked_[to][j];
      const unsigned char* src = i < num_samples_ ? local_sample(i) : nullptr;
      if (src == nullptr)
        fail(GW_ERR_CORRUPT, "gw_cache_get: " + rank_text(to) + " asked this rank for sample " + std::to_string(i) +
                                 ", which it does not hold (do all ranks run the same gradwire?)");
      std::memcpy(send_[to].data() + j * sample_bytes_, src, sample_bytes_);
    }
    if (!send_[to].empty()) c.send(to, 2, send_[to].data(), send_[to].size());
    recv_[from].resize(want_[from].size() * sample_bytes_);
    if (!recv_[from].empty()) c.recv(from, 2, recv_[from].data(), recv_[from].size());
  }
  co_await c.all();
}

void Cache::get(const uint64_t* indices, uint64_t n, void* out) {
  // This rank's verdict on its own list, and what it wants from whom.
  req_n_ = n;
  req_status_ = 0;
  req_bad_pos_ = kNone;
  req_bad_value_ = 0;
  for (auto& w : want_) w.clear();
  if (n > 0 && (indices == nullptr || out == nullptr)) {
    req_status_ = uint64_t(int64_t(GW_ERR_INVALID_ARGUMENT));
  } else {
    for (uint64_t j = 0; j < n; ++j)
      if (indices[j] >= num_samples_) {
        req_bad_pos_ = j;
        req_bad_value_ = indices[j];
        break;
      }
  }
  if (req_status_ == 0 && req_bad_pos_ == kNone)
    for (uint64_t j = 0; j < n; ++j) {
      const uint32_t o = owner_of(indices[j]);
      if (local_sample(indices[j]) == nullptr) want_[o].push_back(indices[j]);
    }
  if (size_ > 1) {
    const comm::Signature s{comm::CollectiveKind::Alltoallv, GW_REDUCE_SUM, GW_DTYPE_U8, 0, 0, 0};
    run_blocking(comm_, comm_.start_collective(s, [this](comm::Collective& c) { return get_rounds(c); }),
                 "gw_cache_get");
  } else {
    verdict_rank_ = kNoRank;
    if (req_status_ != 0 || req_bad_pos_ != kNone) {
      verdict_rank_ = 0;
      verdict_[0] = n;
      verdict_[1] = req_status_;
      verdict_[2] = req_bad_pos_;
      verdict_[3] = req_bad_value_;
    }
  }
  if (verdict_rank_ != kNoRank) {
    const uint32_t r = verdict_rank_;
    const std::string who = r == rank_ ? "this rank (" + rank_text(r) + ")" : rank_text(r);
    if (verdict_[1] != 0)
      fail(GW_ERR_INVALID_ARGUMENT, "gw_cache_get: " + who + " passed " + std::to_string(verdict_[0]) +
                                        " indices with a NULL indices or out pointer; no rank fetched anything");
    fail(GW_ERR_INVALID_ARGUMENT, "gw_cache_get: " + who + " asked for index " + std::to_string(verdict_[3]) +
                                      " (position " + std::to_string(verdict_[2]) +
                                      " of its list), outside the data set's range [0, " +
                                      std::to_string(num_samples_) + "); no rank fetched anything");
  }
  // Unpack: local samples are copied, the others taken in order from their owner's message.
  auto* dst = static_cast<unsigned char*>(out);
  std::vector<uint64_t>& taken = taken_;
  taken.assign(size_, 0);
  uint64_t copied = 0, fetched = 0, served = 0;
  for (uint64_t j = 0; j < n; ++j) {
    const unsigned char* src = local_sample(indices[j]);
    if (src != nullptr) {
      copied += sample_bytes_;
    } else {
      const uint32_t o = owner_of(indices[j]);
      src = recv_[o].data() + taken[o]++ * sample_bytes_;
      fetched += sample_bytes_;
    }
    std::memcpy(dst + j * sample_bytes_, src, sample_bytes_);
  }
  for (uint32_t q = 0; q < size_; ++q) served += q == rank_ ? 0 : send_[q].size();
  stats_.bytes_local += copied;
  stats_.bytes_fetched += fetched;
  stats_.bytes_served += served;
  ++stats_.gets;
}

}  // namespace gw::cache
