// One rank of the native-collective dispatch test, started by `gradwire run -n N -- native_rank
// PLUGIN_DIR UCX_LIBRARY`. The communicator runs over the test transport "hostcoll" (native collectives on
// host memory, hostcoll_transport.cpp). Each collective's result is compared with the exact reference,
// and the transport's own call counters (read through its plugin-wide extension) must show that the
// runtime handed allreduce, allgather, broadcast and reduce-scatter to it, and nothing else. A CUDA
// tensor must be refused with GW_ERR_UNSUPPORTED naming the transport and its memory kinds. Prints
// "OK rank R" or "FAIL rank R: ..." and exits 1.
#include <dlfcn.h>
#include <gradwire/gradwire.h>
#include <gradwire/plugin.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "../support/rank_setup.hpp"

namespace {

using gwrank::check;
using gwrank::die;
using gwrank::g_rank;
using gwrank::tensor;

const std::atomic<uint64_t>* g_calls = nullptr;
uint64_t calls(int kind) { return g_calls[kind].load(); }

// Runs `body`, then checks that exactly the native call `kind` (-1: none) was made.
template <class F>
void expect_native(int kind, const std::string& what, F&& body) {
  uint64_t before[4];
  for (int k = 0; k < 4; ++k) before[k] = calls(k);
  body();
  for (int k = 0; k < 4; ++k) {
    const uint64_t want = before[k] + (k == kind ? 1 : 0);
    if (calls(k) != want)
      die(what + ": the transport's native call counter " + std::to_string(k) + " is " + std::to_string(calls(k)) +
          ", expected " + std::to_string(want));
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) die("usage: native_rank PLUGIN_DIR UCX_LIBRARY");
  const std::string dir = argv[1];
  const std::string toml = "[runtime]\nplugin_path = [\"" + dir + "\"]\ntimeout_s = 60\n[transport]\ninter = \"hostcoll\"\n"
                           "[transport.hostcoll]\nucx_library = \"" + std::string(argv[2]) + "\"\n";
  gw_runtime_options o = GW_RUNTIME_OPTIONS_INIT;
  o.config_text = toml.c_str();
  gw_runtime* rt = nullptr;
  check(gw_runtime_create(&o, &rt), "gw_runtime_create");
  gw_comm_options co = GW_COMM_OPTIONS_INIT;
  gw_comm* comm = nullptr;
  check(gw_comm_create(rt, &co, &comm), "gw_comm_create");
  g_rank = int(gw_comm_rank(comm));
  const int n = int(gw_comm_size(comm));

  // The plugin the runtime loaded (the same library, so the same counters).
  void* lib = dlopen((dir + "/libgw-hostcoll.so").c_str(), RTLD_NOW | RTLD_NOLOAD);
  if (lib == nullptr) die("libgw-hostcoll.so is not loaded in this process");
  auto entry = reinterpret_cast<gw_plugin_entry_fn>(dlsym(lib, GW_PLUGIN_ENTRY_NAME));
  const gw_plugin_descriptor* d = entry(GW_ABI_VERSION_MAJOR, GW_ABI_VERSION_MINOR);
  g_calls = static_cast<const std::atomic<uint64_t>*>(d->get_extension(nullptr, "gw.test.hostcoll.calls/1"));
  if (g_calls == nullptr) die("the hostcoll plugin has no call counters");

  const uint64_t count = 1000;
  // allreduce f32 sum, out of place; then f64 avg in place; bf16 max.
  expect_native(0, "allreduce f32 sum", [&] {
    std::vector<float> in(count), out(count);
    for (uint64_t i = 0; i < count; ++i) in[i] = float(int64_t((g_rank * 7 + i * 13) % 11) - 5);
    gw_tensor ti = tensor(GW_DTYPE_F32, in.data(), count), to = tensor(GW_DTYPE_F32, out.data(), count);
    check(gw_allreduce(comm, &ti, &to, GW_REDUCE_SUM), "allreduce f32 sum");
    for (uint64_t i = 0; i < count; ++i) {
      float want = 0;
      for (int r = 0; r < n; ++r) want += float(int64_t((r * 7 + i * 13) % 11) - 5);
      if (out[i] != want) die("allreduce f32 sum: element " + std::to_string(i) + " is " + std::to_string(out[i]));
    }
  });
  expect_native(0, "allreduce f64 avg in place", [&] {
    std::vector<double> buf(count);
    for (uint64_t i = 0; i < count; ++i) buf[i] = double(g_rank + i);
    gw_tensor t = tensor(GW_DTYPE_F64, buf.data(), count);
    check(gw_allreduce(comm, &t, &t, GW_REDUCE_AVG), "allreduce f64 avg");
    for (uint64_t i = 0; i < count; ++i)
      if (buf[i] != double(i) + double(n - 1) / 2.0) die("allreduce f64 avg: element " + std::to_string(i));
  });
  expect_native(1, "allgather i32", [&] {
    std::vector<int32_t> in(count, g_rank + 1), out(count * n);
    gw_tensor ti = tensor(GW_DTYPE_I32, in.data(), count), to = tensor(GW_DTYPE_I32, out.data(), count * n);
    check(gw_allgather(comm, &ti, &to), "allgather");
    for (uint64_t i = 0; i < count * n; ++i)
      if (out[i] != int32_t(i / count) + 1) die("allgather: element " + std::to_string(i));
  });
  expect_native(2, "broadcast i64 from the last rank", [&] {
    std::vector<int64_t> buf(count, g_rank == n - 1 ? 42 : -1);
    gw_tensor t = tensor(GW_DTYPE_I64, buf.data(), count);
    check(gw_broadcast(comm, &t, uint32_t(n - 1)), "broadcast");
    for (uint64_t i = 0; i < count; ++i)
      if (buf[i] != 42) die("broadcast: element " + std::to_string(i));
  });
  expect_native(3, "reduce_scatter f32 max", [&] {
    std::vector<float> in(count * n), out(count);
    for (uint64_t i = 0; i < count * n; ++i) in[i] = float((g_rank * 3 + i) % 17);
    gw_tensor ti = tensor(GW_DTYPE_F32, in.data(), count * n), to = tensor(GW_DTYPE_F32, out.data(), count);
    check(gw_reduce_scatter(comm, &ti, &to, GW_REDUCE_MAX), "reduce_scatter");
    for (uint64_t i = 0; i < count; ++i) {
      float want = 0;
      for (int r = 0; r < n; ++r) want = std::max(want, float((r * 3 + g_rank * count + i) % 17));
      if (out[i] != want) die("reduce_scatter: element " + std::to_string(i));
    }
  });
  // allgatherv and the barrier have no native form: the runtime's own algorithms run, over the
  // transport's point-to-point.
  expect_native(-1, "allgatherv", [&] {
    std::vector<uint64_t> counts(n);
    uint64_t total = 0;
    for (int r = 0; r < n; ++r) total += (counts[r] = uint64_t(r + 1));
    std::vector<int32_t> in(uint64_t(g_rank + 1), g_rank), out(total);
    gw_tensor ti = tensor(GW_DTYPE_I32, in.data(), in.size()), to = tensor(GW_DTYPE_I32, out.data(), total);
    check(gw_allgatherv(comm, &ti, &to, counts.data()), "allgatherv");
    uint64_t k = 0;
    for (int r = 0; r < n; ++r)
      for (int j = 0; j <= r; ++j)
        if (out[k++] != r) die("allgatherv: element " + std::to_string(k - 1));
    check(gw_barrier(comm), "barrier");
  });
  // Device memory: the transport carries host memory only, so the runtime refuses before touching it.
  expect_native(-1, "cuda tensor", [&] {
    float fake = 0;
    gw_tensor t = tensor(GW_DTYPE_F32, &fake, 1);
    t.memory = GW_MEMORY_CUDA;
    const gw_status st = gw_allreduce(comm, &t, &t, GW_REDUCE_SUM);
    const std::string msg = gw_last_error();
    if (st != GW_ERR_UNSUPPORTED) die(std::string("allreduce of a CUDA tensor returned ") + gw_status_string(st));
    if (msg.find("'hostcoll' carries host memory") == std::string::npos)
      die("allreduce of a CUDA tensor: the message does not name the transport and its memory kinds: " + msg);
    const uint32_t peer = (uint32_t(g_rank) + 1) % gw_comm_size(comm);  // another rank: sends to oneself are refused first
    const gw_status sst = gw_send(comm, &t, peer, 1);
    if (sst != GW_ERR_UNSUPPORTED) die(std::string("send of a CUDA tensor returned ") + gw_status_string(sst));
  });
  check(gw_comm_destroy(comm), "gw_comm_destroy");
  gw_runtime_destroy(rt);
  std::printf("OK rank %d\n", g_rank);
  return 0;
}
