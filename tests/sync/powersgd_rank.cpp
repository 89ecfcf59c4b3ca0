// One rank of the powersgd tests (codec rounds, ABI 1.4), started by `gradwire run -n N -- powersgd_rank
// CASE`: the compressed allreduce with tensor shapes in the codec context and through gw_sync with
// gw_sync_register_shape. Checks that every rank ends bit-identical, that a sum of rank-1 matrices comes
// back exactly (only with the orthogonalisation between the rounds does it), that tensors without a
// shape or too thin travel exactly, error feedback, warm start and the checkpoint round trip, that
// buckets batched into one collective per round ([bucket] rounds_batch) give each bucket its own bits, and
// that bad input is refused on every rank. Prints "OK rank r" at the end; the driver is sync_test.cpp.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "common.hpp"

using namespace synctest;

namespace {

// The test buffer: a 96 x 64 matrix, a vector of 37, a 3 x 200 matrix (too thin for rank 4), a 40 x 50 matrix.
const std::vector<gw_tensor_shape> kShapes = {{0, 96, 64}, {96 * 64 + 37, 3, 200}, {96 * 64 + 37 + 600, 40, 50}};
constexpr uint64_t kCount = 96 * 64 + 37 + 600 + 2000;

// Rank r's gradient at `step`: each matrix a_r b^T (the same b on every rank, so the sum is rank 1),
// `noise` times a full-rank part; small integers elsewhere (their sums are exact).
std::vector<float> gradient(int rank, uint64_t step, float noise) {
  std::vector<float> x(kCount);
  for (uint64_t i = 0; i < kCount; ++i) x[i] = small_int(step, rank, i);
  for (const gw_tensor_shape& s : kShapes) {
    if (s.rows < 8) continue;
    for (uint64_t i = 0; i < s.rows; ++i)
      for (uint64_t j = 0; j < s.cols; ++j)
        x[s.offset + i * s.cols + j] = uniform(step * 7 + 1, rank, i) * uniform(step * 7 + 2, 0, j) +
                                       noise * uniform(step * 7 + 3, rank, i * s.cols + j);
  }
  return x;
}

std::vector<float> exact_sum(uint64_t step, float noise) {
  std::vector<double> s(kCount, 0.0);
  for (int r = 0; r < g_size; ++r) {
    const auto x = gradient(r, step, noise);
    for (uint64_t i = 0; i < kCount; ++i) s[i] += x[i];
  }
  return std::vector<float>(s.begin(), s.end());
}

double rel_error(const float* a, const float* b, uint64_t n) {
  double d = 0, t = 0;
  for (uint64_t i = 0; i < n; ++i) d += double(a[i] - b[i]) * (a[i] - b[i]), t += double(b[i]) * b[i];
  return std::sqrt(d / std::max(t, 1e-30));
}

bool is_matrix_element(uint64_t i) {
  for (const gw_tensor_shape& s : kShapes)
    if (s.rows >= 8 && i >= s.offset && i < s.offset + s.rows * s.cols) return true;
  return false;
}

gw_codec_context context(uint64_t step, uint64_t buffer) {
  gw_codec_context ctx = GW_CODEC_CONTEXT_INIT;
  ctx.seed = 42;
  ctx.step = step;
  ctx.buffer_id = buffer;
  ctx.shapes = kShapes.data();
  ctx.num_shapes = uint32_t(kShapes.size());
  return ctx;
}

std::vector<float> allreduce(gw_comm* comm, gw_codec* codec, uint64_t step, float noise, gw_reduce_op op = GW_REDUCE_SUM) {
  std::vector<float> x = gradient(g_rank, step, noise);
  gw_tensor t = f32(x.data(), x.size());
  const gw_codec_context ctx = context(step, 7);
  check(gw_allreduce_compressed(comm, codec, &ctx, &t, &t, op), "powersgd allreduce, step " + std::to_string(step));
  check_identical(comm, x.data(), 4 * x.size(), "step " + std::to_string(step));
  return x;
}

// The exact parts (the unshaped vector, the thin matrix) are exact sums (unless the vectors travel as int8);
// the rank-1 matrices come back within float rounding (the error feedback of earlier steps adds its own).
void check_low_rank(const std::vector<float>& got, uint64_t step, double tolerance, const std::string& what,
                    bool exact_parts = true) {
  const auto want = exact_sum(step, 0.0f);
  for (uint64_t i = 0; i < kCount; ++i)
    if (exact_parts && !is_matrix_element(i) && got[i] != want[i])
      die(what + ": element " + std::to_string(i) + " travels exactly but is " + std::to_string(got[i]) + ", not " +
          std::to_string(want[i]));
  const double e = rel_error(got.data(), want.data(), kCount);
  if (!(e < tolerance)) die(what + ": a sum of rank-1 matrices came back with relative error " + std::to_string(e));
}

// A synchronizer over the test buffer's tensors (registered in place in `grads`), each matrix with its
// shape, over `comm` with `rt`'s configuration.
gw_sync* make_sync(gw_runtime* rt, gw_comm* comm, std::vector<float>& grads) {
  gw_sync_options so = GW_SYNC_OPTIONS_INIT;
  so.runtime = rt;
  gw_sync* sync = nullptr;
  check(gw_sync_create(comm, &so, &sync), "gw_sync_create");
  grads.assign(kCount, 0.0f);
  uint64_t at = 0;
  int k = 0;
  for (const gw_tensor_shape& s : kShapes) {
    if (s.offset > at) {
      gw_tensor v = f32(grads.data() + at, s.offset - at);
      check(gw_sync_register(sync, ("vector" + std::to_string(k)).c_str(), &v, nullptr), "register vector");
    }
    gw_tensor m = f32(grads.data() + s.offset, s.rows * s.cols);
    const std::string name = "matrix" + std::to_string(k++);
    check(gw_sync_register(sync, name.c_str(), &m, nullptr), "register matrix");
    const int64_t dims[3] = {int64_t(s.rows), int64_t(s.cols), 1};
    check(gw_sync_register_shape(sync, name.c_str(), 3, dims), "register shape");
    at = s.offset + s.rows * s.cols;
  }
  gw_tensor tail = f32(grads.data() + at, kCount - at);
  check(gw_sync_register(sync, "tail", &tail, nullptr), "register tail");
  check(gw_sync_finalize(sync), "gw_sync_finalize");
  return sync;
}

}  // namespace

