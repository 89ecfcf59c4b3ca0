// The sparse codecs' CUDA path through the public C ABI: gw_codec_encode / gw_codec_decode with
// GW_MEMORY_CUDA tensors give the same payload (wire header and body) and the same decoded bits as
// with host tensors. The runtime writes and reads the 32-byte wire header with the host while the
// CUDA kernels write and read the body on the device, so the payload must be reachable from both:
// here it is managed memory (cudaMallocManaged). Skipped without a CUDA device.
#include <cuda_runtime.h>
#include <gradwire/plugin.h>
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "gw_codec/portable.h"
#include "gw_test.hpp"

namespace {

bool have_device() {
  int n = 0;
  return cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
}

#define GW_CUDA_OK(expr)                                                                                 \
  do {                                                                                                   \
    const cudaError_t gw_cuda_e_ = (expr);                                                               \
    ASSERT_EQ(gw_cuda_e_, cudaSuccess) << #expr << " -> " << cudaGetErrorName(gw_cuda_e_) << ": "        \
                                       << cudaGetErrorString(gw_cuda_e_);                                \
  } while (0)

template <class T>
struct Managed {
  T* p = nullptr;
  cudaError_t alloc(size_t count) { return cudaMallocManaged(reinterpret_cast<void**>(&p), count ? count * sizeof(T) : 1); }
  Managed() = default;
  Managed(const Managed&) = delete;
  Managed& operator=(const Managed&) = delete;
  ~Managed() {
    if (p) cudaFree(p);
  }
};

struct Codec {
  gwtest::Runtime runtime;
  gw_codec* codec = nullptr;
  Codec(const std::string& name, const std::string& toml) : runtime(toml) {
    if (runtime.rt) {
      EXPECT_EQ(gw_codec_create(runtime.rt, name.c_str(), &codec), GW_OK) << gw_last_error();
    }
  }
  ~Codec() {
    if (codec) gw_codec_destroy(codec);
  }
};

TEST(GpuSparseCAbi, DeviceTensorsGiveTheHostPayloadAndOutput) {
  if (!have_device()) GTEST_SKIP() << "no CUDA device";
  int managed = 0;
  GW_CUDA_OK(cudaDeviceGetAttribute(&managed, cudaDevAttrManagedMemory, 0));
  if (!managed) GTEST_SKIP() << "device 0 has no managed memory";
  cudaStream_t stream = nullptr;
  GW_CUDA_OK(cudaStreamCreate(&stream));
  struct Spec {
    const char* codec;
    const char* toml;
  };
  const Spec specs[] = {{"topk", ""},
                        {"topk", "[codec.topk]\nselection = \"exact\"\nvalues = \"fp16\"\nindices = \"u32\"\nratio = 0.05\n"},
                        {"randomk", "[codec.randomk]\nvalues = \"fp16\"\nrescale = true\n"}};
  for (const Spec& spec : specs) {
    Codec c(spec.codec, spec.toml);
    ASSERT_NE(c.codec, nullptr) << spec.codec << " could not be created through the C ABI";
    for (uint64_t n : {uint64_t{257}, uint64_t{1000001}}) {
      for (gw_dtype dt : {GW_DTYPE_F32, GW_DTYPE_BF16}) {
        SCOPED_TRACE(std::string(spec.codec) + " [" + spec.toml + "] n=" + std::to_string(n) +
                     (dt == GW_DTYPE_F32 ? " f32" : " bf16"));
        const size_t es = dt == GW_DTYPE_F32 ? 4 : 2;
        std::mt19937 rng(static_cast<uint32_t>(n));
        std::normal_distribution<float> g;
        std::vector<uint8_t> host_in(n * es);
        for (uint64_t i = 0; i < n; ++i) {
          const float v = g(rng);
          if (es == 4) std::memcpy(&host_in[4 * i], &v, 4);
          else gwc::store_le16(&host_in[2 * i], gwc::f32_to_bf16(v));
        }
        uint64_t cap = 0;
        ASSERT_EQ(gw_codec_max_encoded_size(c.codec, dt, n, &cap), GW_OK) << gw_last_error();
        gw_codec_context ctx = GW_CODEC_CONTEXT_INIT;
        ctx.seed = 1234;
        ctx.step = 56;

        gw_tensor t = GW_TENSOR_INIT;
        t.dtype = dt;
        t.count = n;
        t.data = host_in.data();
        std::vector<uint8_t> host_payload(cap);
        uint64_t host_size = 0;
        ASSERT_EQ(gw_codec_encode(c.codec, &ctx, &t, host_payload.data(), cap, &host_size), GW_OK) << gw_last_error();

        Managed<uint8_t> d_in, payload;
        GW_CUDA_OK(d_in.alloc(host_in.size()));
        GW_CUDA_OK(payload.alloc(cap));
        GW_CUDA_OK(cudaMemcpy(d_in.p, host_in.data(), host_in.size(), cudaMemcpyHostToDevice));
        t.memory = GW_MEMORY_CUDA;
        t.data = d_in.p;
        t.stream = stream;
        uint64_t dev_size = 0;
        ASSERT_EQ(gw_codec_encode(c.codec, &ctx, &t, payload.p, cap, &dev_size), GW_OK) << gw_last_error();
        GW_CUDA_OK(cudaStreamSynchronize(stream));
        ASSERT_EQ(dev_size, host_size);
        for (uint64_t i = 0; i < host_size; ++i)
          ASSERT_EQ(payload.p[i], host_payload[i]) << "first differing payload byte " << i << " of " << host_size
                                                   << (i < GW_WIRE_HEADER_SIZE ? " (in the wire header)" : "");

        for (uint32_t flags : {0u, static_cast<uint32_t>(GW_DECODE_ACCUMULATE)}) {
          std::vector<uint8_t> host_out(n * es, 0x3c);  // accumulate adds to 1.01 (bf16 0x3c3c) / 0.0115 (f32)
          Managed<uint8_t> d_out;
          GW_CUDA_OK(d_out.alloc(n * es));
          std::memcpy(d_out.p, host_out.data(), n * es);
          gw_tensor o = GW_TENSOR_INIT;
          o.dtype = dt;
          o.count = n;
          o.data = host_out.data();
          ASSERT_EQ(gw_codec_decode(c.codec, &ctx, host_payload.data(), host_size, &o, flags), GW_OK) << gw_last_error();
          o.memory = GW_MEMORY_CUDA;
          o.data = d_out.p;
          o.stream = stream;
          ASSERT_EQ(gw_codec_decode(c.codec, &ctx, payload.p, dev_size, &o, flags), GW_OK) << gw_last_error();
          GW_CUDA_OK(cudaStreamSynchronize(stream));
          ASSERT_EQ(std::memcmp(d_out.p, host_out.data(), n * es), 0)
              << "device decode differs from the host decode (flags " << flags << ")";
        }
      }
    }
  }
  cudaStreamDestroy(stream);
}

}  // namespace
