// One rank of a multi-process test, started N times by `gradwire run -n N -- mp_rank CASE`. It uses the
// C ABI only. Every check failure prints "FAIL ..." and exits 1; a case that expects an error prints
// "EXPECTED-ERROR <status> <message>" and exits 0 when it got that status (the driver then checks the
// message on every rank), else exits 1. The driver is mp_collectives_test.cpp.
#include <gradwire/gradwire.h>

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>
#include "../support/half_oracle.hpp"

namespace {

int g_rank = 0;
int g_size = 1;
// Destroyed before an expected error exits when MP_DESTROY_ON_ERROR is set (else the process exits with
// them alive, as most applications do on their first error).
gw_runtime* g_runtime = nullptr;
gw_comm* g_comm = nullptr;

[[noreturn]] void die(const std::string& what) {
  std::printf("FAIL rank %d: %s\n", g_rank, what.c_str());
  std::fflush(stdout);
  std::exit(1);
}

void check(gw_status st, const std::string& what) {
  if (st != GW_OK) die(what + ": " + gw_status_string(st) + ": " + gw_last_error());
}

// ---- element types and the serial reference ----------------------------------------------------

uint16_t to_half(float f) { return gwtest::half_from_float(f); }
float from_half(uint16_t h) { return gwtest::float_from_half(h); }
uint16_t to_bf16(float f) {  // round to nearest even; the inputs here are never NaN
  const uint32_t u = std::bit_cast<uint32_t>(f);
  return uint16_t((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}
float from_bf16(uint16_t h) { return std::bit_cast<float>(uint32_t(h) << 16); }

// Small integers, so that every partial sum is exact in every dtype and the result does not depend on
// the order of the reduction: any difference from the reference is a bug, not rounding.
double input_value(int rank, uint64_t i) { return double(int64_t((uint64_t(rank) * 7 + i * 13) % 11) - 5); }

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

// The reference result of `op` over all ranks' inputs at element i, stored in dtype `dt`.
void store_reference(gw_dtype dt, void* base, uint64_t i, gw_reduce_op op, int n) {
  double acc = input_value(0, i);
  for (int r = 1; r < n; ++r) {
    const double v = input_value(r, i);
    acc = op == GW_REDUCE_MIN ? std::min(acc, v) : op == GW_REDUCE_MAX ? std::max(acc, v) : acc + v;
  }
  if (op != GW_REDUCE_AVG) return store(dt, base, i, acc);
  switch (dt) {  // the average is the exact sum divided once, in the dtype's arithmetic
    case GW_DTYPE_F32: static_cast<float*>(base)[i] = float(acc) / float(n); break;
    case GW_DTYPE_F64: static_cast<double*>(base)[i] = acc / double(n); break;
    case GW_DTYPE_F16: static_cast<uint16_t*>(base)[i] = to_half(from_half(to_half(float(acc))) / float(n)); break;
    case GW_DTYPE_BF16: static_cast<uint16_t*>(base)[i] = to_bf16(from_bf16(to_bf16(float(acc))) / float(n)); break;
    case GW_DTYPE_I32: static_cast<int32_t*>(base)[i] = int32_t(int64_t(acc) / n); break;
    case GW_DTYPE_I64: static_cast<int64_t*>(base)[i] = int64_t(acc) / n; break;
    default: die("bad dtype");
  }
}

gw_tensor tensor(gw_dtype dt, void* data, uint64_t count) {
  gw_tensor t = GW_TENSOR_INIT;
  t.dtype = dt;
  t.data = data;
  t.count = count;
  return t;
}

uint64_t fnv1a(const void* p, size_t n) {
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < n; ++i) h = (h ^ static_cast<const unsigned char*>(p)[i]) * 1099511628211ull;
  return h;
}

// Every rank must hold the same bytes: gather their hashes and compare.
void check_identical(gw_comm* comm, const void* data, size_t bytes, const std::string& what) {
  uint64_t mine = fnv1a(data, bytes);
  std::vector<uint64_t> all(g_size);
  gw_tensor in = tensor(GW_DTYPE_I64, &mine, 1), out = tensor(GW_DTYPE_I64, all.data(), all.size());
  check(gw_allgather(comm, &in, &out), what + ": allgather of result hashes");
  for (int r = 0; r < g_size; ++r)
    if (all[r] != all[0]) die(what + ": rank " + std::to_string(r) + "'s result differs from rank 0's");
}

const gw_dtype kDtypes[] = {GW_DTYPE_F32, GW_DTYPE_F64, GW_DTYPE_F16, GW_DTYPE_BF16, GW_DTYPE_I32, GW_DTYPE_I64};
const gw_reduce_op kOps[] = {GW_REDUCE_SUM, GW_REDUCE_AVG, GW_REDUCE_MIN, GW_REDUCE_MAX};
const char* op_text(gw_reduce_op op) {
  return op == GW_REDUCE_SUM ? "sum" : op == GW_REDUCE_AVG ? "avg" : op == GW_REDUCE_MIN ? "min" : "max";
}

void test_allreduce(gw_comm* comm, gw_dtype dt, gw_reduce_op op, uint64_t count, bool in_place) {
  const size_t es = gw_dtype_size(dt);
  const std::string what = std::string("allreduce ") + op_text(op) + " " + gw_dtype_name(dt) + " count " +
                           std::to_string(count) + (in_place ? " in place" : "");
  std::vector<unsigned char> in(count * es + 1), out(count * es + 1), ref(count * es + 1);
  for (uint64_t i = 0; i < count; ++i) {
    store(dt, in.data(), i, input_value(g_rank, i));
    store_reference(dt, ref.data(), i, op, g_size);
  }
  const std::vector<unsigned char> original = in;
  gw_tensor ti = tensor(dt, in.data(), count), to = tensor(dt, in_place ? in.data() : out.data(), count);
  check(gw_allreduce(comm, &ti, &to, op), what);
  const unsigned char* result = in_place ? in.data() : out.data();
  if (std::memcmp(result, ref.data(), count * es) != 0) {
    for (uint64_t i = 0; i < count; ++i)
      if (std::memcmp(result + i * es, ref.data() + i * es, es) != 0) die(what + ": wrong value at element " + std::to_string(i));
  }
  if (!in_place && in != original) die(what + ": the input buffer was modified");
  check_identical(comm, result, count * es, what);
}

void test_reduce_scatter(gw_comm* comm, gw_dtype dt, gw_reduce_op op, uint64_t count, bool in_place) {
  const size_t es = gw_dtype_size(dt);
  const std::string what = std::string("reduce_scatter ") + op_text(op) + " " + gw_dtype_name(dt) + " count " +
                           std::to_string(count) + (in_place ? " in place" : "");
  const uint64_t total = count * g_size;
  std::vector<unsigned char> in(total * es + 1), out(count * es + 1), ref(total * es + 1);
  for (uint64_t i = 0; i < total; ++i) {
    store(dt, in.data(), i, input_value(g_rank, i));
    store_reference(dt, ref.data(), i, op, g_size);
  }
  gw_tensor ti = tensor(dt, in.data(), total), to = tensor(dt, in_place ? in.data() : out.data(), count);
  check(gw_reduce_scatter(comm, &ti, &to, op), what);
  const unsigned char* result = in_place ? in.data() : out.data();
  if (std::memcmp(result, ref.data() + g_rank * count * es, count * es) != 0) die(what + ": wrong values");
}

void test_allgather(gw_comm* comm, gw_dtype dt, uint64_t count, bool in_place, bool variable) {
  const size_t es = gw_dtype_size(dt);
  std::vector<uint64_t> counts(g_size), offsets(g_size);
  uint64_t total = 0;
  for (int r = 0; r < g_size; ++r) {
    counts[r] = variable ? count + uint64_t(r) * 3 : count;
    offsets[r] = total;
    total += counts[r];
  }
  const std::string what = std::string(variable ? "allgatherv " : "allgather ") + gw_dtype_name(dt) + " count " +
                           std::to_string(count) + (in_place ? " in place" : "");
  std::vector<unsigned char> mine(counts[g_rank] * es + 1), out(total * es + 1), ref(total * es + 1);
  for (int r = 0; r < g_size; ++r)
    for (uint64_t i = 0; i < counts[r]; ++i) store(dt, ref.data(), offsets[r] + i, input_value(r, i));
  for (uint64_t i = 0; i < counts[g_rank]; ++i) store(dt, mine.data(), i, input_value(g_rank, i));
  if (in_place) std::memcpy(out.data() + offsets[g_rank] * es, mine.data(), counts[g_rank] * es);
  gw_tensor ti = tensor(dt, in_place ? out.data() : mine.data(), counts[g_rank]), to = tensor(dt, out.data(), total);
  if (in_place) ti.data = out.data() + offsets[g_rank] * es;
  check(variable ? gw_allgatherv(comm, &ti, &to, counts.data()) : gw_allgather(comm, &ti, &to), what);
  if (std::memcmp(out.data(), ref.data(), total * es) != 0) die(what + ": wrong values");
}

void test_broadcast(gw_comm* comm, uint64_t count, uint32_t root) {
  const std::string what = "broadcast root " + std::to_string(root) + " count " + std::to_string(count);
  std::vector<float> buf(count + 1, -1.0f);
  if (uint32_t(g_rank) == root)
    for (uint64_t i = 0; i < count; ++i) buf[i] = float(input_value(int(root), i));
  gw_tensor t = tensor(GW_DTYPE_F32, buf.data(), count);
  check(gw_broadcast(comm, &t, root), what);
  for (uint64_t i = 0; i < count; ++i)
    if (buf[i] != float(input_value(int(root), i))) die(what + ": wrong value at " + std::to_string(i));
}

std::vector<uint64_t> parse_sizes(const char* text) {
  std::vector<uint64_t> sizes;
  for (const char* p = text; *p;) {
    char* end = nullptr;
    sizes.push_back(std::strtoull(p, &end, 10));
    p = *end ? end + 1 : end;
  }
  return sizes;
}

// ---- cases ----------------------------------------------------------------------------------

void case_collectives(gw_comm* comm, const std::vector<uint64_t>& sizes, bool all_ops) {
  for (uint64_t count : sizes) {
    for (gw_dtype dt : kDtypes) {
      for (gw_reduce_op op : kOps) {
        if (!all_ops && op != GW_REDUCE_SUM && op != GW_REDUCE_MAX) continue;
        test_allreduce(comm, dt, op, count, false);
        test_allreduce(comm, dt, op, count, true);
      }
      // count is per rank for reduce-scatter; large sizes are split so the input stays `count` long.
      const uint64_t rs_count = count > 4096 ? count / uint64_t(g_size) : count;
      test_reduce_scatter(comm, dt, all_ops ? GW_REDUCE_AVG : GW_REDUCE_SUM, rs_count, false);
      test_reduce_scatter(comm, dt, GW_REDUCE_SUM, rs_count, true);
      test_allgather(comm, dt, count, false, false);
    }
    test_allgather(comm, GW_DTYPE_F32, count, true, false);
    test_allgather(comm, GW_DTYPE_I64, count, false, true);
    test_allgather(comm, GW_DTYPE_I64, count, true, true);
    for (int root = 0; root < g_size; ++root) test_broadcast(comm, count, uint32_t(root));
    check(gw_barrier(comm), "barrier");
  }
}

void case_large(gw_comm* comm, uint64_t bytes) {
  test_allreduce(comm, GW_DTYPE_F32, GW_REDUCE_SUM, bytes / 4, true);
  test_allreduce(comm, GW_DTYPE_BF16, GW_REDUCE_AVG, bytes / 2, false);
  test_allgather(comm, GW_DTYPE_F32, bytes / 4 / g_size, false, false);
}

// Many nonblocking collectives and point-to-point messages in flight at once, completed out of order.
void case_many(gw_comm* comm) {
  constexpr int kRequests = 48;
  std::vector<std::vector<float>> bufs(kRequests);
  std::vector<gw_request*> reqs(kRequests, nullptr);
  for (int k = 0; k < kRequests; ++k) {
    const uint64_t count = 1 + uint64_t(k) * 997;  // small ones and ring-sized ones
    bufs[k].resize(count);
    for (uint64_t i = 0; i < count; ++i) bufs[k][i] = float(input_value(g_rank, i + k));
    gw_tensor t = tensor(GW_DTYPE_F32, bufs[k].data(), count);
    check(gw_allreduce_start(comm, &t, &t, GW_REDUCE_SUM, &reqs[k]), "allreduce_start " + std::to_string(k));
  }
  const int right = (g_rank + 1) % g_size, left = (g_rank + g_size - 1) % g_size;
  std::vector<int64_t> sent(64), got(64);
  for (int i = 0; i < 64; ++i) sent[i] = g_rank * 1000 + i;
  gw_tensor ts = tensor(GW_DTYPE_I64, sent.data(), sent.size()), tr = tensor(GW_DTYPE_I64, got.data(), got.size());
  gw_request *send = nullptr, *recv = nullptr;
  check(gw_recv_start(comm, &tr, uint32_t(left), 7, &recv), "recv_start");
  check(gw_send_start(comm, &ts, uint32_t(right), 7, &send), "send_start");
  for (int k = kRequests - 1; k >= 0; --k) {
    check(gw_request_wait(reqs[k], -1), "wait " + std::to_string(k));
    check(gw_request_free(reqs[k]), "free");
    for (uint64_t i = 0; i < bufs[k].size(); ++i) {
      double ref = 0;
      for (int r = 0; r < g_size; ++r) ref += input_value(r, i + k);
      if (bufs[k][i] != float(ref)) die("many: request " + std::to_string(k) + " wrong at " + std::to_string(i));
    }
  }
  check(gw_request_wait(send, -1), "send wait");
  check(gw_request_wait(recv, -1), "recv wait");
  gw_request_free(send);
  gw_request_free(recv);
  for (int i = 0; i < 64; ++i)
    if (got[i] != left * 1000 + i) die("p2p: wrong value");
}

// A case that must fail with `expected` on every rank.
[[noreturn]] void expect_error(gw_status st, gw_status expected, const char* doing) {
  if (st == expected) {
    std::printf("EXPECTED-ERROR %s %s\n", gw_status_string(st), gw_last_error());
    std::fflush(stdout);
    if (std::getenv("MP_DESTROY_ON_ERROR") != nullptr) {
      if (g_comm != nullptr) check(gw_comm_destroy(g_comm), "gw_comm_destroy after the error");
      if (g_runtime != nullptr) check(gw_runtime_destroy(g_runtime), "gw_runtime_destroy after the error");
      std::printf("DESTROYED\n");
      std::fflush(stdout);
    }
    std::exit(0);
  }
  die(std::string(doing) + ": expected " + gw_status_string(expected) + ", got " + gw_status_string(st) + ": " +
      gw_last_error());
}

void case_mismatch(gw_comm* comm, const std::string& what) {
  std::vector<float> buf(1000, 1.0f);
  gw_tensor t = tensor(GW_DTYPE_F32, buf.data(), buf.size());
  const bool odd = g_rank == g_size - 1;
  if (what == "count" && odd) t.count = 999;
  if (what == "count-large" && odd) t.count = 10;  // another algorithm on the odd rank
  // Rank 0 above [collectives] ring_threshold_bytes (the default 64 KiB: the ring), the others below it
  // (recursive doubling): their messages never match, so only the stuck notices can tell the difference.
  std::vector<float> ring_sized;
  if (what == "algorithm" && g_rank == 0) {
    ring_sized.assign(32768, 1.0f);
    t = tensor(GW_DTYPE_F32, ring_sized.data(), ring_sized.size());
  }
  if (what == "dtype" && odd) t.dtype = GW_DTYPE_I32;
  gw_reduce_op op = GW_REDUCE_SUM;
  if (what == "op" && odd) op = GW_REDUCE_MAX;
  gw_status st;
  if (what == "collective") {
    // reduce_scatter on the last rank, allgather on the others: the same ring, different headers.
    const uint64_t per_rank = buf.size() / g_size;
    gw_tensor whole = tensor(GW_DTYPE_F32, buf.data(), per_rank * g_size);
    gw_tensor part = tensor(GW_DTYPE_F32, buf.data(), per_rank);
    st = odd ? gw_reduce_scatter(comm, &whole, &part, GW_REDUCE_SUM) : gw_allgather(comm, &part, &whole);
  } else {
    st = gw_allreduce(comm, &t, &t, op);
  }
  expect_error(st, GW_ERR_MISMATCH, ("mismatch " + what).c_str());
}

// Ranks whose synchronizers call different collectives at the same collective numbers inside
// gw_sync_step: the last rank's [codec] is "none" (a dense allreduce per bucket), the others' int8 (a
// compressed one); the registrations agree, so gw_sync_finalize passes. Every rank must return
// GW_ERR_MISMATCH naming both calls, also in elastic mode (a mismatch is no membership change).
void case_mismatch_sync(gw_comm* comm) {
  gw_sync_options o = GW_SYNC_OPTIONS_INIT;
  // The synchronizer's own runtime: the communicator's must be alike on every rank (gw_comm_create compares).
  const std::string text = std::string("[codec]\nname = \"") + (g_rank == g_size - 1 ? "none" : "int8") +
                           "\"\n[schedule]\nname = \"every_step\"\n";
  gw_runtime_options ro = GW_RUNTIME_OPTIONS_INIT;
  ro.config_text = text.c_str();
  gw_runtime* rt = nullptr;
  check(gw_runtime_create(&ro, &rt), "gw_runtime_create for the synchronizer");
  o.runtime = rt;
  gw_sync* sync = nullptr;
  check(gw_sync_create(comm, &o, &sync), "gw_sync_create");
  const uint64_t counts[2] = {uint64_t(1) << 18, 1000};
  std::vector<float> grads[2], params[2];
  for (int t = 0; t < 2; ++t) {
    grads[t].assign(counts[t], 0.25f * float(g_rank + 1));
    params[t].assign(counts[t], 1.0f);
    gw_tensor g = tensor(GW_DTYPE_F32, grads[t].data(), counts[t]), p = tensor(GW_DTYPE_F32, params[t].data(), counts[t]);
    check(gw_sync_register(sync, t == 0 ? "w" : "b", &g, &p), "gw_sync_register");
  }
  check(gw_sync_finalize(sync), "gw_sync_finalize");
  for (int step = 0; step < 3; ++step) {
    uint32_t flags = 0;
    const gw_status st = gw_sync_step(sync, &flags);
    if (st == GW_OK) continue;
    expect_error(st, GW_ERR_MISMATCH, "gw_sync_step with another codec on the last rank");
  }
  die("gw_sync_step with another codec on the last rank succeeded 3 times");
}

// Rank 0 reaches the first allreduce MP_LATE_S seconds late: the others pass their deadline, send it
// stuck notices and wait the grace period, in which rank 0 arrives. The stuck notices must not fail rank
// 0, and its notice receives must still work: the mismatch that follows reaches it only as a failure
// notice (its recursive-doubling partner never sees the odd rank's header).
void case_late_rank(gw_comm* comm) {
  std::vector<float> buf(1000);
  for (size_t i = 0; i < buf.size(); ++i) buf[i] = float(input_value(g_rank, i));
  if (g_rank == 0) usleep(useconds_t(std::atof(std::getenv("MP_LATE_S") ? std::getenv("MP_LATE_S") : "4") * 1e6));
  gw_tensor t = tensor(GW_DTYPE_F32, buf.data(), buf.size());
  check(gw_allreduce(comm, &t, &t, GW_REDUCE_SUM), "allreduce with a late rank 0");
  for (size_t i = 0; i < buf.size(); ++i) {
    double ref = 0;
    for (int r = 0; r < g_size; ++r) ref += input_value(r, i);
    if (buf[i] != float(ref)) die("late-rank: wrong value at " + std::to_string(i));
  }
  case_mismatch(comm, "count");
}

void case_kill(gw_comm* comm) {
  std::vector<float> buf(4 << 20, 1.0f);
  gw_tensor t = tensor(GW_DTYPE_F32, buf.data(), buf.size());
  // Rank 1 can finish the warm-up and die while its last message is still on its way to a peer: that
  // peer then sees the death already in the warm-up, which is the outcome under test too.
  if (const gw_status st = gw_allreduce(comm, &t, &t, GW_REDUCE_SUM); st != GW_OK) {
    if (g_rank == 1) check(st, "warm-up allreduce");
    std::printf("EXPECTED-ERROR %s %s\n", gw_status_string(st), gw_last_error());
    std::fflush(stdout);
    std::exit(0);
  }
  if (g_rank == 1) {
    gw_request* r = nullptr;
    check(gw_allreduce_start(comm, &t, &t, GW_REDUCE_SUM, &r), "allreduce_start");
    gw_request_test(r);
    raise(SIGKILL);  // dies in the middle of the collective
  }
  for (int i = 0; i < 1000; ++i) {
    const gw_status st = gw_allreduce(comm, &t, &t, GW_REDUCE_SUM);
    if (st != GW_OK) {
      std::printf("EXPECTED-ERROR %s %s\n", gw_status_string(st), gw_last_error());
      std::fflush(stdout);
      std::exit(0);
    }
  }
  die("a rank was killed but the collectives went on");
}

// Several communicators from the same launcher variables: a second one while the first lives, a third
// right after one was destroyed, each carrying its own collectives (interleaved, so a message of one
// can never complete a collective of another).
void case_communicators(gw_runtime* rt, gw_comm* first) {
  gw_comm_options co = GW_COMM_OPTIONS_INIT;
  gw_comm* second = nullptr;
  check(gw_comm_create(rt, &co, &second), "gw_comm_create (second, while the first lives)");
  if (gw_comm_rank(second) != uint32_t(g_rank) || gw_comm_size(second) != uint32_t(g_size))
    die("the second communicator has another rank or size");
  for (int round = 0; round < 3; ++round) {
    test_allreduce(first, GW_DTYPE_F32, GW_REDUCE_SUM, 1000 + round, false);
    test_allreduce(second, GW_DTYPE_F64, GW_REDUCE_MAX, 70000 + round, true);
  }
  check(gw_comm_destroy(second), "gw_comm_destroy (second)");
  gw_comm* third = nullptr;
  check(gw_comm_create(rt, &co, &third), "gw_comm_create (third, right after the second was destroyed)");
  test_allreduce(third, GW_DTYPE_I32, GW_REDUCE_SUM, 4099, false);
  test_allreduce(first, GW_DTYPE_F32, GW_REDUCE_SUM, 7, true);
  check(gw_comm_destroy(third), "gw_comm_destroy (third)");
}

// ---- an application's own rendezvous: gw_comm_options.allgather over files ---------------------
//
// Call k of rank r writes its bytes to DIR/call<k>.rank<r> (a temporary name, then rename, so a reader
// never sees half a file) and waits until every rank's file of call k is there, at most MP_TIMEOUT_S
// seconds. A rank told to fail call k returns GW_ERR_TRANSPORT from it instead; "reverse" places the
// ranks' bytes in reverse order (a broken callback the runtime must catch).
struct FileAllgather {
  std::string dir;
  int calls = 0;
  int fail_call = 0;  // 1-based; 0: never
  bool reverse = false;  // a broken callback: every rank's bytes at index world_size - 1 - rank
  double timeout_s = 10;
};

std::string read_file(const std::string& path, bool* found) {
  FILE* f = std::fopen(path.c_str(), "rb");
  *found = f != nullptr;
  std::string data;
  if (!f) return data;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), f)) > 0) data.append(buf, n);
  std::fclose(f);
  return data;
}

