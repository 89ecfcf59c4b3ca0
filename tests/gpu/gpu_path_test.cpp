// Device tensors through the C ABI on one rank (label gpu; skipped without a CUDA device): the compressed
// allreduce and gw_sync on device f32 and bf16 tensors give the host path's bits, and with
// [transport] device = "nccl" the uncompressed collectives on device tensors run through NCCL.
#include <cuda_runtime_api.h>
#include <gradwire/gradwire.h>
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "gw_test.hpp"

namespace {

bool have_device() {
  int n = 0;
  return cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
}

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
};

gw_tensor tensor(gw_memory_kind m, gw_dtype dt, void* data, uint64_t count) {
  gw_tensor t = GW_TENSOR_INIT;
  t.memory = m;
  t.dtype = dt;
  t.data = data;
  t.count = count;
  return t;
}

struct OneRank {
  gw_runtime* rt = nullptr;
  gw_comm* comm = nullptr;
  explicit OneRank(const std::string& toml) {
    EXPECT_EQ(gwtest::create_runtime(toml, &rt), GW_OK) << gw_last_error();
    gw_comm_options o = GW_COMM_OPTIONS_INIT;
    o.rank = 0;
    o.world_size = 1;
    o.root_address = "127.0.0.1";
    EXPECT_EQ(gw_comm_create(rt, &o, &comm), GW_OK) << gw_last_error();
  }
  ~OneRank() {
    if (comm) gw_comm_destroy(comm);
    if (rt) gw_runtime_destroy(rt);
  }
};

std::vector<float> values(size_t n) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = float(int(i * 37 % 101) - 50) / 7.0f;
  return v;
}

TEST(DevicePath, CompressedAllreduceOnDeviceEqualsHostBits) {
  if (!have_device()) GTEST_SKIP() << "no CUDA device";
  OneRank r("");
  for (const char* name : {"int8", "onebit", "bf16", "none"}) {
    gw_codec* codec = nullptr;
    ASSERT_EQ(gw_codec_create(r.rt, name, &codec), GW_OK) << gw_last_error();
    std::vector<float> host = values(100003);
    Device<float> dev(host);
    gw_tensor th = tensor(GW_MEMORY_HOST, GW_DTYPE_F32, host.data(), host.size());
    gw_tensor td = tensor(GW_MEMORY_CUDA, GW_DTYPE_F32, dev.p, dev.n);
    ASSERT_EQ(gw_allreduce_compressed(r.comm, codec, nullptr, &th, &th, GW_REDUCE_AVG), GW_OK) << gw_last_error();
    ASSERT_EQ(gw_allreduce_compressed(r.comm, codec, nullptr, &td, &td, GW_REDUCE_AVG), GW_OK) << gw_last_error();
    EXPECT_EQ(std::memcmp(dev.get().data(), host.data(), 4 * host.size()), 0) << name;
    gw_codec_destroy(codec);
  }
}

// powersgd's rounds on device tensors (M, P and the residuals on the device, each round's vector summed on
// the host) write the host path's bits, over two calls (the second warm-started, with the first's residual).
TEST(DevicePath, PowerSgdRoundsOnDeviceEqualHostBits) {
  if (!have_device()) GTEST_SKIP() << "no CUDA device";
  OneRank r("[codec.powersgd]\nrank = 3\n");
  gw_codec* on_host = nullptr;
  gw_codec* on_device = nullptr;
  ASSERT_EQ(gw_codec_create(r.rt, "powersgd", &on_host), GW_OK) << gw_last_error();
  ASSERT_EQ(gw_codec_create(r.rt, "powersgd", &on_device), GW_OK) << gw_last_error();
  const gw_tensor_shape shapes[] = {{0, 300, 200}, {60000 + 3, 97, 401}};
  for (uint64_t step = 0; step < 2; ++step) {
    std::vector<float> host = values(60000 + 3 + 97 * 401 + 11);
    Device<float> dev(host);
    gw_codec_context ctx = GW_CODEC_CONTEXT_INIT;
    ctx.seed = 5;
    ctx.step = step;
    ctx.buffer_id = 2;
    ctx.shapes = shapes;
    ctx.num_shapes = 2;
    gw_tensor th = tensor(GW_MEMORY_HOST, GW_DTYPE_F32, host.data(), host.size());
    gw_tensor td = tensor(GW_MEMORY_CUDA, GW_DTYPE_F32, dev.p, dev.n);
    ASSERT_EQ(gw_allreduce_compressed(r.comm, on_host, &ctx, &th, &th, GW_REDUCE_AVG), GW_OK) << gw_last_error();
    ASSERT_EQ(gw_allreduce_compressed(r.comm, on_device, &ctx, &td, &td, GW_REDUCE_AVG), GW_OK) << gw_last_error();
    EXPECT_EQ(std::memcmp(dev.get().data(), host.data(), 4 * host.size()), 0) << "step " << step;
  }
  gw_codec_destroy(on_host);
  gw_codec_destroy(on_device);
}

// Three ranks on this machine's devices, every codec with CUDA kernels and so every compressed
// algorithm: encoded and decoded on the device, only payloads staged to the host (tests/gpu/device_rank).
TEST(DevicePath, CompressedAllreduceOnDeviceEqualsHostBitsOnThreeRanks) {
  if (!have_device()) GTEST_SKIP() << "no CUDA device";
  gwtest::expect_every_rank_ok(gwtest::run_command(gwtest::launch_command(3, GW_DEVICE_RANK, "", "", 120)), 3);
}

