// One rank of the parameter-server tests, started by `gradwire run -n N -- ps_rank CASE [ARGS]`. C ABI
// only. Prints "OK rank r" at the end (or EXPECTED-ERROR for a failure case); the driver is ps_test.cpp.
#include <unistd.h>

#include <cmath>
#include <thread>

#include "common.hpp"

using namespace synctest;

namespace {

constexpr uint64_t kCount = 1000;
constexpr float kMomentum = 0.9f;

float lr_at(int step, int steps) { return 0.05f * (1.0f - float(step) / float(steps)); }

// The gradient worker w computes at `step` on parameters p: it depends on the parameters, so a wrong
// pull shows up in every later step.
void gradient(int w, int step, const std::vector<float>& p, std::vector<float>& g) {
  g.resize(p.size());
  for (uint64_t i = 0; i < p.size(); ++i) g[i] = 0.5f * p[i] + uniform(uint64_t(step) + 1, w, i);
}

std::vector<float> initial() {
  std::vector<float> p(kCount);
  for (uint64_t i = 0; i < kCount; ++i) p[i] = uniform(99, 0, i);
  return p;
}

gw_ps* make_ps(gw_comm* comm, gw_runtime* rt, uint32_t servers, gw_ps_mode mode, uint32_t staleness,
               std::vector<float>& params) {
  gw_ps_options o = GW_PS_OPTIONS_INIT;
  o.runtime = rt;
  o.servers = servers;
  o.mode = mode;
  o.staleness = staleness;
  o.momentum = kMomentum;
  gw_tensor t = f32(params.data(), params.size());
  gw_ps* ps = nullptr;
  check(gw_ps_create(comm, &o, &t, &ps), "gw_ps_create");
  return ps;
}

gw_ps_stats stats_of(gw_ps* ps) {
  gw_ps_stats s = GW_PS_STATS_INIT;
  check(gw_ps_get_stats(ps, &s), "gw_ps_get_stats");
  return s;
}

// Allreduce training (every rank; the servers contribute zeros and divide by the workers), then the
// same steps through the parameter server: the workers' parameters must match.
void case_sync_equals_allreduce(gw_comm* comm, gw_runtime* rt, uint32_t servers, const std::string& codec) {
  const int workers = g_size - int(servers), steps = 20;
  const bool worker = g_rank >= int(servers);
  const int w = g_rank - int(servers);
  std::vector<float> reference = initial(), v(kCount, 0.0f), g;
  for (int step = 0; step < steps; ++step) {
    if (worker) gradient(w, step, reference, g);
    else g.assign(kCount, 0.0f);
    gw_tensor t = f32(g.data(), g.size());
    check(gw_allreduce(comm, &t, &t, GW_REDUCE_SUM), "gw_allreduce");
    const float lr = lr_at(step, steps);
    for (uint64_t i = 0; i < kCount; ++i) {
      v[i] = kMomentum * v[i] + g[i] * (1.0f / float(workers));
      reference[i] -= lr * v[i];
    }
  }
  std::vector<float> params = initial();
  gw_ps* ps = make_ps(comm, rt, servers, GW_PS_SYNC, 8, params);
  int is_server = -1;
  uint32_t index = 99, count = 0;
  check(gw_ps_role(ps, &is_server, &index, &count), "gw_ps_role");
  if (is_server != (worker ? 0 : 1) || count != uint32_t(workers) || (worker && index != uint32_t(w)))
    die("gw_ps_role: is_server " + std::to_string(is_server) + ", worker " + std::to_string(index) + " of " +
        std::to_string(count));
  if (!worker) {
    check(gw_ps_serve(ps), "gw_ps_serve");
    const gw_ps_stats s = stats_of(ps);
    if (s.version != uint64_t(steps) || s.pushes != uint64_t(steps * workers) || s.dropped != 0 || s.dead_workers != 0)
      die("server stats: version " + std::to_string(s.version) + ", pushes " + std::to_string(s.pushes));
  } else {
    for (int step = 0; step < steps; ++step) {
      gradient(w, step, params, g);
      gw_tensor t = f32(g.data(), g.size());
      check(gw_ps_push_pull(ps, &t, lr_at(step, steps)), "gw_ps_push_pull");
    }
    const gw_ps_stats s = stats_of(ps);
    if (s.version != uint64_t(steps) || s.pushes != uint64_t(steps)) die("worker stats: version " + std::to_string(s.version));
    const double tolerance = codec == "none" ? 1e-5 : 2e-2;
    for (uint64_t i = 0; i < kCount; ++i)
      if (std::fabs(double(params[i]) - double(reference[i])) > tolerance * (1.0 + std::fabs(double(reference[i]))))
        die(codec + ": parameter " + std::to_string(i) + " is " + std::to_string(params[i]) +
            " through the parameter server, " + std::to_string(reference[i]) + " with allreduce");
    if (codec != "none" && s.wire_bytes > uint64_t(steps) * kCount * 4 / 2)
      die(codec + ": the pushes sent " + std::to_string(s.wire_bytes) + " bytes, not compressed");
  }
  check(gw_ps_destroy(ps), "gw_ps_destroy");
  // After gw_ps_serve a server's shard of its tensor holds the final values: exactly what the workers
  // pulled last (the first worker's copy, broadcast over the communicator, which is free again).
  std::vector<float> pulled = params;
  gw_tensor b = f32(pulled.data(), pulled.size());
  check(gw_broadcast(comm, &b, servers), "gw_broadcast of the pulled parameters");
  if (!worker) {
    const uint64_t begin = kCount * uint64_t(g_rank) / servers, end = kCount * uint64_t(g_rank + 1) / servers;
    if (std::memcmp(params.data() + begin, pulled.data() + begin, (end - begin) * sizeof(float)) != 0)
      die("server " + std::to_string(g_rank) + ": its shard [" + std::to_string(begin) + ", " + std::to_string(end) +
          ") after gw_ps_serve differs from the parameters the workers pulled last");
    const std::vector<float> start = initial();
    for (uint64_t i = 0; i < kCount; ++i)
      if ((i < begin || i >= end) && params[i] != start[i])
        die("server " + std::to_string(g_rank) + " wrote outside its shard, at " + std::to_string(i));
  }
}

// Staleness 2: worker 0 pushes three times, then tells worker 1, whose first push (computed on version 0)
// is three versions old and is dropped; its second, on version 3, is applied.
void case_async_staleness(gw_comm* comm, gw_runtime* rt) {
  std::vector<float> params = initial(), g;
  gw_ps* ps = make_ps(comm, rt, 1, GW_PS_ASYNC, 2, params);
  int go = 1;
  gw_tensor token = GW_TENSOR_INIT;
  token.dtype = GW_DTYPE_I32;
  token.data = &go;
  token.count = 1;
  if (g_rank == 0) {
    check(gw_ps_serve(ps), "gw_ps_serve");
    const gw_ps_stats s = stats_of(ps);
    if (s.pushes != 4 || s.dropped != 1 || s.version != 4)
      die("server: " + std::to_string(s.pushes) + " pushes applied, " + std::to_string(s.dropped) +
          " dropped, version " + std::to_string(s.version) + "; expected 4, 1 and 4");
  } else if (g_rank == 1) {
    // Alone on the server for these three pushes, worker 0 can follow its arithmetic: each push is 1/W of
    // a round (W workers, per-push momentum b = m^(1/W)), and the pull returns the look-ahead point
    // p - (lr / W) (b + ... + b^(W-1)) v.
    const float W = float(g_size - 1), b = std::pow(kMomentum, 1.0f / W);
    float ahead_sum = 0, bk = 1;
    for (int k = 1; k < g_size - 1; ++k) ahead_sum += (bk *= b);
    std::vector<float> p = initial(), v(kCount, 0.0f);
    for (int step = 0; step < 3; ++step) {
      gradient(0, step, params, g);
      for (uint64_t i = 0; i < kCount; ++i) {
        v[i] = b * v[i] + g[i] * (1.0f / W);
        p[i] -= 0.01f / W * v[i];
      }
      gw_tensor t = f32(g.data(), g.size());
      check(gw_ps_push_pull(ps, &t, 0.01f), "gw_ps_push_pull");
      for (uint64_t i = 0; i < kCount; ++i) {
        const float ahead = p[i] - 0.01f / W * ahead_sum * v[i];
        if (std::fabs(params[i] - ahead) > 1e-6f * (1.0f + std::fabs(ahead)))
          die("push " + std::to_string(step) + ": pulled parameter " + std::to_string(i) + " is " +
              std::to_string(params[i]) + ", the look-ahead point is " + std::to_string(ahead) + " (current value " +
              std::to_string(p[i]) + ")");
      }
    }
    if (stats_of(ps).version != 3) die("worker 0 did not see version 3");
    check(gw_send(comm, &token, 2, 7), "gw_send");
  } else if (g_rank == 2) {
    check(gw_recv(comm, &token, 1, 7), "gw_recv");
    gradient(1, 0, params, g);
    gw_tensor t = f32(g.data(), g.size());
    check(gw_ps_push_pull(ps, &t, 0.01f), "gw_ps_push_pull");
    gw_ps_stats s = stats_of(ps);
    if (s.dropped != 1 || s.version != 3) die("the stale push was not dropped (dropped " + std::to_string(s.dropped) + ")");
    check(gw_ps_push_pull(ps, &t, 0.01f), "gw_ps_push_pull");
    s = stats_of(ps);
    if (s.dropped != 1 || s.version != 4) die("the fresh push was not applied (version " + std::to_string(s.version) + ")");
  }
  check(gw_ps_destroy(ps), "gw_ps_destroy");
}

// Asynchronous with a worker that dies after two pushes: the others finish, the server counts it dead.
void case_dead_worker(gw_comm* comm, gw_runtime* rt) {
  std::vector<float> params = initial(), g;
  gw_ps* ps = make_ps(comm, rt, 1, GW_PS_ASYNC, 1000, params);
  if (g_rank == 0) {
    check(gw_ps_serve(ps), "gw_ps_serve");
    const gw_ps_stats s = stats_of(ps);
    if (s.dead_workers != 1 || s.pushes != 62)
      die("server: " + std::to_string(s.dead_workers) + " dead workers, " + std::to_string(s.pushes) +
          " pushes; expected 1 and 62");
    check(gw_ps_destroy(ps), "gw_ps_destroy");
    return;
  }
  const int steps = g_rank == 3 ? 2 : 30;
  for (int step = 0; step < steps; ++step) {
    gradient(g_rank - 1, step, params, g);
    gw_tensor t = f32(g.data(), g.size());
    check(gw_ps_push_pull(ps, &t, 0.01f), "gw_ps_push_pull");
  }
  if (g_rank == 3) {
    std::printf("OK rank %d (dies now)\n", g_rank);
    std::fflush(stdout);
    _exit(0);
  }
  check(gw_ps_destroy(ps), "gw_ps_destroy");
}

// Server 1 dies right after creation: workers and server 0 end with an error naming it.
void case_dead_server(gw_comm* comm, gw_runtime* rt) {
  std::vector<float> params = initial(), g;
  gw_ps* ps = make_ps(comm, rt, 2, GW_PS_SYNC, 8, params);
  if (g_rank == 1) {
    std::printf("OK rank %d (dies now)\n", g_rank);
    std::fflush(stdout);
    _exit(0);
  }
  if (g_rank == 0) expect_error(gw_ps_serve(ps), GW_ERR_TRANSPORT, "gw_ps_serve with a dead server beside");
  gw_status st = GW_OK;
  for (int step = 0; step < 5 && st == GW_OK; ++step) {
    gradient(g_rank - 2, step, params, g);
    gw_tensor t = f32(g.data(), g.size());
    st = gw_ps_push_pull(ps, &t, 0.01f);
  }
  expect_error(st, GW_ERR_TRANSPORT, "gw_ps_push_pull with a dead server");
}

void case_errors(gw_comm* comm, gw_runtime* rt) {
  std::vector<float> params(g_rank == 0 ? 12 : 10, 0.0f);
  gw_tensor t = f32(params.data(), params.size());
  gw_ps_options o = GW_PS_OPTIONS_INIT;
  gw_ps* ps = nullptr;
  if (gw_ps_create(comm, &o, &t, &ps) != GW_ERR_INVALID_ARGUMENT || std::string(gw_last_error()).find("runtime") == std::string::npos)
    die("a NULL runtime was not refused");
  o.runtime = rt;
  o.servers = 2;
  if (gw_ps_create(comm, &o, &t, &ps) != GW_ERR_INVALID_ARGUMENT || std::string(gw_last_error()).find("servers") == std::string::npos)
    die("as many servers as ranks were accepted");
  o.servers = 1;
  o.mode = gw_ps_mode(7);
  if (gw_ps_create(comm, &o, &t, &ps) != GW_ERR_INVALID_ARGUMENT) die("mode 7 was accepted");
  o.mode = GW_PS_SYNC;
  if (gw_ps_create(comm, &o, &t, &ps) != GW_ERR_MISMATCH || std::string(gw_last_error()).find("different parameter counts") == std::string::npos)
    die(std::string("different parameter counts were not a mismatch: ") + gw_last_error());
  params.assign(10, 0.0f);
  t = f32(params.data(), params.size());
  check(gw_ps_create(comm, &o, &t, &ps), "gw_ps_create");
  std::vector<float> g(5, 0.0f);
  gw_tensor gt = f32(g.data(), g.size());
  if (g_rank == 0) {
    if (gw_ps_push_pull(ps, &gt, 0.1f) != GW_ERR_STATE) die("push_pull on a server was accepted");
    check(gw_ps_serve(ps), "gw_ps_serve");
  } else {
    if (gw_ps_serve(ps) != GW_ERR_STATE) die("serve on a worker was accepted");
    if (gw_ps_push_pull(ps, &gt, 0.1f) != GW_ERR_INVALID_ARGUMENT) die("a gradient of another size was accepted");
    g.assign(10, 1.0f);
    gt = f32(g.data(), g.size());
    if (gw_ps_push_pull(ps, &gt, NAN) != GW_ERR_INVALID_ARGUMENT) die("a NaN learning rate was accepted");
    check(gw_ps_push_pull(ps, &gt, 0.1f), "gw_ps_push_pull");
  }
  check(gw_ps_destroy(ps), "gw_ps_destroy");
}

}  // namespace