int main(int argc, char** argv) {
  init_rank_from_env();
  const std::string which = argc > 1 ? argv[1] : "identical";
  std::string toml = "[codec.powersgd]\nrank = 2\n";
  if (which == "int8") toml = "[codec.powersgd]\nrank = 2\nfactor_format = \"int8\"\n";
  if (which == "int8-noef") toml = "[codec.powersgd]\nrank = 2\nfactor_format = \"int8\"\nresidual_feedback = false\n";
  if (which == "no-ef") toml = "[codec.powersgd]\nrank = 1\nresidual_feedback = false\n";
  if (which == "ef") toml = "[codec.powersgd]\nrank = 1\n";
  if (which == "sync") toml += "[codec]\nname = \"powersgd\"\n[bucket]\nbytes = 16384\n";
  // Three buckets (a 96 x 64 matrix; a vector and a thin matrix, sent exactly in one round; a 40 x 50
  // matrix), batched as [bucket] rounds_batch says (the case's second word; default 0: all in one batch).
  const std::string batching = argc > 2 ? argv[2] : "0";
  if (which == "batched")
    toml = "[codec]\nname = \"powersgd\"\n[codec.powersgd]\nrank = 2\n[bucket]\nbytes = 8192\n";
  gw_runtime* rt = make_runtime(toml);
  gw_comm* comm = make_comm(rt);
  gw_codec* codec = nullptr;
  check(gw_codec_create(rt, "powersgd", &codec), "gw_codec_create(powersgd)");

  if (which == "identical" || which == "int8" || which == "int8-noef") {
    // Every rank the same bits; the rank-1 sums exact (from the first call: P spans the sum's columns).
    const double tolerance = which != "identical" ? 0.1 : 1e-3;
    // With int8 factors and error feedback, each rank's residual holds what its own M has outside the
    // common P (the ranks' differences, which cancel in the sum) and int8 rounds that again: after the
    // first step the output carries those rounding errors on purpose; checked at step 0, identical always.
    for (uint64_t step = 0; step < 4; ++step) {
      const auto got = allreduce(comm, codec, step, 0.0f);
      if (which != "int8" || step == 0)
        check_low_rank(got, step, tolerance, which + " step " + std::to_string(step), which == "identical");
    }
    // Full-rank input is approximated (not exact): the codec compressed the shaped matrices.
    const auto got = allreduce(comm, codec, 9, 1.0f);
    const auto want = exact_sum(9, 1.0f);
    if (rel_error(got.data(), want.data(), kCount) < 1e-3) die("full-rank matrices came back exactly: nothing was compressed");
  } else if (which == "avg") {
    const auto got = allreduce(comm, codec, 0, 0.0f, GW_REDUCE_AVG);
    auto want = exact_sum(0, 0.0f);
    for (float& v : want) v /= float(g_size);
    if (!(rel_error(got.data(), want.data(), kCount) < 1e-3)) die("avg: not the sum divided by the ranks");
  } else if (which == "ef" || which == "no-ef") {
    // The same full-rank gradient every step: with error feedback the mean of the outputs approaches the
    // exact sum (what the rank-1 approximation dropped is sent later); without, it stays one rank-1 answer.
    const int steps = 40;
    std::vector<double> mean(kCount, 0.0);
    for (int s = 0; s < steps; ++s) {
      std::vector<float> x = gradient(g_rank, 5, 1.0f);
      gw_tensor t = f32(x.data(), x.size());
      const gw_codec_context ctx = context(uint64_t(s), 3);
      check(gw_allreduce_compressed(comm, codec, &ctx, &t, &t, GW_REDUCE_SUM), "ef step");
      for (uint64_t i = 0; i < kCount; ++i) mean[i] += x[i] / double(steps);
    }
    const auto want = exact_sum(5, 1.0f);
    const std::vector<float> m(mean.begin(), mean.end());
    const double e = rel_error(m.data(), want.data(), kCount);
    std::printf("mean-error %s %.4f\n", which.c_str(), e);
    if (which == "ef" && !(e < 0.45)) die("with error feedback the mean output is " + std::to_string(e) + " off the sum");
    if (which == "no-ef" && !(e > 0.6)) die("without error feedback the mean output is only " + std::to_string(e) + " off");
  } else if (which == "checkpoint") {
    // Warm start and residuals saved after step 2: steps 3 and 4 give the same bits again after a load.
    for (uint64_t s = 0; s < 3; ++s) allreduce(comm, codec, s, 1.0f);
    uint64_t size = 0;
    check(gw_codec_save_state(codec, nullptr, 0, &size), "state size");
    std::vector<unsigned char> blob(size);
    check(gw_codec_save_state(codec, blob.data(), blob.size(), &size), "save state");
    const auto a3 = allreduce(comm, codec, 3, 1.0f), a4 = allreduce(comm, codec, 4, 1.0f);
    gw_codec* fresh = nullptr;
    check(gw_codec_create(rt, "powersgd", &fresh), "second codec");
    check(gw_codec_load_state(fresh, blob.data(), blob.size()), "load state");
    const auto b3 = allreduce(comm, fresh, 3, 1.0f), b4 = allreduce(comm, fresh, 4, 1.0f);
    if (std::memcmp(a3.data(), b3.data(), 4 * kCount) || std::memcmp(a4.data(), b4.data(), 4 * kCount))
      die("after loading the saved state the next steps differ");
    // Another state (no warm start, no residual) gives other bits: the state is what made them equal.
    gw_codec* cold = nullptr;
    check(gw_codec_create(rt, "powersgd", &cold), "third codec");
    if (std::memcmp(allreduce(comm, cold, 3, 1.0f).data(), a3.data(), 4 * kCount) == 0)
      die("a codec without the saved state gives the same bits: the state was not used");
    blob[blob.size() / 2] ^= 1;
    const gw_status st = gw_codec_load_state(fresh, blob.data(), blob.size());
    if (st != GW_ERR_CORRUPT) die(std::string("a damaged state loaded with ") + gw_status_string(st));
    gw_codec_destroy(cold);
    gw_codec_destroy(fresh);
  } else if (which == "sync") {
    // Through gw_sync: shapes registered per tensor reach the codec (the rank-1 matrices come back, the
    // full-rank step is approximated, and far fewer bytes travel than the f32 values), and a checkpoint
    // continues bit for bit.
    const auto sync_once = [&](gw_sync* sync, std::vector<float>& grads, uint64_t step, float noise) {
      const std::vector<float> g = gradient(g_rank, step, noise);
      std::copy(g.begin(), g.end(), grads.begin());  // in place: the synchronizer holds the buffer
      check(gw_sync_step(sync, nullptr), "gw_sync_step");
      check_identical(comm, grads.data(), 4 * grads.size(), "sync step " + std::to_string(step));
    };
    const auto make = [&](std::vector<float>& grads) { return make_sync(rt, comm, grads); };
    std::vector<float> grads;
    gw_sync* sync = make(grads);
    uint32_t buckets = 0;
    check(gw_sync_bucket_count(sync, &buckets), "bucket count");
    if (buckets < 2) die("expected several buckets");
    for (uint64_t step = 0; step < 3; ++step) {
      sync_once(sync, grads, step, 0.0f);
      auto want = exact_sum(step, 0.0f);
      for (float& v : want) v /= float(g_size);
      const double e = rel_error(grads.data(), want.data(), kCount);
      if (!(e < 1e-3)) die("sync: rank-1 sums came back with relative error " + std::to_string(e));
    }
    sync_once(sync, grads, 9, 1.0f);
    gw_sync_stats st = GW_SYNC_STATS_INIT;
    check(gw_sync_get_stats(sync, GW_SYNC_ALL_BUCKETS, &st), "stats");
    if (g_size > 1 && !(st.wire_bytes * 3 < st.raw_bytes))
      die("sync: " + std::to_string(st.wire_bytes) + " wire bytes for " + std::to_string(st.raw_bytes) +
          " raw bytes: the shapes did not reach the codec");
    uint64_t size = 0;
    check(gw_sync_save_state(sync, nullptr, 0, &size), "save size");
    std::vector<unsigned char> blob(size);
    check(gw_sync_save_state(sync, blob.data(), size, &size), "save");
    sync_once(sync, grads, 10, 1.0f);
    const std::vector<float> first = grads;
    std::vector<float> grads2;
    gw_sync* again = make(grads2);
    check(gw_sync_load_state(again, blob.data(), blob.size()), "load");
    sync_once(again, grads2, 10, 1.0f);
    if (std::memcmp(first.data(), grads2.data(), 4 * kCount)) die("sync: the step after a checkpoint differs");
    gw_sync_destroy(again);
    gw_sync_destroy(sync);
  } else if (which == "batched") {
    // [bucket] rounds_batch: the rounds of several buckets in one collective per round give every bucket
    // the bits of its own collectives (the round vectors are summed by recursive doubling, whose order
    // does not depend on where an element is), on every rank, whatever order the ranks mark the buckets
    // ready in: the batches are a rule of the bucket order, never of arrival. Compared with rounds_batch = 1
    // (each bucket its own collectives) over several steps: warm start, residuals, full-rank gradients.
    gw_runtime* rt_batched = make_runtime(toml + "rounds_batch = " + batching + "\n");
    gw_runtime* rt_single = make_runtime(toml + "rounds_batch = 1\n");
    std::vector<float> ga, gb;
    gw_sync* batched = make_sync(rt_batched, comm, ga);
    gw_sync* single = make_sync(rt_single, comm, gb);
    uint32_t buckets = 0;
    check(gw_sync_bucket_count(batched, &buckets), "bucket count");
    if (buckets != 3) die("expected 3 buckets, got " + std::to_string(buckets));
    for (uint64_t step = 0; step < 6; ++step) {
      const std::vector<float> g = gradient(g_rank, step, step < 2 ? 0.0f : 1.0f);
      std::copy(g.begin(), g.end(), ga.begin());
      std::copy(g.begin(), g.end(), gb.begin());
      // From step 1 on, each rank marks some buckets ready early, in its own order (rank r starts at
      // bucket r and goes backwards on odd steps); gw_sync_step starts the rest.
      if (step > 0)
        for (uint32_t k = 0; k < buckets - step % 2; ++k) {
          const uint32_t b = (uint32_t(g_rank) + (step % 2 ? buckets - k : k)) % buckets;
          check(gw_sync_bucket_ready(batched, b), "gw_sync_bucket_ready");
        }
      check(gw_sync_step(batched, nullptr), "gw_sync_step (batched)");
      check(gw_sync_step(single, nullptr), "gw_sync_step (one bucket at a time)");
      const std::string what = "step " + std::to_string(step);
      check_identical(comm, ga.data(), 4 * ga.size(), "batched " + what);
      if (std::memcmp(ga.data(), gb.data(), 4 * kCount)) {
        uint64_t i = 0;
        while (ga[i] == gb[i]) ++i;
        die("batched " + what + ": element " + std::to_string(i) + " is " + std::to_string(ga[i]) + " batched but " +
            std::to_string(gb[i]) + " with every bucket on its own");
      }
      if (step < 2) {
        auto want = exact_sum(step, 0.0f);
        for (float& v : want) v /= float(g_size);
        if (!(rel_error(ga.data(), want.data(), kCount) < 1e-3)) die("batched " + what + ": rank-1 sums not exact");
      }
    }
    gw_sync_stats st = GW_SYNC_STATS_INIT;
    check(gw_sync_get_stats(batched, GW_SYNC_ALL_BUCKETS, &st), "stats");
    if (st.syncs != 6 * buckets) die("batched: " + std::to_string(st.syncs) + " exchanges booked, not one per bucket and step");
    if (g_size > 1 && !(st.wire_bytes * 3 < st.raw_bytes)) die("batched: the shapes did not reach the codec");
    gw_sync_destroy(single);
    gw_sync_destroy(batched);
    gw_runtime_destroy(rt_single);
    gw_runtime_destroy(rt_batched);
  } else if (which == "batch-api") {
    // gw_allreduce_compressed_batch: three buffers (each the test buffer, its own buffer_id and inputs) in
    // one collective per round give the bits of three gw_allreduce_compressed calls (a codec of each kind
    // keeps its own warm starts and residuals), over steps with and without full-rank noise.
    gw_codec* single = nullptr;
    check(gw_codec_create(rt, "powersgd", &single), "second codec");
    for (uint64_t step = 0; step < 4; ++step) {
      std::vector<std::vector<float>> a(3), b(3);
      std::vector<gw_tensor> ta(3);
      std::vector<gw_codec_context> ctx(3);
      for (uint64_t k = 0; k < 3; ++k) {
        a[k] = gradient(g_rank, 10 * k + step, step < 2 ? 0.0f : 1.0f);
        b[k] = a[k];
        ta[k] = f32(a[k].data(), kCount);
        ctx[k] = context(step, 20 + k);
      }
      gw_codec* codecs[3] = {codec, codec, codec};
      const gw_codec_context* ctxs[3] = {&ctx[0], &ctx[1], &ctx[2]};
      gw_tensor* ts[3] = {&ta[0], &ta[1], &ta[2]};
      check(gw_allreduce_compressed_batch(comm, 3, codecs, ctxs, ts, GW_REDUCE_AVG), "gw_allreduce_compressed_batch");
      for (uint64_t k = 0; k < 3; ++k) {
        gw_tensor t = f32(b[k].data(), kCount);
        check(gw_allreduce_compressed(comm, single, &ctx[k], &t, &t, GW_REDUCE_AVG), "gw_allreduce_compressed");
        const std::string what = "batch step " + std::to_string(step) + " buffer " + std::to_string(k);
        check_identical(comm, a[k].data(), 4 * kCount, what);
        if (std::memcmp(a[k].data(), b[k].data(), 4 * kCount)) die(what + ": the batch differs from its own call");
      }
    }
    gw_codec_destroy(single);
    // Bad input: refused on the calling rank before anything starts.
    std::vector<float> x(kCount, 1.0f);
    gw_tensor t = f32(x.data(), x.size());
    gw_tensor* ts[1] = {&t};
    gw_codec* int8 = nullptr;
    check(gw_codec_create(rt, "int8", &int8), "int8 codec");
    gw_codec* not_rounds[1] = {int8};
    if (gw_allreduce_compressed_batch(comm, 1, not_rounds, nullptr, ts, GW_REDUCE_SUM) != GW_ERR_UNSUPPORTED ||
        !std::strstr(gw_last_error(), "does not reduce in rounds"))
      die(std::string("a batch of int8 was not refused as unsupported: ") + gw_last_error());
    gw_codec* mixed[2] = {codec, int8};
    gw_tensor* two[2] = {&t, &t};
    if (gw_allreduce_compressed_batch(comm, 2, mixed, nullptr, two, GW_REDUCE_SUM) != GW_ERR_UNSUPPORTED)
      die(std::string("a batch with an int8 tensor was not refused: ") + gw_last_error());
    if (gw_allreduce_compressed_batch(comm, 0, not_rounds, nullptr, ts, GW_REDUCE_SUM) != GW_ERR_INVALID_ARGUMENT)
      die(std::string("an empty batch was not refused: ") + gw_last_error());
    gw_codec_destroy(int8);
  } else if (which == "bad-shape") {
    // A shape past the end of the buffer: refused on every rank before anything moves.
    std::vector<float> x(100, 1.0f);
    gw_tensor t = f32(x.data(), x.size());
    gw_codec_context ctx = GW_CODEC_CONTEXT_INIT;
    const gw_tensor_shape shape{10, 10, 10};
    ctx.shapes = &shape;
    ctx.num_shapes = 1;
    expect_error(gw_allreduce_compressed(comm, codec, &ctx, &t, &t, GW_REDUCE_SUM), GW_ERR_INVALID_ARGUMENT, "bad shape");
  } else if (which == "bad-product") {
    gw_sync_options so = GW_SYNC_OPTIONS_INIT;
    so.runtime = rt;
    gw_sync* sync = nullptr;
    check(gw_sync_create(comm, &so, &sync), "gw_sync_create");
    std::vector<float> x(100, 1.0f);
    gw_tensor t = f32(x.data(), x.size());
    check(gw_sync_register(sync, "w", &t, nullptr), "register");
    const int64_t dims[2] = {7, 15};
    expect_error(gw_sync_register_shape(sync, "w", 2, dims), GW_ERR_INVALID_ARGUMENT, "shape of another count");
  } else if (which == "with-ef") {
    gw_error_feedback* ef = nullptr;
    check(gw_error_feedback_create(codec, &ef), "ef");
    std::vector<float> x(100, 1.0f);
    gw_tensor t = f32(x.data(), x.size());
    expect_error(gw_allreduce_compressed_ef(comm, ef, nullptr, &t, &t, GW_REDUCE_SUM), GW_ERR_UNSUPPORTED, "ef");
  } else {
    die("unknown case " + which);
  }
  gw_codec_destroy(codec);
  gw_comm_destroy(comm);
  gw_runtime_destroy(rt);
  std::printf("OK rank %d\n", g_rank);
  return 0;
}
