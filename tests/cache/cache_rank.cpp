// One rank of the data-cache tests, started by `gradwire run -n N -- cache_rank CASE [ARGS]`. C ABI only.
// The data set is synthetic: byte k of sample i is a hash of (i, k), so any rank can check any sample.
// Prints "OK rank r" at the end (or EXPECTED-ERROR for a failure case); the driver is cache_test.cpp.
#include <unistd.h>

#include <map>

#include "common.hpp"

using namespace synctest;

namespace {

constexpr uint64_t kSamples = 1000;
constexpr uint64_t kBytes = 37;  // not a multiple of 8: the tail of every sample counts

unsigned char byte_of(uint64_t seed, uint64_t i, uint64_t k) { return (unsigned char)(mix(seed * 7919 + i * 131 + k) >> 17); }

struct Source {
  uint64_t seed = 1;
  uint64_t bytes = kBytes;
  uint64_t loads = 0;
};

gw_status load(void* user, uint64_t first, uint64_t count, void* out) {
  auto* s = static_cast<Source*>(user);
  auto* p = static_cast<unsigned char*>(out);
  for (uint64_t i = 0; i < count; ++i)
    for (uint64_t k = 0; k < s->bytes; ++k) p[i * s->bytes + k] = byte_of(s->seed, first + i, k);
  ++s->loads;
  return GW_OK;
}

gw_status create(gw_comm* comm, Source& src, uint64_t samples, uint32_t flags, uint64_t checksum, gw_cache** cache) {
  gw_cache_options o = GW_CACHE_OPTIONS_INIT;
  o.num_samples = samples;
  o.sample_bytes = src.bytes;
  o.load = load;
  o.load_user = &src;
  o.flags = flags;
  o.checksum = checksum;
  return gw_cache_create(comm, &o, cache);
}

gw_cache_stats stats_of(gw_cache* c) {
  gw_cache_stats s = GW_CACHE_STATS_INIT;
  check(gw_cache_get_stats(c, &s), "gw_cache_get_stats");
  return s;
}

uint64_t shard_begin(uint32_t r) { return kSamples * r / uint64_t(g_size); }
uint32_t owner(uint64_t i) {
  uint32_t r = 0;
  while (shard_begin(r + 1) <= i) ++r;
  return r;
}

// Sums a u64 over the ranks.
uint64_t sum(gw_comm* comm, uint64_t v) {
  int64_t x = int64_t(v);
  gw_tensor t = GW_TENSOR_INIT;
  t.dtype = GW_DTYPE_I64;
  t.data = &x;
  t.count = 1;
  check(gw_allreduce(comm, &t, &t, GW_REDUCE_SUM), "gw_allreduce");
  return uint64_t(x);
}

// Random batches of random sizes (0 on some ranks some of the time), with repeats and indices from every
// shard; every byte is checked, and the stats must account for every byte.
// per_node: 0 for the plain cache, else GW_CACHE_NODE_SHARED with nodes of per_node ranks.
void case_fetch(gw_comm* comm, uint32_t per_node) {
  Source src;
  gw_cache* cache = nullptr;
  check(create(comm, src, kSamples, per_node ? uint32_t(GW_CACHE_NODE_SHARED) : 0u, 0, &cache), "gw_cache_create");
  uint64_t first = 0, count = 0;
  check(gw_cache_shard(cache, &first, &count), "gw_cache_shard");
  if (first != shard_begin(uint32_t(g_rank)) || count != shard_begin(uint32_t(g_rank) + 1) - first)
    die("gw_cache_shard: [" + std::to_string(first) + ", +" + std::to_string(count) + ")");
  const uint32_t node = per_node ? uint32_t(g_rank) / per_node : 0;
  auto local = [&](uint64_t i) { return per_node ? owner(i) / per_node == node : owner(i) == uint32_t(g_rank); };
  uint64_t expect_local = 0, expect_remote = 0;
  std::vector<uint64_t> idx;
  std::vector<unsigned char> out;
  for (int batch = 0; batch < 30; ++batch) {
    const uint64_t n = mix(uint64_t(batch) * 977 + uint64_t(g_rank)) % 5 == 0 ? 0 : 1 + mix(uint64_t(batch) + 31 * uint64_t(g_rank)) % 97;
    idx.resize(n);
    for (uint64_t j = 0; j < n; ++j) idx[j] = mix(uint64_t(batch) * 1000003 + uint64_t(g_rank) * 7777 + j) % kSamples;
    if (n > 3) idx[n - 1] = idx[0];  // a repeat
    out.assign(n * kBytes, 0xee);
    check(gw_cache_get(cache, idx.data(), n, out.data()), "gw_cache_get batch " + std::to_string(batch));
    for (uint64_t j = 0; j < n; ++j) {
      for (uint64_t k = 0; k < kBytes; ++k)
        if (out[j * kBytes + k] != byte_of(src.seed, idx[j], k))
          die("batch " + std::to_string(batch) + ": sample " + std::to_string(idx[j]) + " (position " +
              std::to_string(j) + ") byte " + std::to_string(k) + " is wrong");
      (local(idx[j]) ? expect_local : expect_remote) += kBytes;
    }
  }
  const gw_cache_stats s = stats_of(cache);
  const uint64_t shard_bytes = count * kBytes;
  if (s.gets != 30) die("stats: gets " + std::to_string(s.gets));
  if (s.bytes_local != expect_local || s.bytes_fetched != expect_remote)
    die("stats: local " + std::to_string(s.bytes_local) + " (expected " + std::to_string(expect_local) + "), fetched " +
        std::to_string(s.bytes_fetched) + " (expected " + std::to_string(expect_remote) + ")");
  const uint64_t probe = g_size > 1 ? 1 : 0;
  if (s.loads != 1 + probe || src.loads != s.loads || s.bytes_loaded != shard_bytes + probe * kBytes)
    die("stats: loads " + std::to_string(s.loads) + ", bytes loaded " + std::to_string(s.bytes_loaded));
  if (per_node == 0 && (s.bytes_private != shard_bytes || s.bytes_shared != 0))
    die("stats: private " + std::to_string(s.bytes_private) + ", shared " + std::to_string(s.bytes_shared));
  if (per_node != 0) {
    const uint32_t lo = node * per_node, hi = std::min<uint32_t>(uint32_t(g_size), lo + per_node);
    const uint64_t node_bytes = (shard_begin(hi) - shard_begin(lo)) * kBytes;
    if (s.bytes_private != 0 || s.bytes_shared != node_bytes)
      die("node-shared stats: private " + std::to_string(s.bytes_private) + ", shared " + std::to_string(s.bytes_shared) +
          " (expected 0 and " + std::to_string(node_bytes) + ")");
  }
  // What the ranks fetched is what the ranks served; every rank has the same checksum.
  const uint64_t fetched = sum(comm, s.bytes_fetched), served = sum(comm, s.bytes_served);
  if (fetched != served) die("stats: " + std::to_string(fetched) + " bytes fetched, " + std::to_string(served) + " served");
  if (sum(comm, s.checksum) != s.checksum * uint64_t(g_size)) die("the ranks report different checksums");
  if (s.checksum == 0) die("checksum 0");
  std::printf("CHECKSUM %016llx PRIVATE %llu SHARED %llu FETCHED %llu\n", (unsigned long long)s.checksum,
              (unsigned long long)s.bytes_private, (unsigned long long)s.bytes_shared, (unsigned long long)s.bytes_fetched);
  check(gw_cache_destroy(cache), "gw_cache_destroy");
  // The checksum as options->checksum: the same data set is accepted.
  Source again;
  check(create(comm, again, kSamples, 0, s.checksum, &cache), "gw_cache_create with the checksum of the data set");
  check(gw_cache_destroy(cache), "gw_cache_destroy");
}

// Rank 1 asks for an index past the end: every rank fails, naming it and the range, and the cache still
// works afterwards.
void case_bad_index(gw_comm* comm) {
  Source src;
  gw_cache* cache = nullptr;
  check(create(comm, src, kSamples, 0, 0, &cache), "gw_cache_create");
  std::vector<uint64_t> idx = {3, 999, 500};
  if (g_rank == 1) idx[1] = kSamples + 5;
  std::vector<unsigned char> out(idx.size() * kBytes);
  const gw_status st = gw_cache_get(cache, idx.data(), idx.size(), out.data());
  const std::string e = gw_last_error();
  if (st != GW_ERR_INVALID_ARGUMENT) die(std::string("a bad index gave ") + gw_status_string(st) + ": " + e);
  for (const char* word : {"rank 1", "index 1005", "[0, 1000)"})
    if (e.find(word) == std::string::npos) die("the bad-index error lacks \"" + std::string(word) + "\": " + e);
  std::printf("EXPECTED-ERROR %s %s\n", gw_status_string(st), e.c_str());
  idx[1] = 999;
  check(gw_cache_get(cache, idx.data(), idx.size(), out.data()), "gw_cache_get after a bad index");
  for (uint64_t k = 0; k < kBytes; ++k)
    if (out[kBytes + k] != byte_of(1, 999, k)) die("sample 999 is wrong after a bad index");
  check(gw_cache_destroy(cache), "gw_cache_destroy");
}

// Rank 2 describes another data set (what: "count" or "size"): GW_ERR_MISMATCH on every rank.
void case_shape_mismatch(gw_comm* comm, const std::string& what) {
  Source src;
  uint64_t samples = kSamples;
  if (g_rank == 2) (what == "size" ? src.bytes : samples) += 1;
  gw_cache* cache = nullptr;
  expect_error(create(comm, src, samples, 0, 0, &cache), GW_ERR_MISMATCH, "ranks with another " + what);
}

// Rank 2 reads other bytes from its storage: the checksum comparison names it and its neighbours.
void case_content_mismatch(gw_comm* comm) {
  Source src;
  if (g_rank == 2) src.seed = 2;
  gw_cache* cache = nullptr;
  expect_error(create(comm, src, kSamples, 0, 0, &cache), GW_ERR_MISMATCH, "ranks with other data");
}

// Rank 1 passes no loader: it fails saying why, the others naming it; nobody waits for a timeout.
void case_bad_options(gw_comm* comm) {
  Source src;
  gw_cache_options o = GW_CACHE_OPTIONS_INIT;
  o.num_samples = kSamples;
  o.sample_bytes = kBytes;
  o.load = g_rank == 1 ? nullptr : load;
  o.load_user = &src;
  gw_cache* cache = nullptr;
  expect_error(gw_cache_create(comm, &o, &cache), GW_ERR_INVALID_ARGUMENT, "a rank without a loader");
}

// Rank 2's storage fails: its loader's status on every rank, naming it.
gw_status failing_load(void*, uint64_t, uint64_t, void*) { return GW_ERR_NOT_FOUND; }
void case_loader_fails(gw_comm* comm) {
  Source src;
  gw_cache_options o = GW_CACHE_OPTIONS_INIT;
  o.num_samples = kSamples;
  o.sample_bytes = kBytes;
  o.load = g_rank == 2 ? failing_load : load;
  o.load_user = &src;
  gw_cache* cache = nullptr;
  expect_error(gw_cache_create(comm, &o, &cache), GW_ERR_NOT_FOUND, "a loader that fails");
}

// The data set differs from the checksum every rank expects.
void case_wrong_checksum(gw_comm* comm) {
  Source src;
  gw_cache* cache = nullptr;
  expect_error(create(comm, src, kSamples, 0, 0x1234, &cache), GW_ERR_MISMATCH, "a wrong expected checksum");
}

// The last rank leaves after creating the cache: it dies at once (`dead`), or stays alive elsewhere past
// the others' timeout and their exit. The others' gw_cache_get must fail with `expected`, naming it.
void case_last_rank_leaves(gw_comm* comm, bool dead, gw_status expected) {
  Source src;
  gw_cache* cache = nullptr;
  check(create(comm, src, kSamples, 0, 0, &cache), "gw_cache_create");
  if (g_rank == g_size - 1) {
    std::printf("OK rank %d (%s)\n", g_rank, dead ? "dying" : "absent");
    std::fflush(stdout);
    if (!dead) sleep(8);
    _exit(0);
  }
  std::vector<uint64_t> idx = {kSamples - 1, 0};
  std::vector<unsigned char> out(idx.size() * kBytes);
  gw_status st = GW_OK;
  for (int i = 0; i < 50 && st == GW_OK; ++i) st = gw_cache_get(cache, idx.data(), idx.size(), out.data());
  expect_error(st, expected, dead ? "gw_cache_get with a dead rank" : "gw_cache_get with a rank that never calls it");
}

}  // namespace

