// Shared by the rank programs of tests/sync: failing loudly, deterministic inputs, runtime and
// communicator setup from a TOML text, the cross-rank identity check, and the Sync fixture (a synchronizer
// over a model's tensors). C ABI only.
#pragma once

#include <gradwire/gradwire.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "../support/rank_setup.hpp"

namespace synctest {

using gwrank::check;
using gwrank::die;
using gwrank::g_comm;
using gwrank::g_rank;
using gwrank::g_size;
using gwrank::init_rank_from_env;
using gwrank::make_comm;

// A case that must fail with `expected` on every rank: prints the message for the driver and exits 0.
[[noreturn]] inline void expect_error(gw_status st, gw_status expected, const std::string& doing) {
  if (st == expected) {
    std::printf("EXPECTED-ERROR %s %s\n", gw_status_string(st), gw_last_error());
    std::fflush(stdout);
    if (g_comm) gw_comm_destroy(g_comm);
    std::exit(0);
  }
  die(doing + ": expected " + gw_status_string(expected) + ", got " + gw_status_string(st) + ": " + gw_last_error());
}

inline uint64_t mix(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ull;
  return x ^ (x >> 33);
}

// A value in [-1, 1) that depends on (seed, rank, i) only.
inline float uniform(uint64_t seed, int rank, uint64_t i) {
  const uint64_t h = mix(seed * 0x9e3779b97f4a7c15ull + uint64_t(rank) * 0x632be59bd9b4e019ull + i);
  return float(double(h >> 40) / double(1ull << 23) - 1.0);
}

// A small integer in [-8, 8]: sums and averages over a few ranks are exact in f32 in any order.
inline float small_int(uint64_t seed, int rank, uint64_t i) {
  return float(int(mix(seed * 31 + uint64_t(rank) * 1000003 + i) % 17) - 8);
}

inline gw_tensor f32(float* data, uint64_t count) {
  gw_tensor t = GW_TENSOR_INIT;
  t.data = data;
  t.count = count;
  return t;
}

inline uint64_t fnv1a(const void* p, size_t n) {
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < n; ++i) h = (h ^ static_cast<const unsigned char*>(p)[i]) * 1099511628211ull;
  return h;
}

// Every rank must hold the same bytes: gather their hashes and compare.
inline void check_identical(gw_comm* comm, const void* data, size_t bytes, const std::string& what) {
  uint64_t mine = fnv1a(data, bytes);
  std::vector<uint64_t> all(g_size);
  gw_tensor in = GW_TENSOR_INIT, out = GW_TENSOR_INIT;
  in.dtype = out.dtype = GW_DTYPE_I64;
  in.data = &mine;
  in.count = 1;
  out.data = all.data();
  out.count = all.size();
  check(gw_allgather(comm, &in, &out), what + ": allgather of result hashes");
  for (int r = 0; r < g_size; ++r)
    if (all[r] != all[0]) die(what + ": rank " + std::to_string(r) + "'s result differs from rank 0's");
}

// A codec as the compressed collectives drive it, for the serial emulations of their algorithms: each
// piece encoded with the context the runtime gives it (the seed drawn from the piece's element offset,
// the communicator's world size) through gw_codec_encode, and decoded through gw_codec_decode.
struct PieceCodec {
  gw_codec* codec = nullptr;
  gw_codec_properties props = GW_CODEC_PROPERTIES_INIT;

  static gw_codec_context context(uint64_t offset, uint64_t seed) {
    gw_codec_context ctx = GW_CODEC_CONTEXT_INIT;
    ctx.seed = seed ^ (offset * 0x9e3779b97f4a7c15ull);
    ctx.world_size = uint32_t(g_size);
    return ctx;
  }
  std::vector<unsigned char> encode(const float* x, uint64_t count, uint64_t offset, uint64_t seed) const {
    uint64_t cap = 0;
    check(gw_codec_max_encoded_size(codec, GW_DTYPE_F32, count, &cap), "max_encoded_size");
    std::vector<unsigned char> p(cap);
    const gw_codec_context ctx = context(offset, seed);
    gw_tensor t = f32(const_cast<float*>(x), count);
    uint64_t size = 0;
    check(gw_codec_encode(codec, &ctx, &t, p.data(), p.size(), &size), "encode");
    p.resize(size);
    return p;
  }
  // With the context of the piece at `offset` (the default: seed 0).
  void decode(const std::vector<unsigned char>& p, float* out, uint64_t count, bool accumulate, uint64_t offset = 0,
              uint64_t seed = 0) const {
    const gw_codec_context ctx = context(offset, seed);
    gw_tensor t = f32(out, count);
    check(gw_codec_decode(codec, &ctx, p.data(), p.size(), &t, accumulate ? uint32_t(GW_DECODE_ACCUMULATE) : 0u),
          "decode");
  }
};

inline gw_runtime* make_runtime(const std::string& toml) { return gwrank::make_runtime(toml, "MP_TIMEOUT_S"); }

// A synchronizer over a model's tensors (any type with `names`, `grads` and `params`), its runtime made
// from `toml`: every tensor registered (its parameters too when `parameters`: schedules that average
// parameters, such as DiLoCo, need them), then finalized. Destroys both at the end.
struct Sync {
  gw_runtime* rt = nullptr;
  gw_sync* sync = nullptr;
  template <class Model>
  Sync(gw_comm* comm, const std::string& toml, Model& m, bool parameters = false) {
    rt = make_runtime(toml);
    gw_sync_options o = GW_SYNC_OPTIONS_INIT;
    o.runtime = rt;
    check(gw_sync_create(comm, &o, &sync), "gw_sync_create");
    for (size_t t = 0; t < m.names.size(); ++t) {
      gw_tensor g = f32(m.grads[t].data(), m.grads[t].size()), p = f32(m.params[t].data(), m.params[t].size());
      check(gw_sync_register(sync, m.names[t].c_str(), &g, parameters ? &p : nullptr), "gw_sync_register");
    }
    check(gw_sync_finalize(sync), "gw_sync_finalize");
  }
  Sync(const Sync&) = delete;
  Sync& operator=(const Sync&) = delete;
  ~Sync() {
    check(gw_sync_destroy(sync), "gw_sync_destroy");
    check(gw_runtime_destroy(rt), "gw_runtime_destroy");
  }
  uint32_t step() {
    uint32_t flags = 0;
    check(gw_sync_step(sync, &flags), "gw_sync_step");
    return flags;
  }
  uint32_t buckets() {
    uint32_t n = 0;
    check(gw_sync_bucket_count(sync, &n), "gw_sync_bucket_count");
    return n;
  }
  // The fragment of each of the model's tensors: bucket b of B is in fragment b * F / B.
  template <class Model>
  std::vector<uint64_t> fragments_of(const Model& m, uint64_t fragments) {
    const uint32_t n = buckets();
    std::vector<uint64_t> out;
    for (const auto& name : m.names) {
      uint32_t b = 0;
      check(gw_sync_tensor_bucket(sync, name.c_str(), &b), "gw_sync_tensor_bucket");
      out.push_back(uint64_t(b) * fragments / n);
    }
    return out;
  }
  std::vector<unsigned char> save() {
    uint64_t size = 0;
    check(gw_sync_save_state(sync, nullptr, 0, &size), "gw_sync_save_state (size)");
    std::vector<unsigned char> blob(size);
    check(gw_sync_save_state(sync, blob.data(), blob.size(), &size), "gw_sync_save_state");
    return blob;
  }
};

}  // namespace synctest