// Without a usable device (this CI machine), a CUDA tensor is refused at the call with a message that
// names the device and the fix, before any collective starts: no crash, no hang.
TEST(DevicePath, ACudaTensorWithoutAUsableDeviceIsRefusedAtTheCall) {
  if (have_device()) GTEST_SKIP() << "a CUDA device is present";
  OneRank r("");
  gw_codec* codec = nullptr;
  ASSERT_EQ(gw_codec_create(r.rt, "int8", &codec), GW_OK) << gw_last_error();
  float fake[16] = {};
  gw_tensor td = tensor(GW_MEMORY_CUDA, GW_DTYPE_F32, fake, 16);
  const gw_status st = gw_allreduce_compressed(r.comm, codec, nullptr, &td, &td, GW_REDUCE_AVG);
  EXPECT_EQ(st, GW_ERR_INVALID_ARGUMENT) << gw_last_error();
  const std::string message = gw_last_error();
  EXPECT_NE(message.find("CUDA device 0"), std::string::npos) << message;
  EXPECT_NE(message.find("host memory"), std::string::npos) << message;
  // The communicator is still usable: a host allreduce after the refusal completes.
  std::vector<float> host = values(100);
  gw_tensor th = tensor(GW_MEMORY_HOST, GW_DTYPE_F32, host.data(), host.size());
  EXPECT_EQ(gw_allreduce_compressed(r.comm, codec, nullptr, &th, &th, GW_REDUCE_AVG), GW_OK) << gw_last_error();
  gw_codec_destroy(codec);
}

TEST(DevicePath, SyncWithDeviceF32AndBf16Gradients) {
  if (!have_device()) GTEST_SKIP() << "no CUDA device";
  for (gw_dtype dt : {GW_DTYPE_F32, GW_DTYPE_BF16}) {
    const size_t n = 5000;
    const size_t es = dt == GW_DTYPE_F32 ? 4 : 2;
    std::vector<unsigned char> host(n * es);
    std::vector<float> v = values(n);
    for (size_t i = 0; i < n; ++i) {
      if (dt == GW_DTYPE_F32) std::memcpy(&host[4 * i], &v[i], 4);
      else {
        uint32_t u;
        std::memcpy(&u, &v[i], 4);
        const uint16_t h = uint16_t((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
        std::memcpy(&host[2 * i], &h, 2);
      }
    }
    Device<unsigned char> dev(host);
    std::vector<std::vector<unsigned char>> results;
    for (gw_memory_kind m : {GW_MEMORY_HOST, GW_MEMORY_CUDA}) {
      OneRank r("[codec]\nname = \"int8\"\nerror_feedback = true\n");
      gw_sync_options o = GW_SYNC_OPTIONS_INIT;
      o.runtime = r.rt;
      gw_sync* s = nullptr;
      ASSERT_EQ(gw_sync_create(r.comm, &o, &s), GW_OK) << gw_last_error();
      gw_tensor g = tensor(m, dt, m == GW_MEMORY_HOST ? static_cast<void*>(host.data()) : dev.p, n);
      ASSERT_EQ(gw_sync_register(s, "g", &g, nullptr), GW_OK) << gw_last_error();
      ASSERT_EQ(gw_sync_finalize(s), GW_OK) << gw_last_error();
      uint32_t flags = 0;
      for (int step = 0; step < 3; ++step) ASSERT_EQ(gw_sync_step(s, &flags), GW_OK) << gw_last_error();
      gw_sync_destroy(s);
      results.push_back(m == GW_MEMORY_HOST ? host : dev.get());
    }
    EXPECT_EQ(results[0], results[1]) << gw_dtype_name(dt) << ": device gradients differ from host ones";
  }
}

TEST(DevicePath, NativeCollectivesOnDeviceTensorsGoThroughNccl) {
  if (!have_device()) GTEST_SKIP() << "no CUDA device";
  OneRank r("[transport]\ndevice = \"nccl\"\n");
  std::vector<float> v = values(4096);
  Device<float> in(v), out(std::vector<float>(v.size(), 0));
  gw_tensor ti = tensor(GW_MEMORY_CUDA, GW_DTYPE_F32, in.p, in.n), to = tensor(GW_MEMORY_CUDA, GW_DTYPE_F32, out.p, out.n);
  ASSERT_EQ(gw_allreduce(r.comm, &ti, &to, GW_REDUCE_SUM), GW_OK) << gw_last_error();
  EXPECT_EQ(out.get(), v);
  ASSERT_EQ(gw_broadcast(r.comm, &to, 0), GW_OK) << gw_last_error();
  ASSERT_EQ(gw_allgather(r.comm, &ti, &to), GW_OK) << gw_last_error();
  EXPECT_EQ(out.get(), v);
  ASSERT_EQ(gw_reduce_scatter(r.comm, &ti, &to, GW_REDUCE_AVG), GW_OK) << gw_last_error();
  EXPECT_EQ(out.get(), v);
  // Point-to-point of device tensors is refused clearly.
  EXPECT_EQ(gw_send(r.comm, &ti, 0, 1), GW_ERR_UNSUPPORTED);
}

TEST(DevicePath, DeviceTensorsWithoutADeviceTransportAreRefusedClearly) {
  if (!have_device()) GTEST_SKIP() << "no CUDA device";
  OneRank r("");
  Device<float> in(values(16));
  gw_tensor t = tensor(GW_MEMORY_CUDA, GW_DTYPE_F32, in.p, in.n);
  EXPECT_EQ(gw_allreduce(r.comm, &t, &t, GW_REDUCE_SUM), GW_ERR_UNSUPPORTED);
  EXPECT_NE(std::string(gw_last_error()).find("[transport] device"), std::string::npos) << gw_last_error();
}

}  // namespace
