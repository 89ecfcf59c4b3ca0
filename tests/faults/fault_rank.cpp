// One rank of the process-level fault tests, started by `gradwire run -n N [--keep-going] -- fault_rank
// WORKLOAD FAULT VICTIM TAG`. Every rank loops over WORKLOAD; on rank VICTIM a second thread injects
// FAULT in the middle of iteration FAULT_AT (default 2), FAULT_DELAY_MS (default 20) after the main
// thread entered it:
//   kill   SIGKILL to this process;
//   stop   SIGSTOP to this process (the driver sends SIGCONT);
//   abort  gw_comm_abort while the main thread waits in the call.
// Workloads: allreduce (64 MiB f32, in place, avg), compressed (gw_allreduce_compressed of 16 MiB f32
// with FAULT_CODEC, default int8), sync-async (gw_sync_step with the async schedule, int8 with error
// feedback, two 8 MiB tensors). FAULT_LINGER_S (default 0): seconds the victim waits after its error
// before destroying its communicator and exiting. TAG is only there so the driver can find leftover processes.
//
// What it prints (the driver, faults_test.cpp, parses it):
//   "FAULT <fault> pid <pid> at <wall seconds>"            the victim, just before the fault
//   "EXPECTED-ERROR <status> at <wall seconds> iteration <k>: <message>"   the call that failed
//   "DESTROYED <status>"                                    after gw_sync/gw_comm/gw_runtime destroy
// and exits 0; "FAIL ..." and exit 1 when the loop ends without an error or a destroy fails.
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

#include "common.hpp"

using namespace faults;

namespace {

std::atomic<int> g_iteration{-1};

struct Workload {
  virtual ~Workload() = default;
  virtual gw_status step(int k) = 0;
  virtual gw_status destroy() { return GW_OK; }
};

struct Allreduce : Workload {
  gw_comm* comm;
  std::vector<float> buf = std::vector<float>(16u << 20, 1.0f);  // 64 MiB
  explicit Allreduce(gw_comm* c) : comm(c) {}
  gw_status step(int) override {
    gw_tensor t = tensor(GW_DTYPE_F32, buf.data(), buf.size());
    return gw_allreduce(comm, &t, &t, GW_REDUCE_AVG);
  }
};

struct Compressed : Workload {
  gw_comm* comm;
  gw_codec* codec = nullptr;
  std::vector<float> in = std::vector<float>(4u << 20), out = std::vector<float>(4u << 20);
  Compressed(gw_comm* c, gw_runtime* rt) : comm(c) {
    check(gw_codec_create(rt, env_or("FAULT_CODEC", "int8").c_str(), &codec), "gw_codec_create");
    for (size_t i = 0; i < in.size(); ++i) in[i] = float(int((i * 7 + size_t(g_rank)) % 13) - 6) * 0.125f;
  }
  gw_status step(int k) override {
    gw_codec_context ctx = GW_CODEC_CONTEXT_INIT;
    ctx.seed = 42;
    ctx.step = uint64_t(k);
    gw_tensor ti = tensor(GW_DTYPE_F32, in.data(), in.size()), to = tensor(GW_DTYPE_F32, out.data(), out.size());
    return gw_allreduce_compressed(comm, codec, &ctx, &ti, &to, GW_REDUCE_AVG);
  }
  gw_status destroy() override { return gw_codec_destroy(codec); }
};

struct SyncAsync : Workload {
  gw_sync* sync = nullptr;
  std::vector<float> a = std::vector<float>(2u << 20), b = std::vector<float>(2u << 20);
  SyncAsync(gw_comm* comm, gw_runtime* rt) {
    gw_sync_options o = GW_SYNC_OPTIONS_INIT;
    o.runtime = rt;
    check(gw_sync_create(comm, &o, &sync), "gw_sync_create");
    gw_tensor ta = tensor(GW_DTYPE_F32, a.data(), a.size()), tb = tensor(GW_DTYPE_F32, b.data(), b.size());
    check(gw_sync_register(sync, "a", &ta, nullptr), "gw_sync_register a");
    check(gw_sync_register(sync, "b", &tb, nullptr), "gw_sync_register b");
    check(gw_sync_finalize(sync), "gw_sync_finalize");
  }
  gw_status step(int k) override {
    for (size_t i = 0; i < a.size(); ++i) a[i] = float(int((i + size_t(k) + size_t(g_rank)) % 9) - 4);
    for (size_t i = 0; i < b.size(); ++i) b[i] = float(int((i * 3 + size_t(k)) % 7)) * 0.25f;
    uint32_t flags = 0;
    return gw_sync_step(sync, &flags);
  }
  gw_status destroy() override { return gw_sync_destroy(sync); }
};

// The victim's second thread: waits for the main thread to enter iteration `at`, then injects the fault.
void inject(const std::string& fault, int at, int delay_ms, gw_comm* comm) {
  while (g_iteration.load() < at) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms));
  std::printf("FAULT %s pid %d at %.6f\n", fault.c_str(), int(getpid()), wall_seconds());
  std::fflush(stdout);
  if (fault == "kill") kill(getpid(), SIGKILL);
  else if (fault == "stop") kill(getpid(), SIGSTOP);
  else if (fault == "abort") gw_comm_abort(comm);
}

}  // namespace

int main(int argc, char** argv) {
  init_rank_from_env();
  if (argc < 4) die("usage: fault_rank allreduce|compressed|sync-async kill|stop|abort VICTIM [TAG]");
  const std::string workload = argv[1], fault = argv[2];
  const int victim = std::atoi(argv[3]);
  const int at = std::atoi(env_or("FAULT_AT", "2").c_str());
  const int delay_ms = std::atoi(env_or("FAULT_DELAY_MS", "20").c_str());
  if (fault != "kill" && fault != "stop" && fault != "abort") die("unknown fault " + fault);

  std::string toml;
  if (workload == "sync-async")
    toml = "[codec]\nname = \"int8\"\nerror_feedback = true\n[schedule]\nname = \"async\"\n[schedule.async]\n"
           "staleness = 1\n";
  gw_runtime* rt = make_runtime(toml);
  gw_comm* comm = make_comm(rt);
  Workload* w = nullptr;
  if (workload == "allreduce") w = new Allreduce(comm);
  else if (workload == "compressed") w = new Compressed(comm, rt);
  else if (workload == "sync-async") w = new SyncAsync(comm, rt);
  else die("unknown workload " + workload);

  std::thread injector;
  if (g_rank == victim) injector = std::thread(inject, fault, at, delay_ms, comm);
  for (int k = 0; k < 100000; ++k) {
    g_iteration.store(k);
    const gw_status st = w->step(k);
    if (st == GW_OK) continue;
    const double when = wall_seconds();
    std::printf("EXPECTED-ERROR %s at %.6f iteration %d: %s\n", gw_status_string(st), when, k, gw_last_error());
    std::fflush(stdout);
    if (injector.joinable()) injector.join();
    // FAULT_LINGER_S: the victim stays alive this long before it destroys anything (an application that
    // handles the error and goes on), so the others cannot learn of it from its exit.
    if (g_rank == victim) usleep(useconds_t(std::atof(env_or("FAULT_LINGER_S", "0").c_str()) * 1e6));
    const gw_status destroyed = w->destroy();
    delete w;
    check(destroyed, "destroying the workload after the error");
    check(gw_comm_destroy(comm), "gw_comm_destroy after the error");
    check(gw_runtime_destroy(rt), "gw_runtime_destroy after the error");
    say("DESTROYED GW_OK");
    return 0;
  }
  die("100000 iterations and no error: the fault was not seen");
}
