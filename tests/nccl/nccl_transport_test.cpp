// The NCCL transport plugin driven through its vtable on one rank. Without a CUDA device (CI) the
// descriptor is checked and creation must fail with a clear GW_ERR_UNSUPPORTED; with one (tests/gpu/
// check.sh) every native collective, point-to-point to itself, abort of a pending operation and the
// timeout run for real.
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <gradwire/gradwire.h>
#include <gradwire/plugin.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <thread>
#include <map>
#include <string>
#include <vector>

#include "gw_test.hpp"

struct gw_config {
  std::map<std::string, int64_t> ints;
};

namespace {

thread_local std::string g_error;

const gw_host* host() {
  static const gw_host h = [] {
    gw_host x{};
    x.struct_size = sizeof(gw_host);
    x.abi_major = GW_ABI_VERSION_MAJOR;
    x.abi_minor = GW_ABI_VERSION_MINOR;
    x.log = [](void*, gw_log_level, const char*, const char*) {};
    x.set_error = [](void*, const char* m) { g_error = m; };
    x.config_get_bool = [](const gw_config*, const char*, int32_t*) { return GW_ERR_NOT_FOUND; };
    x.config_get_int = [](const gw_config* c, const char* k, int64_t* out) {
      auto it = c->ints.find(k);
      if (it == c->ints.end()) return GW_ERR_NOT_FOUND;
      *out = it->second;
      return GW_OK;
    };
    x.config_get_float = [](const gw_config*, const char*, double*) { return GW_ERR_NOT_FOUND; };
    x.config_get_string = [](const gw_config*, const char*, const char**) { return GW_ERR_NOT_FOUND; };
    return x;
  }();
  return &h;
}

const gw_transport_vtable* load() {
  void* lib = dlopen(GW_PLUGIN_DIR "/libgw-nccl.so", RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) return nullptr;
  auto entry = reinterpret_cast<gw_plugin_entry_fn>(dlsym(lib, GW_PLUGIN_ENTRY_NAME));
  const gw_plugin_descriptor* d = entry(GW_ABI_VERSION_MAJOR, GW_ABI_VERSION_MINOR);
  return static_cast<const gw_transport_vtable*>(d->components[0].vtable);
}

bool have_device() {
  int n = 0;
  return cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
}

TEST(NcclTransport, DescriptorDeclaresDeviceMemoryAndEveryNativeCollective) {
  void* lib = dlopen(GW_PLUGIN_DIR "/libgw-nccl.so", RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(lib, nullptr) << dlerror();
  auto entry = reinterpret_cast<gw_plugin_entry_fn>(dlsym(lib, GW_PLUGIN_ENTRY_NAME));
  ASSERT_NE(entry, nullptr);
  const gw_plugin_descriptor* d = entry(GW_ABI_VERSION_MAJOR, GW_ABI_VERSION_MINOR);
  ASSERT_NE(d, nullptr);
  ASSERT_EQ(d->num_components, 1u);
  EXPECT_STREQ(d->components[0].name, "nccl");
  EXPECT_EQ(d->components[0].kind, GW_COMPONENT_TRANSPORT);
  const auto* v = static_cast<const gw_transport_vtable*>(d->components[0].vtable);
  EXPECT_EQ(v->memory_kinds, 1u << GW_MEMORY_CUDA);
  EXPECT_NE(v->allreduce_start, nullptr);
  EXPECT_NE(v->allgather_start, nullptr);
  EXPECT_NE(v->broadcast_start, nullptr);
  EXPECT_NE(v->reduce_scatter_start, nullptr);
  EXPECT_EQ(entry(GW_ABI_VERSION_MAJOR + 1, 0), nullptr) << "another ABI major must be refused";
}

// The runtime's loader validates the descriptor and the key table (names, clashes with [transport]).
TEST(NcclTransport, LoadsIntoTheRuntime) {
  FILE* p = popen((std::string(GW_CLI) + " plugins 2>&1").c_str(), "r");
  ASSERT_NE(p, nullptr);
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  pclose(p);
  EXPECT_NE(out.find("nccl 1.0.0"), std::string::npos) << out;
  EXPECT_NE(out.find("transport nccl:"), std::string::npos) << out;
  EXPECT_EQ(out.find("FAILED"), std::string::npos) << out;
}

TEST(NcclTransport, WithoutADeviceCreationIsAClearError) {
  if (have_device()) GTEST_SKIP() << "a CUDA device is present";
  const gw_transport_vtable* v = load();
  ASSERT_NE(v, nullptr);
  gw_transport_init init = GW_TRANSPORT_INIT_INIT;
  void* t = nullptr;
  g_error.clear();
  EXPECT_EQ(v->create(nullptr, host(), nullptr, &init, &t), GW_ERR_UNSUPPORTED);
  EXPECT_EQ(t, nullptr);
  EXPECT_NE(g_error.find("no CUDA device"), std::string::npos) << g_error;
  EXPECT_NE(g_error.find("[transport]"), std::string::npos) << g_error;
}

// The communicator's device transport ([transport] device = "nccl") on a machine without a GPU: creation
// fails on the rank with the transport's reason, nothing hangs.
TEST(NcclTransport, AsTheDeviceTransportWithoutADeviceTheCommunicatorRefusesClearly) {
  if (have_device()) GTEST_SKIP() << "a CUDA device is present";
  gw_runtime* rt = nullptr;
  ASSERT_EQ(gwtest::create_runtime("[transport]\ndevice = \"nccl\"\n", &rt), GW_OK) << gw_last_error();
  gw_comm_options o = GW_COMM_OPTIONS_INIT;
  o.rank = 0;
  o.world_size = 1;
  o.root_address = "127.0.0.1";
  gw_comm* comm = nullptr;
  EXPECT_EQ(gw_comm_create(rt, &o, &comm), GW_ERR_UNSUPPORTED);
  EXPECT_EQ(comm, nullptr);
  EXPECT_NE(std::string(gw_last_error()).find("no CUDA device"), std::string::npos) << gw_last_error();
  gw_runtime_destroy(rt);
}

// ---- with a device ------------------------------------------------------------------------------

struct OneRank {
  const gw_transport_vtable* v = load();
  void* t = nullptr;
  explicit OneRank(double timeout_s = 60) {
    gw_transport_init init = GW_TRANSPORT_INIT_INIT;
    init.timeout_s = timeout_s;
    gw_config cfg;
    cfg.ints["cuda_device"] = 0;
    EXPECT_EQ(v->create(nullptr, host(), &cfg, &init, &t), GW_OK) << g_error;
    const void* blob = nullptr;
    uint64_t size = 0;
    EXPECT_EQ(v->local_address(t, &blob, &size), GW_OK);
    gw_status st;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while ((st = v->connect(t, &blob, &size)) == GW_IN_PROGRESS && std::chrono::steady_clock::now() < deadline)
      v->progress(t);
    EXPECT_EQ(st, GW_OK) << g_error;
  }
  ~OneRank() {
    if (t) v->destroy(t);
  }
  gw_status wait(gw_transport_request* r, double limit_s = 60) {
    gw_status st;
    uint64_t bytes = 0;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(limit_s);
    while ((st = v->test(t, r, &bytes)) == GW_IN_PROGRESS && std::chrono::steady_clock::now() < deadline)
      v->progress(t);
    return st;
  }
};

template <class T>
struct Device {
  T* p = nullptr;
  size_t n;
  explicit Device(const std::vector<T>& host) : n(host.size()) {
    void* raw = nullptr;
    cudaMalloc(&raw, n * sizeof(T));
    p = static_cast<T*>(raw);
    cudaMemcpy(p, host.data(), n * sizeof(T), cudaMemcpyHostToDevice);
  }
  ~Device() { cudaFree(p); }
  std::vector<T> get() const {
    std::vector<T> h(n);
    cudaMemcpy(h.data(), p, n * sizeof(T), cudaMemcpyDeviceToHost);
    return h;
  }
  gw_tensor tensor(gw_dtype dt) const {
    gw_tensor x = GW_TENSOR_INIT;
    x.memory = GW_MEMORY_CUDA;
    x.dtype = dt;
    x.device = 0;
    x.data = p;
    x.count = n;
    return x;
  }
};

TEST(NcclTransport, OneRankEveryNativeCollectiveAndPointToPoint) {
  if (!have_device()) GTEST_SKIP() << "no CUDA device";
  OneRank r;
  ASSERT_NE(r.t, nullptr);
  std::vector<float> values(1000);
  for (size_t i = 0; i < values.size(); ++i) values[i] = float(i) - 3.5f;
  Device<float> in(values), out(std::vector<float>(values.size(), 0));
  gw_tensor ti = in.tensor(GW_DTYPE_F32), to = out.tensor(GW_DTYPE_F32);
  gw_transport_request* q = nullptr;
  ASSERT_EQ(r.v->allreduce_start(r.t, &ti, &to, GW_REDUCE_SUM, &q), GW_OK) << g_error;
  EXPECT_EQ(r.wait(q), GW_OK) << g_error;
  r.v->request_free(r.t, q);
  EXPECT_EQ(out.get(), values);

  Device<float> gathered(std::vector<float>(values.size(), 0));
  gw_tensor tg = gathered.tensor(GW_DTYPE_F32);
  ASSERT_EQ(r.v->allgather_start(r.t, &ti, &tg, &q), GW_OK) << g_error;
  EXPECT_EQ(r.wait(q), GW_OK) << g_error;
  r.v->request_free(r.t, q);
  EXPECT_EQ(gathered.get(), values);

  ASSERT_EQ(r.v->broadcast_start(r.t, &tg, 0, &q), GW_OK) << g_error;
  EXPECT_EQ(r.wait(q), GW_OK) << g_error;
  r.v->request_free(r.t, q);
  EXPECT_EQ(gathered.get(), values);

  Device<float> scattered(std::vector<float>(values.size(), 0));
  gw_tensor ts = scattered.tensor(GW_DTYPE_F32);
  ASSERT_EQ(r.v->reduce_scatter_start(r.t, &ti, &ts, GW_REDUCE_AVG, &q), GW_OK) << g_error;
  EXPECT_EQ(r.wait(q), GW_OK) << g_error;
  r.v->request_free(r.t, q);
  EXPECT_EQ(scattered.get(), values);

  // bf16 max, in place.
  std::vector<uint16_t> halves(256, 0x3f80);  // 1.0
  Device<uint16_t> hb(halves);
  gw_tensor th = hb.tensor(GW_DTYPE_BF16);
  ASSERT_EQ(r.v->allreduce_start(r.t, &th, &th, GW_REDUCE_MAX, &q), GW_OK) << g_error;
  EXPECT_EQ(r.wait(q), GW_OK) << g_error;
  r.v->request_free(r.t, q);
  EXPECT_EQ(hb.get(), halves);

  // Point-to-point to itself: both directions in one group.
  Device<float> landing(std::vector<float>(values.size(), 0));
  gw_tensor tl = landing.tensor(GW_DTYPE_F32);
  gw_transport_request *s = nullptr, *rv = nullptr;
  ASSERT_EQ(r.v->send_start(r.t, 0, 7, &ti, &s), GW_OK) << g_error;
  ASSERT_EQ(r.v->recv_start(r.t, 0, 7, &tl, &rv), GW_OK) << g_error;
  EXPECT_EQ(r.wait(rv), GW_OK) << g_error;
  EXPECT_EQ(r.wait(s), GW_OK) << g_error;
  r.v->request_free(r.t, s);
  r.v->request_free(r.t, rv);
  EXPECT_EQ(landing.get(), values);

  // Host memory is refused with a clear message.
  gw_tensor host_tensor = GW_TENSOR_INIT;
  host_tensor.data = values.data();
  host_tensor.count = values.size();
  g_error.clear();
  EXPECT_EQ(r.v->send_start(r.t, 0, 1, &host_tensor, &s), GW_ERR_UNSUPPORTED);
  EXPECT_NE(g_error.find("host memory"), std::string::npos) << g_error;
}

// A stream held by a host function until `released` is set (by a thread, after a delay, so that nothing
// here can wait on it forever): an operation queued behind it stays pending.
struct HeldStream {
  cudaStream_t stream = nullptr;
  std::atomic<bool> released{false};
  std::thread releaser;
  HeldStream() {
    cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
    cudaLaunchHostFunc(stream, [](void* p) {
      auto* flag = static_cast<std::atomic<bool>*>(p);
      while (!flag->load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }, &released);
  }
  void release_after(double seconds) {
    releaser = std::thread([this, seconds] {
      std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
      released.store(true);
    });
  }
  ~HeldStream() {
    if (!releaser.joinable()) released.store(true);
    else releaser.join();
    cudaStreamSynchronize(stream);
    cudaStreamDestroy(stream);
  }
};

TEST(NcclTransport, AbortEndsAPendingOperation) {
  if (!have_device()) GTEST_SKIP() << "no CUDA device";
  OneRank r;
  ASSERT_NE(r.t, nullptr);
  HeldStream held;
  Device<float> buf(std::vector<float>(64, 1.0f));
  gw_tensor tb = buf.tensor(GW_DTYPE_F32);
  tb.stream = held.stream;
  gw_transport_request* q = nullptr;
  ASSERT_EQ(r.v->allreduce_start(r.t, &tb, &tb, GW_REDUCE_SUM, &q), GW_OK) << g_error;
  EXPECT_EQ(r.wait(q, 1.0), GW_IN_PROGRESS) << "the operation completed on a held stream";
  held.release_after(3.0);
  EXPECT_EQ(r.v->abort(r.t), GW_OK);
  EXPECT_EQ(r.wait(q), GW_ERR_ABORTED) << g_error;
  r.v->request_free(r.t, q);
  gw_transport_request* more = nullptr;
  gw_tensor plain = buf.tensor(GW_DTYPE_F32);
  ASSERT_EQ(r.v->allreduce_start(r.t, &plain, &plain, GW_REDUCE_SUM, &more), GW_OK);
  EXPECT_EQ(r.wait(more), GW_ERR_ABORTED) << "requests after an abort fail too";
  r.v->request_free(r.t, more);
}

TEST(NcclTransport, AnOperationPastTheTimeoutFailsAndAbortsTheCommunicator) {
  if (!have_device()) GTEST_SKIP() << "no CUDA device";
  OneRank r(0.5);
  ASSERT_NE(r.t, nullptr);
  HeldStream held;
  held.release_after(5.0);
  Device<float> buf(std::vector<float>(64, 1.0f));
  gw_tensor tb = buf.tensor(GW_DTYPE_F32);
  tb.stream = held.stream;
  gw_transport_request* q = nullptr;
  ASSERT_EQ(r.v->allreduce_start(r.t, &tb, &tb, GW_REDUCE_SUM, &q), GW_OK) << g_error;
  EXPECT_EQ(r.wait(q, 60), GW_ERR_TIMEOUT) << g_error;
  EXPECT_NE(g_error.find("timeout_s"), std::string::npos) << g_error;
  r.v->request_free(r.t, q);
}

}  // namespace