int main(int argc, char** argv) {
  init_rank_from_env();
  if (argc < 2) die("usage: ps_rank CASE [ARGS]");
  const std::string c = argv[1];
  std::string toml;
  if (c == "sync-equals-allreduce" && argc > 3) {
    toml = "[codec]\nname = \"" + std::string(argv[3]) + "\"\nerror_feedback = true\n";
  }
  if (c == "dead-worker" || c == "dead-server") {
    // A dead local rank shows up as a transport error with failure detection, else after timeout_s.
    setenv("MP_TIMEOUT_S", "5", 1);
    toml += "[transport.ucx]\nlocal_peer_failure_detection = true\n";
  }
  gw_runtime* rt = make_runtime(toml);
  gw_comm* comm = make_comm(rt);
  if (c == "sync-equals-allreduce") case_sync_equals_allreduce(comm, rt, uint32_t(std::atoi(argv[2])), argc > 3 ? argv[3] : "none");
  else if (c == "async-staleness") case_async_staleness(comm, rt);
  else if (c == "dead-worker") case_dead_worker(comm, rt);
  else if (c == "dead-server") case_dead_server(comm, rt);
  else if (c == "errors") case_errors(comm, rt);
  else die("unknown case " + c);
  const gw_status st = gw_comm_destroy(comm);
  if (st != GW_OK && c != "dead-worker") check(st, "gw_comm_destroy");
  check(gw_runtime_destroy(rt), "gw_runtime_destroy");
  std::printf("OK rank %d\n", g_rank);
  return 0;
}
