// One rank of the DiLoCo tests (schedule "diloco", the synchronizer's outer loop), started by
// `gradwire run -n N -- diloco_rank CASE [ARGS]`. C ABI only. Prints "OK rank r" at the end; the driver
// is sync_test.cpp.
#include <algorithm>
#include <cmath>
#include <memory>

#include "common.hpp"

using namespace synctest;

namespace {

// The checks' own communicator: while a synchronizer has exchanges in flight (delay > 0) its communicator
// is used only through it, so the test's allreduces and comparisons go through a second one.
gw_comm* g_check = nullptr;

// Three tensors in buckets of at most 4000 bytes: one bucket each.
struct Model {
  std::vector<std::string> names{"w", "b", "c"};
  std::vector<std::vector<float>> grads, params;
  Model() {
    for (uint64_t n : {1500, 300, 900}) {
      grads.emplace_back(n, 0.0f);
      params.emplace_back(n, 0.0f);
    }
    for (size_t t = 0; t < params.size(); ++t)
      for (uint64_t i = 0; i < params[t].size(); ++i) params[t][i] = uniform(7 + t, 0, i);
  }
  // The application's inner step on this rank: plain SGD on a gradient of (rank, step).
  void inner_step(uint64_t step) {
    for (size_t t = 0; t < params.size(); ++t)
      for (uint64_t i = 0; i < params[t].size(); ++i) {
        grads[t][i] = uniform(step * 131 + t, g_rank, i) + 0.1f * params[t][i];
        params[t][i] -= 0.05f * grads[t][i];
      }
  }
};

struct Outer {
  uint64_t inner_steps = 4, fragments = 1, delay = 0;
  double lr = 0.7, momentum = 0.9;
  bool nesterov = true;
  std::string codec = "none";
  std::string toml() const {
    return "[codec]\nname = \"" + codec + "\"\nerror_feedback = true\n[bucket]\nbytes = 4000\n"
           "[schedule]\nname = \"diloco\"\n[schedule.diloco]\ninner_steps = " + std::to_string(inner_steps) +
           "\nfragments = " + std::to_string(fragments) + "\ndelay = " + std::to_string(delay) +
           "\nouter_lr = " + std::to_string(lr) + "\nouter_momentum = " + std::to_string(momentum) +
           "\nnesterov = " + (nesterov ? "true" : "false") + "\n";
  }
};

bool starts_at(const Outer& o, uint64_t t, uint64_t f) {
  const uint64_t offset = f * o.inner_steps / o.fragments;
  return t > 0 && t >= offset && (t - offset) % o.inner_steps == 0;
}

std::vector<float> flat(const Model& m) {
  std::vector<float> all;
  for (const auto& p : m.params) all.insert(all.end(), p.begin(), p.end());
  return all;
}

// The outer loop against a reference computed here, in double, from the dense average of what each rank
// holds: the anchor after every outer step must be the reference's (to rounding), and the same bits on
// every rank. A Nesterov step computed as heavy ball (or the other way), a wrong sign, a missed momentum
// term or local progress dropped after a delayed exchange all move the anchor by far more than rounding.
void case_reference(gw_comm* comm, Outer o, uint64_t steps) {
  Model m;
  Sync s(comm, o.toml(), m, true);
  const std::vector<uint64_t> frag = s.fragments_of(m, o.fragments);
  std::vector<std::vector<double>> anchor(m.params.size()), velocity(m.params.size());
  std::vector<std::vector<float>> sent(m.params.size());
  uint64_t outer_steps = 0;
  const std::string what = "reference F=" + std::to_string(o.fragments) + " delay=" + std::to_string(o.delay) +
                           (o.nesterov ? " nesterov" : " heavy-ball");
  for (uint64_t t = 0; t < steps; ++t) {
    m.inner_step(t);
    const std::vector<std::vector<float>> before = m.params;
    const uint32_t flags = s.step();
    bool any = false;
    for (size_t k = 0; k < m.params.size(); ++k) {
      const uint64_t f = frag[k];
      const size_t n = m.params[k].size();
      const bool start = starts_at(o, t, f) || t == 0;
      const bool finish = t == 0 || (o.delay == 0 ? starts_at(o, t, f) : t > o.delay && starts_at(o, t - o.delay, f));
      if (finish) {
        any = true;
        // The rank's parameters as sent, averaged densely here.
        std::vector<float> avg = o.delay == 0 || t == 0 ? before[k] : sent[k];
        gw_tensor x = f32(avg.data(), avg.size());
        check(gw_allreduce(g_check, &x, &x, GW_REDUCE_AVG), "gw_allreduce");
        if (t == 0) {
          anchor[k].assign(avg.begin(), avg.end());
          velocity[k].assign(n, 0.0);
        } else {
          for (size_t i = 0; i < n; ++i) {
            const double g = anchor[k][i] - double(avg[i]);
            velocity[k][i] = o.momentum * velocity[k][i] + g;
            anchor[k][i] -= o.lr * (o.nesterov ? g + o.momentum * velocity[k][i] : velocity[k][i]);
          }
        }
        // The parameters: the anchor plus the local progress since the exchange started.
        double worst = 0, scale = 1e-3;
        for (size_t i = 0; i < n; ++i) {
          const double local = o.delay == 0 || t == 0 ? 0.0 : double(before[k][i]) - double(sent[k][i]);
          const double want = anchor[k][i] + local;
          worst = std::max(worst, std::fabs(double(m.params[k][i]) - want));
          scale = std::max(scale, std::fabs(want));
        }
        if (worst > 1e-4 * scale)
          die(what + " step " + std::to_string(t) + ": tensor " + m.names[k] + " is " + std::to_string(worst) +
              " from the reference outer step");
        // Without local progress the parameters are the anchor: alike on every rank. The reference then
        // follows the runtime's float rounding.
        if (o.delay == 0 || t == 0) {
          check_identical(g_check, m.params[k].data(), 4 * n, what + ": " + m.names[k] + " after its outer step");
          for (size_t i = 0; i < n; ++i) anchor[k][i] = double(m.params[k][i]);
        }
        if (t > 0) ++outer_steps;
      } else if (m.params[k] != before[k]) {
        die(what + " step " + std::to_string(t) + ": tensor " + m.names[k] + " changed without an outer step");
      }
      if (start && t > 0) sent[k] = before[k];
    }
    if (any != bool(flags & GW_SYNC_OUTER_STEP))
      die(what + " step " + std::to_string(t) + ": GW_SYNC_OUTER_STEP is " +
          ((flags & GW_SYNC_OUTER_STEP) ? "set" : "not set"));
    if (!(flags & GW_SYNC_APPLY)) die(what + ": GW_SYNC_APPLY not set on a DiLoCo step");
  }
  if (outer_steps == 0) die(what + ": no outer step in " + std::to_string(steps) + " steps");
}

// With a lossy codec and error feedback: after every outer step every rank holds the same bits. With a
// delay, the inner steps while a fragment's exchange is in flight are left out here (no local progress to
// keep on top of the new anchor), so the parameters are the anchor itself; case_reference checks that
// progress.
void case_identical(gw_comm* comm, Outer o, uint64_t steps) {
  Model m;
  Sync s(comm, o.toml(), m, true);
  const std::vector<uint64_t> frag = s.fragments_of(m, o.fragments);
  const std::string what = "identical " + o.codec + " F=" + std::to_string(o.fragments) + " delay=" +
                           std::to_string(o.delay);
  uint64_t checked = 0;
  for (uint64_t t = 0; t < steps; ++t) {
    bool in_flight = false;
    for (uint64_t f = 0; f < o.fragments; ++f)
      for (uint64_t d = 1; d <= o.delay && d <= t; ++d) in_flight = in_flight || starts_at(o, t - d, f);
    if (!in_flight) m.inner_step(t);
    s.step();
    for (size_t k = 0; k < m.params.size(); ++k) {
      const uint64_t f = frag[k];
      const bool finish = t == 0 || (o.delay == 0 ? starts_at(o, t, f) : t > o.delay && starts_at(o, t - o.delay, f));
      if (!finish) continue;
      check_identical(g_check, m.params[k].data(), 4 * m.params[k].size(),
                      what + ": " + m.names[k] + " at step " + std::to_string(t));
      ++checked;
    }
  }
  if (checked < m.params.size() * 3) die(what + ": only " + std::to_string(checked) + " outer steps checked");
  // The final parameters after one more outer step of every fragment, in a run without delay, are
  // checked above; here the bytes: the first (dense) average, then compressed pseudo-gradients.
  gw_sync_stats st = GW_SYNC_STATS_INIT;
  check(gw_sync_get_stats(s.sync, GW_SYNC_ALL_BUCKETS, &st), "stats");
  if (st.syncs == 0) die(what + ": no exchange");
  if (o.codec != "none" && st.compression_ratio < 1.5)
    die(what + ": compression ratio " + std::to_string(st.compression_ratio) + " over the outer steps");
}

// Save in the middle of a run (an exchange in flight when delay > 0), restore into a new synchronizer:
// the rest equals the uninterrupted run bit for bit. A checkpoint of another outer configuration is
// refused, naming it.
void case_save_restore(gw_comm* comm, Outer o, uint64_t steps, uint64_t at) {
  std::vector<float> whole, resumed;
  {
    Model m;
    Sync s(comm, o.toml(), m, true);
    for (uint64_t t = 0; t < steps; ++t) {
      m.inner_step(t);
      s.step();
      if (t >= at) {
        const auto f = flat(m);
        whole.insert(whole.end(), f.begin(), f.end());
      }
    }
  }
  std::vector<unsigned char> blob;
  std::vector<std::vector<float>> params_at;
  {
    Model m;
    Sync s(comm, o.toml(), m, true);
    for (uint64_t t = 0; t < at; ++t) {
      m.inner_step(t);
      s.step();
    }
    blob = s.save();
    params_at = m.params;
  }
  {
    Model m;
    m.params = params_at;  // the application restores its own parameters
    Sync s(comm, o.toml(), m, true);
    check(gw_sync_load_state(s.sync, blob.data(), blob.size()), "gw_sync_load_state");
    for (uint64_t t = at; t < steps; ++t) {
      m.inner_step(t);
      s.step();
      const auto f = flat(m);
      resumed.insert(resumed.end(), f.begin(), f.end());
    }
  }
  if (resumed.size() != whole.size() || std::memcmp(resumed.data(), whole.data(), 4 * whole.size()) != 0)
    die("save-restore " + o.codec + ": the resumed run differs from the uninterrupted one");
  Outer other = o;
  other.lr = 0.5;
  Model m;
  Sync s(comm, other.toml(), m, true);
  if (gw_sync_load_state(s.sync, blob.data(), blob.size()) != GW_ERR_MISMATCH ||
      std::string(gw_last_error()).find("another outer configuration") == std::string::npos)
    die(std::string("a checkpoint of another outer configuration was not refused: ") + gw_last_error());
}

// Bad input: each case fails on every rank with the expected status (the driver checks the words).
void case_bad(gw_comm* comm, const std::string& what) {
  Model m;
  Outer o;
  if (what == "no-parameter") {
    Sync s(comm, o.toml(), m, false);
    m.inner_step(0);
    uint32_t flags = 0;
    expect_error(gw_sync_step(s.sync, &flags), GW_ERR_STATE, "a step without parameters");
  }
  if (what == "fragments") {
    o.fragments = 4;  // three buckets
    Sync s(comm, o.toml(), m, true);
    uint32_t flags = 0;
    expect_error(gw_sync_step(s.sync, &flags), GW_ERR_INVALID_ARGUMENT, "more fragments than buckets");
  }
  if (what == "delay" || what == "inner-steps") {
    if (what == "delay") o.delay = 4;
    std::string toml = o.toml();
    if (what == "inner-steps") toml.replace(toml.find("inner_steps = 4"), 15, "inner_steps = 0");
    const std::string text = "[runtime]\ntimeout_s = 20\n" + toml;
    gw_runtime_options ro = GW_RUNTIME_OPTIONS_INIT;
    ro.config_text = text.c_str();
    ro.flags = GW_RUNTIME_NO_ENV_OVERRIDES;
    gw_runtime* rt = nullptr;
    const gw_status st = gw_runtime_create(&ro, &rt);
    if (st != GW_OK) expect_error(st, GW_ERR_CONFIG, "a bad [schedule.diloco]");
    gw_sync_options so = GW_SYNC_OPTIONS_INIT;
    so.runtime = rt;
    gw_sync* s = nullptr;
    expect_error(gw_sync_create(comm, &so, &s), GW_ERR_INVALID_ARGUMENT, "a bad [schedule.diloco]");
  }
  if (what == "ranks-disagree") {
    if (g_rank == g_size - 1) o.inner_steps = 5;
    gw_runtime* rt = make_runtime(o.toml());
    gw_sync_options so = GW_SYNC_OPTIONS_INIT;
    so.runtime = rt;
    gw_sync* s = nullptr;
    check(gw_sync_create(comm, &so, &s), "gw_sync_create");
    for (size_t t = 0; t < m.names.size(); ++t) {
      gw_tensor g = f32(m.grads[t].data(), m.grads[t].size()), p = f32(m.params[t].data(), m.params[t].size());
      check(gw_sync_register(s, m.names[t].c_str(), &g, &p), "gw_sync_register");
    }
    expect_error(gw_sync_finalize(s), GW_ERR_MISMATCH, "ranks with different inner_steps");
  }
  die("bad case " + what + " was accepted");
}

Outer parse(int argc, char** argv, int from) {
  // ARGS: codec fragments delay [heavy]
  Outer o;
  if (argc > from) o.codec = argv[from];
  if (argc > from + 1) o.fragments = std::stoull(argv[from + 1]);
  if (argc > from + 2) o.delay = std::stoull(argv[from + 2]);
  if (argc > from + 3 && std::string(argv[from + 3]) == "heavy") o.nesterov = false;
  if (o.fragments > 1) o.inner_steps = 6;
  return o;
}

}  // namespace

int main(int argc, char** argv) {
  init_rank_from_env();
  if (argc < 2) die("usage: diloco_rank CASE [ARGS]");
  const std::string c = argv[1];
  gw_runtime* rt = make_runtime("[collectives]\npipeline_chunk_bytes = 4096\n");
  gw_comm* comm = make_comm(rt);
  g_check = make_comm(rt);
  if (c == "reference") case_reference(comm, parse(argc, argv, 2), 26);
  else if (c == "identical") case_identical(comm, parse(argc, argv, 2), 26);
  else if (c == "save-restore") case_save_restore(comm, parse(argc, argv, 2), 30, 13);
  else if (c == "bad") case_bad(comm, argv[2]);
  else die("unknown case " + c);
  check(gw_comm_destroy(g_check), "gw_comm_destroy");
  check(gw_comm_destroy(comm), "gw_comm_destroy");
  check(gw_runtime_destroy(rt), "gw_runtime_destroy");
  std::printf("OK rank %d\n", g_rank);
  return 0;
}
