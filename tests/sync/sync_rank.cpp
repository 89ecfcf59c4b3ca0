// One rank of the synchronizer tests, started by `gradwire run -n N -- sync_rank CASE [ARGS]`. C ABI only.
// Prints "OK rank r" at the end; the driver is sync_test.cpp.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>
#include <thread>

#include "common.hpp"

using namespace synctest;

namespace {

// A model's tensors: names, gradients and parameters the test fills.
struct Model {
  std::vector<std::string> names;
  std::vector<std::vector<float>> grads, params;

  void add(const std::string& name, uint64_t count) {
    names.push_back(name);
    grads.emplace_back(count, 0.0f);
    params.emplace_back(count, 0.0f);
  }
  // Gradients of (rank, step): small integers (exact averages) or floats in [-1, 1).
  void fill(int rank, uint64_t step, bool integers) {
    for (size_t t = 0; t < grads.size(); ++t)
      for (uint64_t i = 0; i < grads[t].size(); ++i)
        grads[t][i] = integers ? small_int(step * 131 + t, rank, i) : uniform(step * 131 + t, rank, i);
  }
  std::vector<float> flat() const {
    std::vector<float> all;
    for (const auto& g : grads) all.insert(all.end(), g.begin(), g.end());
    return all;
  }
};

// The exact average over ranks of the integer gradients of `step`.
std::vector<float> average_of(Model& m, uint64_t step) {
  std::vector<double> sum;
  for (int q = 0; q < g_size; ++q) {
    m.fill(q, step, true);
    const auto f = m.flat();
    sum.resize(f.size(), 0.0);
    for (size_t i = 0; i < f.size(); ++i) sum[i] += f[i];
  }
  std::vector<float> avg(sum.size());
  for (size_t i = 0; i < sum.size(); ++i) avg[i] = float(sum[i]) / float(g_size);
  return avg;
}

void expect_equal(const std::vector<float>& got, const std::vector<float>& want, const std::string& what) {
  if (got.size() != want.size()) die(what + ": sizes differ");
  for (size_t i = 0; i < got.size(); ++i)
    if (std::memcmp(&got[i], &want[i], 4) != 0)
      die(what + ": element " + std::to_string(i) + " is " + std::to_string(got[i]) + ", expected " +
          std::to_string(want[i]));
}

// ---- cases --------------------------------------------------------------------------------------

// Buckets by size and codec in registration order; rules by glob and size; "none" exempts.
void case_buckets(gw_comm* comm) {
  Model m;
  m.add("l1.weight", 800);
  m.add("l1.bias", 10);
  m.add("l2.weight", 300);
  m.add("l2.bias", 10);
  m.add("tiny", 20);
  m.add("l3.weight", 150);
  Sync s(comm,
         "[codec]\nname = \"int8\"\n[bucket]\nbytes = 4000\n"
         "[[rules]]\nmatch = \"*.bias\"\ncodec = \"none\"\n"
         "[[rules]]\nmatch = \"*\"\nmax_bytes = 100\ncodec = \"none\"\n",
         m);
  const uint32_t expected_bucket[] = {0, 1, 2, 1, 1, 2};
  for (size_t t = 0; t < m.names.size(); ++t) {
    uint32_t b = 99;
    check(gw_sync_tensor_bucket(s.sync, m.names[t].c_str(), &b), "gw_sync_tensor_bucket");
    if (b != expected_bucket[t])
      die("tensor " + m.names[t] + " is in bucket " + std::to_string(b) + ", expected " +
          std::to_string(expected_bucket[t]));
  }
  if (s.buckets() != 3) die("expected 3 buckets, got " + std::to_string(s.buckets()));
  const char* codecs[] = {"int8", "none", "int8"};
  const uint64_t counts[] = {800, 40, 450};
  for (uint32_t b = 0; b < 3; ++b) {
    gw_sync_bucket_info info = GW_SYNC_BUCKET_INFO_INIT;
    check(gw_sync_get_bucket_info(s.sync, b, &info), "gw_sync_get_bucket_info");
    if (std::string(info.codec) != codecs[b] || info.count != counts[b])
      die("bucket " + std::to_string(b) + " is " + info.codec + " with " + std::to_string(info.count) + " elements");
  }
  uint32_t b = 0;
  if (gw_sync_tensor_bucket(s.sync, "nope", &b) != GW_ERR_NOT_FOUND) die("an unknown tensor name was found");

  // One step: the exempt bucket is exact, the int8 buckets within int8's bound (scale / 254 for each of
  // the n - 1 encoded contributions, |x| <= 8, and for the owner's sum, <= 8 n) and identical.
  const std::vector<float> avg = average_of(m, 0);
  m.fill(g_rank, 0, true);
  if (s.step() != (GW_SYNC_APPLY | GW_SYNC_GRADIENTS_AVERAGED)) die("every_step: wrong flags");
  const auto got = m.flat();
  check_identical(comm, got.data(), 4 * got.size(), "buckets");
  uint64_t at = 0;
  for (size_t t = 0; t < m.names.size(); ++t) {
    const bool exact = expected_bucket[t] == 1;
    for (uint64_t i = 0; i < m.grads[t].size(); ++i, ++at)
      if (exact ? got[at] != avg[at] : std::fabs(got[at] - avg[at]) > (8.0 * (g_size - 1) + 8.0 * g_size) / 254.0 / g_size + 1e-5)
        die("tensor " + m.names[t] + " element " + std::to_string(i) + ": " + std::to_string(got[at]) + " vs " +
            std::to_string(avg[at]));
  }
  gw_sync_stats st = GW_SYNC_STATS_INIT, b0 = GW_SYNC_STATS_INIT, b1 = GW_SYNC_STATS_INIT;
  check(gw_sync_get_stats(s.sync, GW_SYNC_ALL_BUCKETS, &st), "gw_sync_get_stats");
  check(gw_sync_get_stats(s.sync, 0, &b0), "gw_sync_get_stats 0");
  check(gw_sync_get_stats(s.sync, 1, &b1), "gw_sync_get_stats 1");
  if (st.steps != 1 || st.syncs != 3 || st.raw_bytes != 4 * 1290 || st.wire_bytes == 0)
    die("stats: steps " + std::to_string(st.steps) + " syncs " + std::to_string(st.syncs) + " raw " +
        std::to_string(st.raw_bytes));
  if (!(b0.compression_ratio > 2.0) || b0.encode_seconds <= 0 || b0.decode_seconds <= 0)
    die("int8 bucket: compression ratio " + std::to_string(b0.compression_ratio));
  if (g_size > 1 && !(b1.compression_ratio > 0.5 && b1.compression_ratio < 1.5))
    die("exempt bucket: compression ratio " + std::to_string(b1.compression_ratio) + ", expected about 1");
}

// Buckets started as their gradients become ready, in a different order on every rank, some never
// started early: every average is exact and identical.
void case_out_of_order(gw_comm* comm) {
  Model m;
  for (int t = 0; t < 8; ++t) m.add("t" + std::to_string(t), 1000 + 37 * t);
  Sync s(comm, "[codec]\nname = \"none\"\n[bucket]\nbytes = 4000\n", m);
  const uint32_t n = s.buckets();
  if (n != 8) die("expected one bucket per tensor, got " + std::to_string(n));
  for (uint64_t step = 0; step < 4; ++step) {
    const std::vector<float> avg = average_of(m, step);
    m.fill(g_rank, step, true);
    for (uint32_t k = 0; k < n; ++k) {
      const uint32_t b = (g_rank + step) % 2 ? n - 1 - k : (k * 3 + g_rank) % n;
      if (b != 5) check(gw_sync_bucket_ready(s.sync, b), "gw_sync_bucket_ready");
    }
    check(gw_sync_bucket_ready(s.sync, 2), "gw_sync_bucket_ready twice");
    s.step();
    expect_equal(m.flat(), avg, "out of order, step " + std::to_string(step));
  }
  if (gw_sync_bucket_ready(s.sync, n) != GW_ERR_INVALID_ARGUMENT) die("a bucket past the last was accepted");
}

// Each schedule's contract through the real synchronizer: which steps communicate, what is averaged,
// what the flags say, async staleness exactly s, skipped steps counted by nobody.
void case_schedule(gw_comm* comm, const std::string& name) {
  Model m;
  m.add("w", 1500);
  m.add("b", 30);
  const bool params = name == "local_sgd";
  std::string toml = "[codec]\nname = \"none\"\n[schedule]\nname = \"" + name + "\"\n";
  if (name == "accumulate") toml += "[schedule.accumulate]\nsteps = 3\n";
  if (name == "local_sgd") toml += "[schedule.local_sgd]\nperiod = 3\nwarmup = 2\n";
  if (name == "async") toml += "[schedule.async]\nstaleness = 2\n";
  Sync s(comm, toml, m, params);
  std::vector<std::vector<float>> averages;  // of each step's gradients
  std::vector<double> acc;
  for (uint64_t step = 0; step < 10; ++step) {
    if (step == 4) {  // a skipped step: its gradients are garbage and nothing may count it
      m.fill(g_rank, 999, true);
      for (uint32_t b = 0; b < s.buckets(); ++b) check(gw_sync_bucket_ready(s.sync, b), "bucket_ready");
      check(gw_sync_skip_step(s.sync), "gw_sync_skip_step");
    }
    averages.push_back(average_of(m, step));
    m.fill(g_rank, step, true);
    const std::vector<float> local = m.flat();
    for (size_t t = 0; t < m.params.size(); ++t)
      for (uint64_t i = 0; i < m.params[t].size(); ++i) m.params[t][i] = float(g_rank * 100 + int(step) + int(i % 7));
    if (step % 2 == 1)  // the even steps start no bucket early
      for (uint32_t b = s.buckets(); b-- > 0;) check(gw_sync_bucket_ready(s.sync, b), "bucket_ready");
    const uint32_t flags = s.step();
    const std::string at = name + " step " + std::to_string(step);
    const auto got = m.flat();
    uint32_t want_flags = GW_SYNC_APPLY;
    if (name == "every_step") {
      want_flags |= GW_SYNC_GRADIENTS_AVERAGED;
      expect_equal(got, averages[step], at);
    } else if (name == "accumulate") {
      // Micro-steps 0 1 2 | 3 [skip] 4 5 | 6 7 8 | 9: the last of each three averages the three.
      if (step % 3 == 2) {
        want_flags = GW_SYNC_APPLY | GW_SYNC_GRADIENTS_AVERAGED;
        std::vector<float> want(got.size());
        for (size_t i = 0; i < want.size(); ++i) {
          // The synchronizer sums the micro-steps per rank in order, divides by 3, then averages ranks.
          double total = 0;
          for (int q = 0; q < g_size; ++q) {
            float per_rank = 0;
            for (uint64_t k = step - 2; k <= step; ++k) {
              m.fill(q, k, true);
              per_rank += m.flat()[i];
            }
            total += double(per_rank / 3.0f);
          }
          want[i] = float(total) / float(g_size);
        }
        m.fill(g_rank, step, true);
        // The averages of thirds are not always exact in f32; compare within a rounding.
        for (size_t i = 0; i < want.size(); ++i)
          if (std::fabs(got[i] - want[i]) > 1e-5f) die(at + ": accumulated average wrong at " + std::to_string(i));
      } else {
        want_flags = 0;
        expect_equal(got, local, at + " (a micro-step leaves the gradients local)");
      }
    } else if (name == "local_sgd") {
      // warmup 2 (gradients averaged), then local steps; parameters averaged at local steps 3, 6, ...
      if (step < 2) {
        want_flags |= GW_SYNC_GRADIENTS_AVERAGED;
        expect_equal(got, averages[step], at);
      } else {
        expect_equal(got, local, at + " (local step)");
        const uint64_t local_steps = step - 2;
        if (local_steps > 0 && local_steps % 3 == 0) {
          want_flags |= GW_SYNC_PARAMETERS_AVERAGED;
          for (size_t t = 0; t < m.params.size(); ++t)
            for (uint64_t i = 0; i < m.params[t].size(); ++i) {
              double sum = 0;
              for (int q = 0; q < g_size; ++q) sum += q * 100 + int(step) + int(i % 7);
              if (m.params[t][i] != float(sum) / float(g_size)) die(at + ": parameters not averaged");
            }
        } else if (m.params[0][0] != float(g_rank * 100 + int(step))) {
          die(at + ": parameters changed on a step that does not average them");
        }
      }
    } else if (name == "async") {
      if (step < 2) {
        expect_equal(got, local, at + " (the first s steps apply local gradients)");
      } else {
        want_flags |= GW_SYNC_GRADIENTS_AVERAGED;
        expect_equal(got, averages[step - 2], at + " (the average of step t - 2)");
      }
    }
    if (flags != want_flags) die(at + ": flags " + std::to_string(flags) + ", expected " + std::to_string(want_flags));
  }
  gw_sync_stats st = GW_SYNC_STATS_INIT;
  check(gw_sync_get_stats(s.sync, GW_SYNC_ALL_BUCKETS, &st), "stats");
  const uint64_t exchanges = name == "every_step" ? 10 : name == "accumulate" ? 3 : name == "local_sgd" ? 2 + 2 : 8;
  if (st.steps != 10 || st.syncs != exchanges * s.buckets())
    die(name + ": stats count " + std::to_string(st.steps) + " steps and " + std::to_string(st.syncs) +
        " exchanges, expected 10 and " + std::to_string(exchanges * s.buckets()));
}

// Runs `steps` steps of float gradients from step `first` on; returns every step's gradients after the
// step (and the flags), in one vector.
// With `parameters`, the parameters are set from (rank, step) before each step and traced after it.
std::vector<float> run_steps(Sync& s, Model& m, uint64_t first, uint64_t steps, bool parameters = false) {
  std::vector<float> trace;
  for (uint64_t step = first; step < first + steps; ++step) {
    m.fill(g_rank, step, false);
    if (parameters)
      for (size_t t = 0; t < m.params.size(); ++t)
        for (uint64_t i = 0; i < m.params[t].size(); ++i)
          m.params[t][i] = uniform(step * 977 + t, g_rank, i) + 0.01f * float(step);
    if (step % 3 == 0)
      for (uint32_t b = 0; b < s.buckets(); ++b) check(gw_sync_bucket_ready(s.sync, b), "bucket_ready");
    trace.push_back(float(s.step()));
    const auto f = m.flat();
    trace.insert(trace.end(), f.begin(), f.end());
    if (parameters)
      for (const auto& p : m.params) trace.insert(trace.end(), p.begin(), p.end());
  }
  return trace;
}

// Save after 4 steps, restore into a new synchronizer, and the next 6 steps give exactly the bits of
// an uninterrupted run: error-feedback residuals, accumulators, counters and background exchanges
// all travel in the blob. Damaged blobs and another layout are refused.
void case_save_restore(gw_comm* comm, const std::string& schedule, const std::string& codec, float momentum) {
  const std::string toml = "[codec]\nname = \"" + codec + "\"\nerror_feedback = true\nmomentum = " +
                           std::to_string(momentum) + "\n[bucket]\nbytes = 6000\n"
                           "[schedule]\nname = \"" + schedule + "\"\n[schedule.accumulate]\nsteps = 3\n"
                           "[schedule.async]\nstaleness = 2\n[codec.topk]\nratio = 0.1\n"
                           "[schedule.local_sgd]\nperiod = 2\n";
  const bool params = schedule == "local_sgd";
  Model m;
  m.add("a", 1200);
  m.add("b", 700);
  m.add("c", 2500);
  std::vector<float> whole, resumed;
  {
    Sync s(comm, toml, m, params);
    whole = run_steps(s, m, 0, 10, params);
  }
  std::vector<unsigned char> blob;
  {
    Sync s(comm, toml, m, params);
    run_steps(s, m, 0, 4, params);
    blob = s.save();
  }
  {
    Sync s(comm, toml, m, params);
    auto bad = blob;
    bad[bad.size() / 2] ^= 1;
    if (gw_sync_load_state(s.sync, bad.data(), bad.size()) != GW_ERR_CORRUPT) die("a damaged blob was accepted");
    if (gw_sync_load_state(s.sync, blob.data(), blob.size() - 3) != GW_ERR_CORRUPT) die("a cut blob was accepted");
    check(gw_sync_load_state(s.sync, blob.data(), blob.size()), "gw_sync_load_state");
    resumed = run_steps(s, m, 4, 6, params);
  }
  const size_t per_step = whole.size() / 10;
  expect_equal(resumed, std::vector<float>(whole.begin() + 4 * per_step, whole.end()),
               schedule + "/" + codec + ": the resumed run");
  Model other;
  other.add("a", 1200);
  other.add("bb", 700);
  other.add("c", 2500);
  Sync s(comm, toml, other, params);
  if (gw_sync_load_state(s.sync, blob.data(), blob.size()) != GW_ERR_MISMATCH ||
      std::string(gw_last_error()).find("'b'") == std::string::npos)
    die(std::string("a checkpoint of another layout was not a mismatch naming 'b': ") + gw_last_error());
}

// A step skipped after its exchanges started leaves no trace: the error-feedback residuals and the
// codec's step are rolled back, so the run equals one that never saw that step.
void case_skip_rolls_back(gw_comm* comm) {
  const std::string toml = "[codec]\nname = \"randomk\"\nerror_feedback = true\n[codec.randomk]\nratio = 0.2\n";
  Model m;
  m.add("w", 3000);
  std::vector<float> plain, skipped;
  {
    Sync s(comm, toml, m);
    plain = run_steps(s, m, 0, 3);
  }
  {
    Sync s(comm, toml, m);
    skipped = run_steps(s, m, 0, 1);
    m.fill(g_rank, 77, false);
    check(gw_sync_bucket_ready(s.sync, 0), "bucket_ready");
    check(gw_sync_skip_step(s.sync), "gw_sync_skip_step");
    const auto rest = run_steps(s, m, 1, 2);
    skipped.insert(skipped.end(), rest.begin(), rest.end());
  }
  expect_equal(skipped, plain, "a run with a skipped step");
}

// [codec] error_feedback_codecs: a lossy codec it does not list trains as without error feedback (the
// same bits, no residuals in the checkpoint); one it lists keeps them, as with an empty list.
void case_error_feedback_codecs(gw_comm* comm) {
  Model m;
  m.add("w", 3000);
  const auto run = [&](const std::string& codec, const std::string& feedback, size_t* state) {
    Sync s(comm, "[codec]\nname = \"" + codec + "\"\n" + feedback + "[codec.topk]\nratio = 0.1\n", m);
    auto trace = run_steps(s, m, 0, 3);
    *state = s.save().size();
    return trace;
  };
  size_t off = 0, unlisted = 0, listed = 0, all = 0;
  const auto plain = run("int8", "error_feedback = false\n", &off);
  const auto skipped = run("int8", "error_feedback = true\nerror_feedback_codecs = [\"topk\", \"onebit\"]\n", &unlisted);
  expect_equal(skipped, plain, "int8 not listed in error_feedback_codecs against int8 without error feedback");
  if (unlisted != off)
    die("int8 not listed in error_feedback_codecs saved " + std::to_string(unlisted) + " bytes of state, " +
        std::to_string(off) + " without error feedback");
  const auto kept = run("int8", "error_feedback = true\nerror_feedback_codecs = [\"int8\"]\n", &listed);
  const auto every = run("int8", "error_feedback = true\n", &all);
  expect_equal(kept, every, "int8 listed in error_feedback_codecs against every lossy codec");
  if (listed != all || listed <= off)
    die("int8 listed in error_feedback_codecs saved " + std::to_string(listed) + " bytes of state, " +
        std::to_string(all) + " with every codec, " + std::to_string(off) + " without error feedback");
  if (kept == plain) die("error feedback did not change int8's averages after 3 steps; the case cannot tell");
  // A misspelt codec would silently keep no residuals: it is refused, naming the key.
  const std::string bad = "[codec]\nname = \"topk\"\nerror_feedback = true\nerror_feedback_codecs = [\"topK\"]\n";
  gw_runtime_options ro = GW_RUNTIME_OPTIONS_INIT;
  ro.config_text = bad.c_str();
  ro.flags = GW_RUNTIME_NO_ENV_OVERRIDES;
  gw_runtime* rt = nullptr;
  const gw_status st = gw_runtime_create(&ro, &rt);
  const std::string message = gw_last_error();
  if (rt != nullptr) gw_runtime_destroy(rt);
  if (st != GW_ERR_NOT_FOUND || message.find("error_feedback_codecs") == std::string::npos)
    die("error_feedback_codecs = [\"topK\"]: expected GW_ERR_NOT_FOUND naming the key, got " +
        std::string(gw_status_string(st)) + ": " + message);
}

// [codec] momentum: each rank exchanges its velocity v = m v + g; with a lossless codec the average is
// momentum applied to the averaged gradients (w = m w + avg g), within float rounding. A skipped step
// (after bucket_ready) rolls the velocity back.
void case_momentum(gw_comm* comm) {
  Model m;
  m.add("a", 300);
  m.add("b", 500);
  Sync s(comm, "[codec]\nname = \"none\"\nmomentum = 0.9\n[bucket]\nbytes = 1500\n", m);
  if (s.buckets() != 2) die("expected 2 buckets");
  std::vector<double> w;
  for (uint64_t step = 0; step < 8; ++step) {
    if (step == 3) {
      m.fill(g_rank, 555, true);
      for (uint32_t b = 0; b < s.buckets(); ++b) check(gw_sync_bucket_ready(s.sync, b), "bucket_ready");
      check(gw_sync_skip_step(s.sync), "gw_sync_skip_step");
    }
    const auto avg = average_of(m, step);
    w.resize(avg.size(), 0.0);
    for (size_t i = 0; i < avg.size(); ++i) w[i] = 0.9 * w[i] + double(avg[i]);
    m.fill(g_rank, step, true);
    if (step % 2 == 1) check(gw_sync_bucket_ready(s.sync, 1), "bucket_ready");
    const uint32_t flags = s.step();
    if (flags != (GW_SYNC_APPLY | GW_SYNC_GRADIENTS_AVERAGED)) die("momentum: flags " + std::to_string(flags));
    const auto got = m.flat();
    for (size_t i = 0; i < got.size(); ++i)
      if (std::fabs(double(got[i]) - w[i]) > 1e-5 * (1.0 + std::fabs(w[i])))
        die("momentum step " + std::to_string(step) + ": element " + std::to_string(i) + " is " +
            std::to_string(got[i]) + ", momentum on the average gives " + std::to_string(w[i]));
  }
}

// Local SGD through a codec: every rank's parameters are identical after each average, the first
// average is the dense one, later ones are anchor + the codec's average of the differences (close to
// the true average), and they send fewer bytes than dense averages would.
void case_local_sgd_codec(gw_comm* comm, const std::string& codec) {
  Model m;
  m.add("w", 4000);
  m.add("b", 64);
  Sync s(comm, "[codec]\nname = \"" + codec + "\"\nerror_feedback = true\n[schedule]\nname = \"local_sgd\"\n"
               "[schedule.local_sgd]\nperiod = 2\n", m, true);
  uint32_t averages = 0;
  std::vector<std::vector<float>> previous;  // the parameters after the last average (empty before the first)
  for (uint64_t step = 0; step < 12; ++step) {
    // A local SGD step of this rank: its own gradient moves its own parameters.
    m.fill(g_rank, step, false);
    for (size_t t = 0; t < m.params.size(); ++t)
      for (uint64_t i = 0; i < m.params[t].size(); ++i) m.params[t][i] -= 0.1f * m.grads[t][i];
    std::vector<std::vector<float>> truth = m.params;  // the exact average, by the dense allreduce
    for (auto& p : truth) {
      gw_tensor t = f32(p.data(), p.size());
      check(gw_allreduce(comm, &t, &t, GW_REDUCE_AVG), "gw_allreduce");
    }
    const uint32_t flags = s.step();
    const std::string at = codec + " step " + std::to_string(step);
    if (!(flags & GW_SYNC_PARAMETERS_AVERAGED)) continue;
    ++averages;
    for (size_t t = 0; t < m.params.size(); ++t) {
      std::vector<float> lo = m.params[t], hi = m.params[t];
      gw_tensor tl = f32(lo.data(), lo.size()), th = f32(hi.data(), hi.size());
      check(gw_allreduce(comm, &tl, &tl, GW_REDUCE_MIN), "gw_allreduce min");
      check(gw_allreduce(comm, &th, &th, GW_REDUCE_MAX), "gw_allreduce max");
      double moved = 0, err = 0;  // how far the true average moved since the last one, and the error
      for (size_t i = 0; i < lo.size(); ++i) {
        if (lo[i] != hi[i]) die(at + ": ranks hold different parameters after the average (" + m.names[t] + ")");
        if (!previous.empty()) moved = std::max(moved, std::fabs(double(truth[t][i]) - double(previous[t][i])));
        err = std::max(err, std::fabs(double(m.params[t][i]) - double(truth[t][i])));
      }
      if (averages == 1 && err > 1e-6) die(at + ": the first average is not the dense one (error " + std::to_string(err) + ")");
      // int8 keeps a difference to about 1 %, one bit only its sign and scale; error feedback carries
      // the rest into the next average, so the error stays of the order of one difference.
      const double bound = (codec == "onebit" ? 2.0 : 0.1) * moved + 1e-5;
      if (averages > 1 && err > bound)
        die(at + ": the compressed average is " + std::to_string(err) + " from the true one (" + m.names[t] +
            "), more than " + std::to_string(bound));
    }
    previous = m.params;
  }
  if (averages != 5) die(codec + ": " + std::to_string(averages) + " parameter averages, expected 5");
  gw_sync_stats st = GW_SYNC_STATS_INIT;
  check(gw_sync_get_stats(s.sync, GW_SYNC_ALL_BUCKETS, &st), "stats");
  const double dense_per_average = 2.0 * (g_size - 1) / g_size * 4.0 * 4064;
  if (st.syncs != 5 * s.buckets() || double(st.wire_bytes) > dense_per_average * (1 + 4 * 0.5))
    die(codec + ": " + std::to_string(st.syncs) + " exchanges and " + std::to_string(st.wire_bytes) +
        " bytes sent; expected 5 per bucket and at most one dense average plus four at half its bytes");
}

void case_errors(gw_comm* comm) {
  Model m;
  m.add("w", 10);
  gw_runtime* rt = make_runtime("");
  gw_sync_options o = GW_SYNC_OPTIONS_INIT;
  gw_sync* s = nullptr;
  if (gw_sync_create(comm, &o, &s) != GW_ERR_INVALID_ARGUMENT ||
      std::string(gw_last_error()).find("runtime") == std::string::npos)
    die("a NULL runtime was not refused");
  o.runtime = rt;
  check(gw_sync_create(comm, &o, &s), "gw_sync_create");
  uint32_t flags = 0;
  if (gw_sync_step(s, &flags) != GW_ERR_STATE) die("a step before finalize was accepted");
  if (gw_sync_finalize(s) != GW_ERR_STATE) die("finalize without tensors was accepted");
  gw_tensor g = f32(m.grads[0].data(), 10);
  check(gw_sync_register(s, "w", &g, nullptr), "register");
  if (gw_sync_register(s, "w", &g, nullptr) != GW_ERR_INVALID_ARGUMENT) die("a duplicate name was accepted");
  std::vector<double> d(10);
  gw_tensor gd = GW_TENSOR_INIT;
  gd.dtype = GW_DTYPE_F64;
  gd.data = d.data();
  gd.count = 10;
  if (gw_sync_register(s, "d", &gd, nullptr) != GW_ERR_UNSUPPORTED) die("an f64 gradient was accepted");
  gw_tensor p = f32(m.params[0].data(), 5);
  if (gw_sync_register(s, "p", &g, &p) != GW_ERR_INVALID_ARGUMENT) die("a parameter of another count was accepted");
  check(gw_sync_finalize(s), "finalize");
  if (gw_sync_register(s, "late", &g, nullptr) != GW_ERR_STATE) die("a registration after finalize was accepted");
  gw_sync_stats st = GW_SYNC_STATS_INIT;
  st.struct_size = 0;
  if (gw_sync_get_stats(s, GW_SYNC_ALL_BUCKETS, &st) != GW_ERR_INVALID_ARGUMENT) die("struct_size 0 was accepted");
  check(gw_sync_destroy(s), "destroy");
  check(gw_runtime_destroy(rt), "runtime destroy");
}

void case_mismatch(gw_comm* comm) {
  Model m;
  m.add("w", 100);
  m.add(g_rank == g_size - 1 ? "bias" : "b", 10);
  gw_runtime* rt = make_runtime("");
  gw_sync_options o = GW_SYNC_OPTIONS_INIT;
  o.runtime = rt;
  gw_sync* s = nullptr;
  check(gw_sync_create(comm, &o, &s), "gw_sync_create");
  for (size_t t = 0; t < 2; ++t) {
    gw_tensor g = f32(m.grads[t].data(), m.grads[t].size());
    check(gw_sync_register(s, m.names[t].c_str(), &g, nullptr), "register");
  }
  expect_error(gw_sync_finalize(s), GW_ERR_MISMATCH, "finalize with different tensors");
}

// An exchange that outlives gw_sync_step (async, a streamed DiLoCo fragment) moves while the application
// makes no gw_sync call: the synchronizer's progress thread drives it. Rank 0 starts it and then stays
// out of gw_sync until rank 1, whose next steps wait for that exchange, leaves the file `mark`; rank 1
// can only get there if rank 0's side of the exchange progressed in the background.
void case_background_progress(gw_comm* comm, const std::string& schedule, const std::string& mark) {
  Model m;
  m.add("w", 1u << 20);  // 4 MiB: a message that needs the receiver's progress (no eager send)
  std::string toml = "[codec]\nname = \"none\"\n[schedule]\nname = \"" + schedule + "\"\n";
  uint64_t started = 0, finished = 0;  // the step whose gw_sync_step starts the exchange, the one that waits
  if (schedule == "async") {
    toml += "[schedule.async]\nstaleness = 1\n";
    started = 0, finished = 1;
  } else if (schedule == "diloco") {
    toml += "[schedule.diloco]\ninner_steps = 2\ndelay = 1\n";
    started = 2, finished = 3;
  } else {
    die("background-progress: unknown schedule " + schedule);
  }
  Sync s(comm, toml, m, schedule == "diloco");
  for (uint64_t step = 0; step <= finished; ++step) {
    m.fill(g_rank, step, true);
    if (g_rank == 0 && step == started + 1) {
      // Out of gw_sync until rank 1 has finished the exchange.
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
      for (;;) {
        if (std::FILE* f = std::fopen(mark.c_str(), "r")) {
          std::fclose(f);
          break;
        }
        if (std::chrono::steady_clock::now() > deadline)
          die(schedule + ": rank 1 did not finish the exchange of step " + std::to_string(started) + " in 20 s while "
              "rank 0 made no gw_sync call: no progress thread moved rank 0's side of it");
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
    }
    s.step();
    if (g_rank == 1 && step == finished) {
      std::FILE* f = std::fopen(mark.c_str(), "w");
      if (!f) die("cannot write " + mark);
      std::fclose(f);
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  init_rank_from_env();
  if (argc < 2) die("usage: sync_rank CASE [ARGS]");
  const std::string c = argv[1];
  gw_runtime* rt = make_runtime("[collectives]\npipeline_chunk_bytes = 4096\n");
  gw_comm* comm = make_comm(rt);
  if (c == "buckets") case_buckets(comm);
  else if (c == "out-of-order") case_out_of_order(comm);
  else if (c == "schedule") case_schedule(comm, argv[2]);
  else if (c == "save-restore") case_save_restore(comm, argv[2], argv[3], argc > 4 ? std::stof(argv[4]) : 0.0f);
  else if (c == "momentum") case_momentum(comm);
  else if (c == "local-sgd-codec") case_local_sgd_codec(comm, argv[2]);
  else if (c == "skip") case_skip_rolls_back(comm);
  else if (c == "error-feedback-codecs") case_error_feedback_codecs(comm);
  else if (c == "errors") case_errors(comm);
  else if (c == "mismatch") case_mismatch(comm);
  else if (c == "background-progress") case_background_progress(comm, argv[2], argv[3]);
  else die("unknown case " + c);
  check(gw_comm_destroy(comm), "gw_comm_destroy");
  check(gw_runtime_destroy(rt), "gw_runtime_destroy");
  std::printf("OK rank %d\n", g_rank);
  return 0;
}