int main(int argc, char** argv) {
  init_rank_from_env();
  if (argc < 2) die("usage: cache_rank CASE [ARGS]");
  const std::string c = argv[1];
  std::string toml;
  if (c == "absent-rank") setenv("MP_TIMEOUT_S", "3", 1);
  if (c == "dead-rank") {
    setenv("MP_TIMEOUT_S", "5", 1);
    toml += "[transport.ucx]\nlocal_peer_failure_detection = true\n";
  }
  gw_runtime* rt = make_runtime(toml);
  gw_comm* comm = make_comm(rt);
  if (c == "fetch") case_fetch(comm, argc > 2 ? uint32_t(std::atoi(argv[2])) : 0);
  else if (c == "bad-index") case_bad_index(comm);
  else if (c == "shape-mismatch") case_shape_mismatch(comm, argc > 2 ? argv[2] : "count");
  else if (c == "content-mismatch") case_content_mismatch(comm);
  else if (c == "wrong-checksum") case_wrong_checksum(comm);
  else if (c == "bad-options") case_bad_options(comm);
  else if (c == "loader-fails") case_loader_fails(comm);
  else if (c == "dead-rank") case_last_rank_leaves(comm, true, GW_ERR_TRANSPORT);
  else if (c == "absent-rank") {
    case_last_rank_leaves(comm, false, GW_ERR_TIMEOUT);
    // The communicator failed with the timeout; destroying it is all that is left.
    gw_comm_destroy(comm);
    gw_runtime_destroy(rt);
    std::printf("OK rank %d\n", g_rank);
    return 0;
  } else die("unknown case " + c);
  check(gw_comm_destroy(comm), "gw_comm_destroy");
  check(gw_runtime_destroy(rt), "gw_runtime_destroy");
  std::printf("OK rank %d\n", g_rank);
  return 0;
}
