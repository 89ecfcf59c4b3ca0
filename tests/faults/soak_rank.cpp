// One rank of the soak, started by `gradwire run -n N -- soak_rank SEED COUNT [FIRST]`: collectives
// FIRST .. COUNT-1, each of a kind, op, dtype, element count (0 to 4 Mi, log-uniform) and codec drawn
// from (SEED, index) alone, so every rank draws the same plan and any collective replays on its own
// (FIRST = its index). Each result is compared with a serial reference every rank computes from all
// ranks' inputs (small integers: every partial sum is exact in every dtype, so lossless results are
// exact whatever the order), and its bytes are compared across ranks (an allgather of hashes): lossy
// codecs must give every rank the same bits. Prints "FAIL rank r: collective #j (SEED ...): ..." on the
// first difference, "OK rank r: ..." at the end.
#include <algorithm>
#include <bit>
#include <chrono>
#include <cmath>
#include <cstring>
#include <map>
#include <vector>

#include "common.hpp"
#include "../support/half_oracle.hpp"

using namespace faults;

namespace {

uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

struct Rng {
  uint64_t s;
  uint64_t next() { return s = mix(s); }
  uint64_t below(uint64_t n) { return n ? next() % n : 0; }
};

// ---- element types and the serial reference -------------------------------------------------------

// IEEE binary16, round to nearest even: the tests' one oracle (tests/support/half_oracle.hpp).
uint16_t to_half(float f) { return gwtest::half_from_float(f); }
float from_half(uint16_t h) { return gwtest::float_from_half(h); }
uint16_t to_bf16(float f) {  // round to nearest even; the values here are never NaN
  const uint32_t u = std::bit_cast<uint32_t>(f);
  return uint16_t((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}
float from_bf16(uint16_t h) { return std::bit_cast<float>(uint32_t(h) << 16); }

// An integer in [-5, 5] that depends on (collective, rank, element) only.
int input_value(uint64_t salt, int rank, uint64_t i) { return int((salt + uint64_t(rank) * 7 + i * 13) % 11) - 5; }

void store(gw_dtype dt, void* base, uint64_t i, double v) {
  switch (dt) {
    case GW_DTYPE_F32: static_cast<float*>(base)[i] = float(v); break;
    case GW_DTYPE_F64: static_cast<double*>(base)[i] = v; break;
    case GW_DTYPE_F16: static_cast<uint16_t*>(base)[i] = to_half(float(v)); break;
    case GW_DTYPE_BF16: static_cast<uint16_t*>(base)[i] = to_bf16(float(v)); break;
    case GW_DTYPE_I32: static_cast<int32_t*>(base)[i] = int32_t(v); break;
    case GW_DTYPE_I64: static_cast<int64_t*>(base)[i] = int64_t(v); break;
    default: die("bad dtype");
  }
}

// The reference of `op` over every rank's input at element i, in dtype `dt` (as mp_rank's: an average
// is the exact sum divided once in the dtype's arithmetic; f16/bf16 divide in f32).
void store_reference(gw_dtype dt, void* base, uint64_t i, gw_reduce_op op, uint64_t salt, uint64_t at) {
  double acc = input_value(salt, 0, at);
  for (int r = 1; r < g_size; ++r) {
    const double v = input_value(salt, r, at);
    acc = op == GW_REDUCE_MIN ? std::min(acc, v) : op == GW_REDUCE_MAX ? std::max(acc, v) : acc + v;
  }
  if (op != GW_REDUCE_AVG) return store(dt, base, i, acc);
  const int n = g_size;
  switch (dt) {
    case GW_DTYPE_F32: static_cast<float*>(base)[i] = float(acc) / float(n); break;
    case GW_DTYPE_F64: static_cast<double*>(base)[i] = acc / double(n); break;
    case GW_DTYPE_F16: static_cast<uint16_t*>(base)[i] = to_half(from_half(to_half(float(acc))) / float(n)); break;
    case GW_DTYPE_BF16: static_cast<uint16_t*>(base)[i] = to_bf16(from_bf16(to_bf16(float(acc))) / float(n)); break;
    case GW_DTYPE_I32: static_cast<int32_t*>(base)[i] = int32_t(int64_t(acc) / n); break;
    case GW_DTYPE_I64: static_cast<int64_t*>(base)[i] = int64_t(acc) / n; break;
    default: die("bad dtype");
  }
}

uint64_t fnv1a(const void* p, size_t n) {
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < n; ++i) h = (h ^ static_cast<const unsigned char*>(p)[i]) * 1099511628211ull;
  return h;
}

const gw_dtype kDtypes[] = {GW_DTYPE_F32, GW_DTYPE_F64, GW_DTYPE_F16, GW_DTYPE_BF16, GW_DTYPE_I32, GW_DTYPE_I64};
const gw_reduce_op kOps[] = {GW_REDUCE_SUM, GW_REDUCE_AVG, GW_REDUCE_MIN, GW_REDUCE_MAX};
const char* kCodecs[] = {"none", "fp16", "bf16", "int8", "onebit", "topk", "randomk"};
const char* op_text(gw_reduce_op op) {
  return op == GW_REDUCE_SUM ? "sum" : op == GW_REDUCE_AVG ? "avg" : op == GW_REDUCE_MIN ? "min" : "max";
}

enum Kind { kAllreduce, kAllreduceStart, kReduceScatter, kAllgather, kAllgatherv, kBroadcast, kBarrier, kCompressed };
const char* kKindNames[] = {"allreduce", "allreduce_start", "reduce_scatter", "allgather", "allgatherv",
                            "broadcast", "barrier", "allreduce_compressed"};

// One collective of the soak, drawn from (seed, index).
struct Plan {
  Kind kind = kBarrier;
  gw_dtype dtype = GW_DTYPE_F32;
  gw_reduce_op op = GW_REDUCE_SUM;
  uint64_t count = 0;  // the collective's total element count (per-rank pieces derive from it)
  bool in_place = false;
  uint32_t root = 0;
  int codec = 0;
  uint64_t salt = 0;
  std::vector<uint64_t> counts;  // allgatherv

  std::string describe(uint64_t seed, uint64_t index) const {
    std::string s = "collective #" + std::to_string(index) + " (seed " + std::to_string(seed) + "): " +
                    kKindNames[kind] + " count " + std::to_string(count);
    if (kind != kBarrier && kind != kCompressed) s += std::string(" ") + gw_dtype_name(dtype);
    if (kind == kAllreduce || kind == kAllreduceStart || kind == kReduceScatter || kind == kCompressed)
      s += std::string(" ") + op_text(op);
    if (kind == kCompressed) s += std::string(" codec ") + kCodecs[codec];
    if (kind == kBroadcast) s += " root " + std::to_string(root);
    if (in_place) s += " in place";
    return s;
  }
};

constexpr uint64_t kMaxCount = uint64_t(4) << 20;

Plan draw(uint64_t seed, uint64_t index) {
  Rng rng{mix(seed) ^ mix(index * 0x632be59bd9b4e019ull + 1)};
  Plan p;
  const uint64_t k = rng.below(100);
  p.kind = k < 28 ? kAllreduce : k < 35 ? kAllreduceStart : k < 47 ? kReduceScatter : k < 57 ? kAllgather
         : k < 65 ? kAllgatherv : k < 75 ? kBroadcast : k < 80 ? kBarrier : kCompressed;
  // Log-uniform over 0 .. 4 Mi: as many small collectives as large ones, the largest 4 Mi exactly.
  const uint64_t e = rng.below(24);
  p.count = e == 0 ? 0 : e == 23 ? kMaxCount : (uint64_t(1) << (e - 1)) + rng.below(uint64_t(1) << (e - 1));
  p.dtype = kDtypes[rng.below(6)];
  p.op = kOps[rng.below(4)];
  p.in_place = rng.below(2) == 1;
  p.root = uint32_t(rng.below(uint64_t(g_size)));
  p.codec = int(rng.below(7));
  p.salt = rng.next() % 1000;
  if (p.kind == kCompressed) {
    p.dtype = GW_DTYPE_F32;
    p.op = rng.below(2) ? GW_REDUCE_SUM : GW_REDUCE_AVG;
  }
  if (p.kind == kAllgatherv) {
    const uint64_t per = p.count / uint64_t(g_size);
    for (int r = 0; r < g_size; ++r) p.counts.push_back(rng.below(per + 1));
  }
  return p;
}

struct Soak {
  gw_comm* comm = nullptr;
  std::vector<gw_codec*> codecs;
  uint64_t seed = 0;
  uint64_t index = 0;
  Plan plan;
  std::vector<unsigned char> in, out, ref;

  [[noreturn]] void fail(const std::string& what) const { die(plan.describe(seed, index) + ": " + what); }
  void ok(gw_status st, const char* call) const {
    if (st != GW_OK) fail(std::string(call) + ": " + gw_status_string(st) + ": " + gw_last_error());
  }

  // Every rank must hold the same bytes.
  void check_identical(const void* data, size_t bytes) {
    uint64_t mine = fnv1a(data, bytes);
    std::vector<uint64_t> all(static_cast<size_t>(g_size));
    gw_tensor ti = tensor(GW_DTYPE_I64, &mine, 1), to = tensor(GW_DTYPE_I64, all.data(), all.size());
    ok(gw_allgather(comm, &ti, &to), "allgather of the result hashes");
    for (int r = 1; r < g_size; ++r)
      if (all[size_t(r)] != all[0]) fail("rank " + std::to_string(r) + "'s result differs from rank 0's");
  }

  void expect_equal(const unsigned char* got, const unsigned char* want, uint64_t count, size_t es) const {
    if (std::memcmp(got, want, count * es) == 0) return;
    for (uint64_t i = 0; i < count; ++i)
      if (std::memcmp(got + i * es, want + i * es, es) != 0) fail("wrong value at element " + std::to_string(i));
  }

  void run_one() {
    const Plan& p = plan;
    const gw_dtype dt = p.dtype;
    const size_t es = gw_dtype_size(dt);
    const uint64_t n = uint64_t(g_size);
    switch (p.kind) {
      case kAllreduce:
      case kAllreduceStart: {
        in.resize(p.count * es + 1);
        out.resize(p.count * es + 1);
        ref.resize(p.count * es + 1);
        for (uint64_t i = 0; i < p.count; ++i) {
          store(dt, in.data(), i, input_value(p.salt, g_rank, i));
          store_reference(dt, ref.data(), i, p.op, p.salt, i);
        }
        unsigned char* result = p.in_place ? in.data() : out.data();
        gw_tensor ti = tensor(dt, in.data(), p.count), to = tensor(dt, result, p.count);
        if (p.kind == kAllreduce) {
          ok(gw_allreduce(comm, &ti, &to, p.op), "gw_allreduce");
        } else {
          gw_request* r = nullptr;
          ok(gw_allreduce_start(comm, &ti, &to, p.op, &r), "gw_allreduce_start");
          const gw_status st = gw_request_wait(r, -1);
          gw_request_free(r);
          ok(st, "gw_request_wait");
        }
        expect_equal(result, ref.data(), p.count, es);
        check_identical(result, p.count * es);
        break;
      }
      case kReduceScatter: {
        const uint64_t per = p.count / n, total = per * n;
        in.resize(total * es + 1);
        out.resize(per * es + 1);
        ref.resize(per * es + 1);
        for (uint64_t i = 0; i < total; ++i) store(dt, in.data(), i, input_value(p.salt, g_rank, i));
        for (uint64_t i = 0; i < per; ++i) store_reference(dt, ref.data(), i, p.op, p.salt, uint64_t(g_rank) * per + i);
        unsigned char* result = p.in_place ? in.data() : out.data();
        gw_tensor ti = tensor(dt, in.data(), total), to = tensor(dt, result, per);
        ok(gw_reduce_scatter(comm, &ti, &to, p.op), "gw_reduce_scatter");
        expect_equal(result, ref.data(), per, es);
        break;
      }
      case kAllgather:
      case kAllgatherv: {
        std::vector<uint64_t> counts(n, p.count / n), offsets(n);
        if (p.kind == kAllgatherv) counts = p.counts;
        uint64_t total = 0;
        for (uint64_t r = 0; r < n; ++r) {
          offsets[r] = total;
          total += counts[r];
        }
        const uint64_t mine = counts[size_t(g_rank)];
        in.resize(mine * es + 1);
        out.resize(total * es + 1);
        ref.resize(total * es + 1);
        for (uint64_t r = 0; r < n; ++r)
          for (uint64_t i = 0; i < counts[r]; ++i) store(dt, ref.data(), offsets[r] + i, input_value(p.salt, int(r), i));
        for (uint64_t i = 0; i < mine; ++i) store(dt, in.data(), i, input_value(p.salt, g_rank, i));
        void* source = in.data();
        if (p.in_place) {
          std::memcpy(out.data() + offsets[size_t(g_rank)] * es, in.data(), mine * es);
          source = out.data() + offsets[size_t(g_rank)] * es;
        }
        gw_tensor ti = tensor(dt, source, mine), to = tensor(dt, out.data(), total);
        if (p.kind == kAllgather) ok(gw_allgather(comm, &ti, &to), "gw_allgather");
        else ok(gw_allgatherv(comm, &ti, &to, counts.data()), "gw_allgatherv");
        expect_equal(out.data(), ref.data(), total, es);
        break;
      }
      case kBroadcast: {
        out.assign(p.count * es + 1, 0xa5);
        ref.resize(p.count * es + 1);
        for (uint64_t i = 0; i < p.count; ++i) store(dt, ref.data(), i, input_value(p.salt, int(p.root), i));
        if (uint32_t(g_rank) == p.root) std::memcpy(out.data(), ref.data(), p.count * es);
        gw_tensor t = tensor(dt, out.data(), p.count);
        ok(gw_broadcast(comm, &t, p.root), "gw_broadcast");
        expect_equal(out.data(), ref.data(), p.count, es);
        break;
      }
      case kBarrier:
        ok(gw_barrier(comm), "gw_barrier");
        break;
      case kCompressed: {
        in.resize(p.count * 4 + 4);
        out.resize(p.count * 4 + 4);
        ref.resize(p.count * 4 + 4);
        float* x = reinterpret_cast<float*>(in.data());
        for (uint64_t i = 0; i < p.count; ++i) {
          x[i] = float(input_value(p.salt, g_rank, i));
          store_reference(GW_DTYPE_F32, ref.data(), i, p.op, p.salt, i);
        }
        float* result = p.in_place ? x : reinterpret_cast<float*>(out.data());
        gw_codec_context ctx = GW_CODEC_CONTEXT_INIT;
        ctx.seed = seed;
        ctx.step = index;
        gw_tensor ti = tensor(GW_DTYPE_F32, x, p.count), to = tensor(GW_DTYPE_F32, result, p.count);
        ok(gw_allreduce_compressed(comm, codecs[size_t(p.codec)], &ctx, &ti, &to, p.op), "gw_allreduce_compressed");
        // Small integers are exact in every lossless codec (none, and fp16/bf16 at these magnitudes).
        const std::string codec = kCodecs[p.codec];
        if (codec == "none" || codec == "fp16" || codec == "bf16") {
          expect_equal(reinterpret_cast<const unsigned char*>(result), ref.data(), p.count, 4);
        } else {
          for (uint64_t i = 0; i < p.count; ++i)
            if (!std::isfinite(result[i]) || std::fabs(result[i]) > 10.0f * float(g_size))
              fail("element " + std::to_string(i) + " is " + std::to_string(result[i]) + ", far outside the inputs' range");
        }
        check_identical(result, p.count * 4);
        break;
      }
    }
  }
};

}  // namespace

int main(int argc, char** argv) {
  init_rank_from_env();
  if (argc < 3) die("usage: soak_rank SEED COUNT [FIRST]");
  const uint64_t seed = std::strtoull(argv[1], nullptr, 10);
  const uint64_t count = std::strtoull(argv[2], nullptr, 10);
  const uint64_t first = argc > 3 ? std::strtoull(argv[3], nullptr, 10) : 0;
  gw_runtime* rt = make_runtime("");
  gw_comm* comm = make_comm(rt);
  Soak soak;
  soak.comm = comm;
  soak.seed = seed;
  for (const char* name : kCodecs) {
    gw_codec* c = nullptr;
    check(gw_codec_create(rt, name, &c), std::string("gw_codec_create ") + name);
    soak.codecs.push_back(c);
  }
  const auto start = std::chrono::steady_clock::now();
  std::map<int, uint64_t> per_kind;
  uint64_t elements = 0;
  for (uint64_t j = first; j < count; ++j) {
    soak.index = j;
    soak.plan = draw(seed, j);
    soak.run_one();
    ++per_kind[soak.plan.kind];
    elements += soak.plan.count;
    if (g_rank == 0 && (j + 1) % 1000 == 0)
      say("progress " + std::to_string(j + 1) + "/" + std::to_string(count) + " after " +
          std::to_string(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count()) + " s");
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  for (gw_codec* c : soak.codecs) check(gw_codec_destroy(c), "gw_codec_destroy");
  check(gw_comm_destroy(comm), "gw_comm_destroy");
  check(gw_runtime_destroy(rt), "gw_runtime_destroy");
  std::string kinds;
  for (const auto& [k, c] : per_kind) kinds += std::string(" ") + kKindNames[k] + "=" + std::to_string(c);
  char line[512];
  std::snprintf(line, sizeof(line), "OK rank %d: %llu collectives (seed %llu, from #%llu), %llu elements, %.1f s;%s",
                g_rank, (unsigned long long)(count - first), (unsigned long long)seed, (unsigned long long)first,
                (unsigned long long)elements, seconds, kinds.c_str());
  say(line);
  return 0;
}