gw_status file_allgather(void* user, const void* in, uint64_t bytes, void* out) {
  auto& ag = *static_cast<FileAllgather*>(user);
  const int call = ++ag.calls;
  if (call == ag.fail_call) {
    std::printf("allgather-callback: call %d fails on purpose on rank %d\n", call, g_rank);
    std::fflush(stdout);
    return GW_ERR_TRANSPORT;
  }
  const std::string mine = ag.dir + "/call" + std::to_string(call) + ".rank" + std::to_string(g_rank);
  FILE* f = std::fopen((mine + ".tmp").c_str(), "wb");
  if (!f || std::fwrite(in, 1, bytes, f) != bytes || std::fclose(f) != 0 || std::rename((mine + ".tmp").c_str(), mine.c_str()) != 0)
    die("allgather-callback: cannot write " + mine);
  std::vector<bool> have(g_size, false);
  const auto start = std::chrono::steady_clock::now();
  for (int left = g_size;;) {
    for (int r = 0; r < g_size; ++r) {
      if (have[r]) continue;
      bool found = false;
      const std::string data = read_file(ag.dir + "/call" + std::to_string(call) + ".rank" + std::to_string(r), &found);
      if (!found) continue;
      if (data.size() != bytes)
        die("allgather-callback: rank " + std::to_string(r) + " wrote " + std::to_string(data.size()) + " bytes in call " +
            std::to_string(call) + ", this rank " + std::to_string(bytes));
      const int at = ag.reverse ? g_size - 1 - r : r;
      std::memcpy(static_cast<char*>(out) + size_t(at) * bytes, data.data(), bytes);
      have[r] = true;
      --left;
    }
    if (left == 0) return GW_OK;
    if (std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() > ag.timeout_s) {
      std::string missing;
      for (int r = 0; r < g_size; ++r)
        if (!have[r]) missing += (missing.empty() ? "" : ", ") + std::to_string(r);
      std::printf("allgather-callback: call %d: no record from rank %s within %g s\n", call, missing.c_str(), ag.timeout_s);
      std::fflush(stdout);
      return GW_ERR_TIMEOUT;
    }
    usleep(10000);
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: mp_rank CASE [ARGS]\n");
    return 2;
  }
  const std::string c = argv[1];
  if (c == "print-argv") {  // for the `gradwire run` tests: exactly the arguments it was given
    std::string line = "argv:";
    for (int i = 2; i < argc; ++i) line += std::string(" [") + argv[i] + "]";
    std::printf("%s\n", line.c_str());
    return 0;
  }
  // Before the communicator exists the rank comes from whichever launcher convention is in use.
  for (const char* name : {"GW_RANK", "RANK", "OMPI_COMM_WORLD_RANK", "SLURM_PROCID"})
    if (std::getenv(name)) {
      g_rank = std::atoi(std::getenv(name));
      break;
    }
  for (const char* name : {"GW_WORLD_SIZE", "WORLD_SIZE", "OMPI_COMM_WORLD_SIZE", "SLURM_NTASKS"})
    if (std::getenv(name)) {
      g_size = std::atoi(std::getenv(name));
      break;
    }
  const bool missing_rank = c == "missing-rank" || c == "missing-rank-stalled";
  if (missing_rank && g_rank == g_size - 1) return 0;  // this rank never joins
  if (c == "missing-rank-stalled" && g_rank == 1) {
    // Rank 1 is stopped (SIGSTOP) from MP_STALL_AT_S after its start for MP_STALL_S seconds, across the
    // moment the root gives up and replies: it must still read the root's verdict when it resumes.
    const double at = std::atof(std::getenv("MP_STALL_AT_S") ? std::getenv("MP_STALL_AT_S") : "1");
    const double length = std::atof(std::getenv("MP_STALL_S") ? std::getenv("MP_STALL_S") : "4");
    const pid_t me = getpid();
    if (fork() == 0) {
      usleep(useconds_t(at * 1e6));
      kill(me, SIGSTOP);
      usleep(useconds_t(length * 1e6));
      kill(me, SIGCONT);
      _exit(0);
    }
  }
  // allgather-callback DIR RANK SIZE [FAILING_RANK:CALL | reverse]: started by the test itself, no launcher
  // variables; rank and size go to gw_comm_options, the rendezvous through files in DIR.
  FileAllgather file_ag;
  if (c == "allgather-callback") {
    if (argc < 5) die("usage: mp_rank allgather-callback DIR RANK SIZE [FAILING_RANK:CALL | reverse]");
    file_ag.dir = argv[2];
    g_rank = std::atoi(argv[3]);
    g_size = std::atoi(argv[4]);
    if (argc > 5 && std::string(argv[5]) == "reverse") {
      file_ag.reverse = true;
    } else if (argc > 5) {
      const char* colon = std::strchr(argv[5], ':');
      if (colon == nullptr) die("allgather-callback: the failing call is FAILING_RANK:CALL");
      if (std::atoi(argv[5]) == g_rank) file_ag.fail_call = std::atoi(colon + 1);
    }
    if (const char* t = std::getenv("MP_TIMEOUT_S")) file_ag.timeout_s = std::atof(t);
  }

  // Cases that make the ranks differ in setup get a per-rank config or plugin path.
  std::string config = "[runtime]\ntimeout_s = " + std::string(std::getenv("MP_TIMEOUT_S") ? std::getenv("MP_TIMEOUT_S") : "60") + "\n";
  if (c == "mismatch-config" && g_rank == g_size - 1) config += "[collectives]\nring_threshold_bytes = 4096\n";
  else if (const char* t = std::getenv("MP_RING_THRESHOLD")) config += std::string("[collectives]\nring_threshold_bytes = ") + t + "\n";
  if (c.rfind("mismatch-sync", 0) == 0)
    config += c == "mismatch-sync-elastic" ? "[elastic]\nenabled = true\n" : "";
  std::vector<const char*> paths;
  std::string extra_path;
  if (c == "mismatch-version") {
    extra_path = std::string(argv[2]) + (g_rank == g_size - 1 ? "/v2" : "/v1");
    paths.push_back(extra_path.c_str());
  }
  gw_runtime_options ro = GW_RUNTIME_OPTIONS_INIT;
  ro.config_text = config.c_str();
  ro.plugin_paths = paths.data();
  ro.num_plugin_paths = uint32_t(paths.size());
  gw_runtime* rt = nullptr;
  check(gw_runtime_create(&ro, &rt), "gw_runtime_create");
  gw_comm_options co = GW_COMM_OPTIONS_INIT;
  if (const char* t = std::getenv("MP_OPTIONS_TIMEOUT_S")) co.timeout_s = std::atof(t);
  if (c == "allgather-callback") {
    co.rank = g_rank;
    co.world_size = g_size;
    co.allgather = file_allgather;
    co.allgather_user = &file_ag;
  }
  gw_comm* comm = nullptr;
  const gw_status created = gw_comm_create(rt, &co, &comm);
  if (c == "allgather-callback" && file_ag.reverse) expect_error(created, GW_ERR_INVALID_ARGUMENT, "gw_comm_create");
  if (c == "allgather-callback" && argc > 5)
    expect_error(created, std::atoi(argv[5]) == g_rank ? GW_ERR_TRANSPORT : GW_ERR_TIMEOUT, "gw_comm_create");
  if (c == "mismatch-config" || c == "mismatch-version") expect_error(created, GW_ERR_MISMATCH, "gw_comm_create");
  if (c == "config-error") expect_error(created, GW_ERR_CONFIG, "gw_comm_create");
  if (missing_rank) expect_error(created, GW_ERR_TIMEOUT, "gw_comm_create");
  check(created, "gw_comm_create");
  g_runtime = rt;
  g_comm = comm;
  if (gw_comm_rank(comm) != uint32_t(g_rank) || gw_comm_size(comm) != uint32_t(g_size))
    die("rank/size differ from the launcher's variables");

  if (c == "collectives") case_collectives(comm, parse_sizes(argc > 2 ? argv[2] : "0,1,7"), true);
  else if (c == "collectives-sum-max") case_collectives(comm, parse_sizes(argc > 2 ? argv[2] : "1048579"), false);
  else if (c == "large") case_large(comm, argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 64ull << 20);
  else if (c == "many") case_many(comm);
  else if (c.rfind("mismatch-sync", 0) == 0) case_mismatch_sync(comm);
  else if (c.rfind("mismatch-", 0) == 0) case_mismatch(comm, c.substr(9));
  else if (c == "late-rank") case_late_rank(comm);
  else if (c == "allgather-callback") {
    if (file_ag.calls != 2) die("the allgather callback was called " + std::to_string(file_ag.calls) + " times, not twice");
    test_allreduce(comm, GW_DTYPE_F32, GW_REDUCE_SUM, 1000, false);
    test_allreduce(comm, GW_DTYPE_F64, GW_REDUCE_AVG, 100003, true);
  }
  else if (c == "kill") case_kill(comm);
  else if (c == "communicators") case_communicators(rt, comm);
  else if (c == "fail-rank") {
    check(gw_barrier(comm), "barrier");
    if (g_rank == 1) return 3;
    sleep(60);  // the launcher must stop this rank
  } else die("unknown case " + c);

  check(gw_comm_destroy(comm), "gw_comm_destroy");
  check(gw_runtime_destroy(rt), "gw_runtime_destroy");
  std::printf("OK rank %d\n", g_rank);
  return 0;
}
