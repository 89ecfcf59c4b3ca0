// G3 for the sparse codecs: topk and randomk encoded by their CUDA kernels write the CPU path's body
// bytes, and decode (plain and GW_DECODE_ACCUMULATE) to the CPU path's output bits, for every value
// and index format, both selection modes, f32/f16/bf16 tensors, sizes 1 .. 2^24, and inputs made to
// reach the selection's tie, zero and NaN paths. Device decoders refuse malformed bodies.
//
// The codec vtable is driven directly (direct_codec.hpp): a CUDA encode writes its body into device
// memory, while gw_codec_encode writes the wire header with the host, so the C ABI needs a payload
// both sides can reach; gpu_sparse_cabi_test.cpp covers that path with managed memory.
// Skipped when no CUDA device is present.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <iostream>
#include <map>
#include <memory>
#include <random>
#include <sstream>
#include <vector>

#include "direct_codec.hpp"
#include "gw_codec/portable.h"

namespace {

bool have_device() {
  int n = 0;
  return cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
}

std::string cuda_text(cudaError_t e) { return std::string(cudaGetErrorName(e)) + ": " + cudaGetErrorString(e); }

#define GW_CUDA_OK(expr)                                                             \
  do {                                                                               \
    const cudaError_t gw_cuda_e_ = (expr);                                           \
    ASSERT_EQ(gw_cuda_e_, cudaSuccess) << #expr << " -> " << cuda_text(gw_cuda_e_); \
  } while (0)

// Device memory owned by the test; freed on scope exit (also after a failed ASSERT).
struct DeviceBuffer {
  void* p = nullptr;
  cudaError_t alloc(size_t bytes) {
    release();
    return cudaMalloc(&p, bytes ? bytes : 1);
  }
  void release() {
    if (p) cudaFree(p);
    p = nullptr;
  }
  DeviceBuffer() = default;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer() { release(); }
};

struct Stream {
  cudaStream_t s = nullptr;
  ~Stream() {
    if (s) cudaStreamDestroy(s);
  }
};

// ---------------------------------------------------------------------------------------------------
// Inputs

enum class Kind { normal, ties, zeros, constant, specials };

const char* kind_name(Kind k) {
  switch (k) {
    case Kind::normal: return "normal";
    case Kind::ties: return "ties";
    case Kind::zeros: return "mostly-zeros";
    case Kind::constant: return "constant-magnitude";
    case Kind::specials: return "nan-inf-denormal";
  }
  return "?";
}

const char* dtype_text(gw_dtype dt) { return dt == GW_DTYPE_F32 ? "f32" : dt == GW_DTYPE_F16 ? "f16" : "bf16"; }
uint32_t elem_size(gw_dtype dt) { return dt == GW_DTYPE_F32 ? 4u : 2u; }

float element_value(gw_dtype dt, uint32_t bits) {
  if (dt == GW_DTYPE_F32) return gwc::f32_from_bits(bits);
  if (dt == GW_DTYPE_F16) return gwc::f16_to_f32(static_cast<uint16_t>(bits));
  return gwc::bf16_to_f32(static_cast<uint16_t>(bits));
}

// Values of kind `k` as f32 (converted to the tensor's dtype by to_bytes):
//   normal    normal * 10^U(-3, 3): many distinct magnitudes
//   ties      drawn from {±0, ±0.5, ±1, ±2}: the k-th magnitude is shared by many elements
//   zeros     0.3 % normal, the rest ±0: fewer nonzeros than k, so zeros (both signs) complete the set
//   constant  ±1.5: no threshold separates k elements; index order decides
//   specials  normal with 2 % of NaN, ±inf, denormals, half-precision overflow, ±0
std::vector<float> values(Kind k, uint64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> g(0.0f, 1.0f);
  std::uniform_real_distribution<float> u(-3.0f, 3.0f);
  std::vector<float> x(n);
  const float tie_set[] = {0.0f, -0.0f, 0.5f, -0.5f, 1.0f, -1.0f, 2.0f, -2.0f};
  const float specials[] = {NAN,       -NAN,    INFINITY, -INFINITY, 1e-40f, -1e-45f, 65504.0f,
                            -65520.0f, 3.4e38f, -0.0f,    0.0f,      1e30f,  -1e-30f, 7e4f};
  for (uint64_t i = 0; i < n; ++i) {
    switch (k) {
      case Kind::normal: x[i] = g(rng) * std::exp2(3.3219281f * u(rng)); break;
      case Kind::ties: x[i] = tie_set[rng() % 8]; break;
      case Kind::zeros: x[i] = (rng() % 1000 < 3) ? g(rng) : ((rng() & 1) ? 0.0f : -0.0f); break;
      case Kind::constant: x[i] = (rng() & 1) ? 1.5f : -1.5f; break;
      case Kind::specials:
        x[i] = (rng() % 50 == 0) ? specials[rng() % (sizeof specials / sizeof specials[0])] : g(rng);
        break;
    }
  }
  if (k == Kind::specials && n > 2) {
    // NaNs with payloads, signs and the signalling bit of their own.
    const uint32_t nan_bits[] = {0x7fc00001u, 0xffc00000u, 0x7f800001u, 0x7fffffffu, 0xff800123u};
    for (uint64_t j = 0; j < 5; ++j) x[(j * 7919u + 1) % n] = gwc::f32_from_bits(nan_bits[j]);
  }
  return x;
}

std::vector<uint8_t> to_bytes(const std::vector<float>& x, gw_dtype dt, Kind k) {
  const uint64_t n = x.size();
  std::vector<uint8_t> out(n * elem_size(dt));
  for (uint64_t i = 0; i < n; ++i) {
    if (dt == GW_DTYPE_F32) std::memcpy(&out[4 * i], &x[i], 4);
    else if (dt == GW_DTYPE_F16) gwc::store_le16(&out[2 * i], gwc::f32_to_f16(x[i]));
    else gwc::store_le16(&out[2 * i], gwc::f32_to_bf16(x[i]));
  }
  if (k == Kind::specials && dt != GW_DTYPE_F32 && n > 2) {
    // Half-precision NaNs with payloads, signalling ones, and the largest finite value.
    const uint16_t f16_bits[] = {0x7e01u, 0xfe00u, 0x7c01u, 0x7fffu, 0x7bffu};
    const uint16_t bf16_bits[] = {0x7fc1u, 0xffc0u, 0x7f81u, 0x7fffu, 0x7f7fu};
    for (uint64_t j = 0; j < 5; ++j)
      gwc::store_le16(&out[2 * ((j * 104729u + 1) % n)], dt == GW_DTYPE_F16 ? f16_bits[j] : bf16_bits[j]);
  }
  return out;
}

// What an accumulating decode adds to: values in [-1, 1] with a few bits of mantissa, in the output
// dtype (cheap to make for 2^24 elements).
std::vector<uint8_t> prior_bytes(uint64_t n, gw_dtype dt) {
  std::vector<float> x(n);
  for (uint64_t i = 0; i < n; ++i) x[i] = float(int((i * 2654435761u) % 2001u) - 1000) * 1e-3f;
  return to_bytes(x, dt, Kind::normal);
}

// ---------------------------------------------------------------------------------------------------
// Comparisons

void expect_same_body(const std::vector<uint8_t>& cpu, const std::vector<uint8_t>& gpu) {
  ASSERT_EQ(gpu.size(), cpu.size()) << "the GPU body has another size than the CPU body";
  if (cpu.empty() || std::memcmp(cpu.data(), gpu.data(), cpu.size()) == 0) return;
  for (size_t i = 0; i < cpu.size(); ++i) {
    if (cpu[i] == gpu[i]) continue;
    std::ostringstream around;
    for (size_t j = i; j < std::min(cpu.size(), i + 8); ++j) around << " " << std::hex << int(cpu[j]) << "/" << int(gpu[j]);
    FAIL() << "first differing body byte: " << i << " of " << cpu.size() << " (cpu/gpu bytes from there:" << around.str()
           << ")";
  }
}

// Bitwise equality of two decoded tensors. With `nan_payload_free`, a NaN may come out with another
// payload on the GPU (IEEE 754 leaves open which NaN an addition of a NaN returns, and an accumulating
// decode adds); such elements are counted in *nan_payloads, any other difference fails.
void expect_same_output(const std::vector<uint8_t>& cpu, const std::vector<uint8_t>& gpu, gw_dtype dt,
                        bool nan_payload_free, uint64_t* nan_payloads) {
  ASSERT_EQ(gpu.size(), cpu.size());
  if (cpu.empty() || std::memcmp(cpu.data(), gpu.data(), cpu.size()) == 0) return;
  const uint32_t es = elem_size(dt);
  for (size_t i = 0; i < cpu.size() / es; ++i) {
    uint32_t a = 0, b = 0;
    std::memcpy(&a, &cpu[i * es], es);
    std::memcpy(&b, &gpu[i * es], es);
    if (a == b) continue;
    const float fa = element_value(dt, a), fb = element_value(dt, b);
    if (nan_payload_free && std::isnan(fa) && std::isnan(fb)) {
      ++*nan_payloads;
      continue;
    }
    FAIL() << "decoded element " << i << " differs: cpu bits 0x" << std::hex << a << " (" << fa << "), gpu bits 0x"
           << b << " (" << fb << ")";
  }
}

// ---------------------------------------------------------------------------------------------------
// One case: the same input encoded on the CPU and on the GPU, both bodies compared, then decoded on
// both sides (plain and accumulating) and compared.

constexpr size_t kGuard = 64;     // bytes after the body capacity that no encode may touch
constexpr uint8_t kFill = 0xa5;

struct Totals {
  uint64_t cases = 0;
  uint64_t nan_payloads = 0;
};

struct Input {
  gw_dtype dtype = GW_DTYPE_F32;
  uint64_t n = 0;
  std::vector<uint8_t> host;   // the tensor's bytes
  std::vector<uint8_t> prior;  // what accumulate adds to
  DeviceBuffer device;         // a copy of host
};

void run_case(const gwgpu::DirectCodec& k, const gw_codec_context& ctx, Input& in, cudaStream_t stream,
              Totals& totals) {
  const gw_codec_vtable* vt = k.vt();
  const uint64_t n = in.n;
  uint64_t cap = 0, workspace = 0;
  ASSERT_EQ(vt->max_encoded_size(k.codec(), in.dtype, n, &cap, &workspace), GW_OK) << gwgpu::last_error;
  ASSERT_EQ(workspace, 0u) << "the codec asks for a workspace; this test passes none";

  gw_tensor t{};
  t.struct_size = sizeof t;
  t.dtype = in.dtype;
  t.count = n;

  // CPU encode.
  std::vector<uint8_t> cpu_body(cap + kGuard, kFill);
  uint64_t cpu_size = 0;
  t.memory = GW_MEMORY_HOST;
  t.data = in.host.data();
  ASSERT_EQ(vt->encode(k.codec(), &ctx, &t, cpu_body.data(), cap, &cpu_size), GW_OK)
      << "CPU encode: " << gwgpu::last_error;
  ASSERT_LE(cpu_size, cap);
  for (size_t i = 0; i < kGuard; ++i)
    ASSERT_EQ(cpu_body[cap + i], kFill) << "the CPU encode wrote past the body capacity (" << cap << " bytes)";
  cpu_body.resize(cpu_size);

  // GPU encode into a guarded device buffer.
  DeviceBuffer d_body;
  GW_CUDA_OK(d_body.alloc(cap + kGuard));
  GW_CUDA_OK(cudaMemsetAsync(d_body.p, kFill, cap + kGuard, stream));
  GW_CUDA_OK(cudaStreamSynchronize(stream));
  uint64_t gpu_size = 0;
  t.memory = GW_MEMORY_CUDA;
  t.device = 0;
  t.data = in.device.p;
  t.stream = stream;
  ASSERT_EQ(vt->encode(k.codec(), &ctx, &t, d_body.p, cap, &gpu_size), GW_OK) << "GPU encode: " << gwgpu::last_error;
  GW_CUDA_OK(cudaStreamSynchronize(stream));
  ASSERT_EQ(gpu_size, cpu_size) << "GPU and CPU body sizes differ";
  std::vector<uint8_t> gpu_body(gpu_size), guard(kGuard);
  if (gpu_size) GW_CUDA_OK(cudaMemcpy(gpu_body.data(), d_body.p, gpu_size, cudaMemcpyDeviceToHost));
  GW_CUDA_OK(cudaMemcpy(guard.data(), static_cast<uint8_t*>(d_body.p) + cap, kGuard, cudaMemcpyDeviceToHost));
  for (size_t i = 0; i < kGuard; ++i)
    ASSERT_EQ(guard[i], kFill) << "the GPU encode wrote past the body capacity (" << cap << " bytes), at +" << i;
  ASSERT_NO_FATAL_FAILURE(expect_same_body(cpu_body, gpu_body));

  // Decode both bodies on their side, into the input's dtype, plain then accumulating.
  const size_t out_bytes = n * elem_size(in.dtype);
  DeviceBuffer d_out;
  GW_CUDA_OK(d_out.alloc(out_bytes));
  for (uint32_t flags : {0u, static_cast<uint32_t>(GW_DECODE_ACCUMULATE)}) {
    SCOPED_TRACE(flags ? "decode with GW_DECODE_ACCUMULATE" : "plain decode");
    std::vector<uint8_t> cpu_out = in.prior, gpu_out(out_bytes);
    gw_tensor o{};
    o.struct_size = sizeof o;
    o.dtype = in.dtype;
    o.count = n;
    o.memory = GW_MEMORY_HOST;
    o.data = cpu_out.data();
    ASSERT_EQ(vt->decode(k.codec(), &ctx, cpu_body.data(), cpu_size, &o, flags), GW_OK)
        << "CPU decode: " << gwgpu::last_error;
    if (out_bytes) GW_CUDA_OK(cudaMemcpy(d_out.p, in.prior.data(), out_bytes, cudaMemcpyHostToDevice));
    o.memory = GW_MEMORY_CUDA;
    o.device = 0;
    o.data = d_out.p;
    o.stream = stream;
    ASSERT_EQ(vt->decode(k.codec(), &ctx, d_body.p, gpu_size, &o, flags), GW_OK) << "GPU decode: " << gwgpu::last_error;
    GW_CUDA_OK(cudaStreamSynchronize(stream));
    if (out_bytes) GW_CUDA_OK(cudaMemcpy(gpu_out.data(), d_out.p, out_bytes, cudaMemcpyDeviceToHost));
    ASSERT_NO_FATAL_FAILURE(
        expect_same_output(cpu_out, gpu_out, in.dtype, flags & GW_DECODE_ACCUMULATE, &totals.nan_payloads));
  }
  ++totals.cases;
}

void prepare(Input& in, const std::vector<float>& x, gw_dtype dt, Kind kind) {
  in.dtype = dt;
  in.n = x.size();
  in.host = to_bytes(x, dt, kind);
  in.prior = prior_bytes(in.n, dt);
  GW_CUDA_OK(in.device.alloc(in.host.size()));
  if (!in.host.empty()) GW_CUDA_OK(cudaMemcpy(in.device.p, in.host.data(), in.host.size(), cudaMemcpyHostToDevice));
}

using Config = std::map<std::string, std::string>;

std::string describe(const Config& c) {
  std::string s;
  for (const auto& [key, value] : c) s += (s.empty() ? "" : " ") + key + "=" + value;
  return s.empty() ? "defaults" : s;
}

// Sizes: not multiples of any tile, 2^24, and 257 again after the large ones (reused device scratch).
const uint64_t kSizes[] = {1, 2, 255, 257, 1000001, uint64_t{1} << 24, 257};
const gw_dtype kDtypes[] = {GW_DTYPE_F32, GW_DTYPE_F16, GW_DTYPE_BF16};
constexpr uint64_t kLarge = uint64_t{1} << 24;

// The stream of a case: the legacy default stream for n == 2, a created one otherwise.
cudaStream_t stream_for(uint64_t n, cudaStream_t created) { return n == 2 ? nullptr : created; }

void print_totals(const char* codec, const Totals& t) {
  std::cout << "[gpu_sparse] " << codec << ": " << t.cases << " cases byte-identical on GPU and CPU";
  if (t.nan_payloads)
    std::cout << "; " << t.nan_payloads << " accumulated NaN elements carry another NaN payload on the GPU";
  std::cout << "\n";
}

TEST(GpuSparse, TopkBytesEqualCpuBytes) {
  if (!have_device()) GTEST_SKIP() << "no CUDA device";
  // Every selection x value x index format at the default ratio (1 %), and a few other counts.
  std::vector<Config> configs;
  for (const char* sel : {"approx", "exact"})
    for (const char* val : {"fp32", "fp16"})
      for (const char* idx : {"u32", "delta"}) configs.push_back({{"selection", sel}, {"values", val}, {"indices", idx}});
  configs.push_back({{"selection", "exact"}, {"values", "fp16"}, {"indices", "delta"}, {"ratio", "0.25"}});
  configs.push_back({{"selection", "approx"}, {"values", "fp32"}, {"indices", "u32"}, {"ratio", "1.0"}});
  configs.push_back({{"selection", "exact"}, {"values", "fp32"}, {"indices", "delta"}, {"k", "1000"}});
  configs.push_back({{"selection", "approx"}, {"values", "fp16"}, {"indices", "delta"}, {"ratio", "0.001"}});
  // At 2^24 a subset: each selection, value and index format at least once, and the large-m scan.
  const std::vector<size_t> large_subset = {0, 3, 5, 6, 8};

  std::vector<std::unique_ptr<gwgpu::DirectCodec>> codecs;
  for (const Config& c : configs) {
    try {
      codecs.push_back(std::make_unique<gwgpu::DirectCodec>(GW_PLUGIN_DIR, "topk", c));
    } catch (const std::exception& e) {
      FAIL() << "topk codec (" << describe(c) << ") could not be created from " << GW_PLUGIN_DIR << ": " << e.what();
    }
  }
  Stream stream;
  GW_CUDA_OK(cudaStreamCreate(&stream.s));
  Totals totals;
  gw_codec_context ctx{};
  ctx.struct_size = sizeof ctx;
  ctx.seed = 5;
  ctx.step = 3;
  ctx.world_size = 1;
  for (uint64_t n : kSizes) {
    for (Kind kind : {Kind::normal, Kind::ties, Kind::zeros, Kind::constant, Kind::specials}) {
      const std::vector<float> x = values(kind, n, static_cast<uint32_t>(n * 11 + static_cast<uint32_t>(kind)));
      for (gw_dtype dt : kDtypes) {
        Input in;
        ASSERT_NO_FATAL_FAILURE(prepare(in, x, dt, kind));
        for (size_t c = 0; c < configs.size(); ++c) {
          if (n >= kLarge && std::find(large_subset.begin(), large_subset.end(), c) == large_subset.end()) continue;
          SCOPED_TRACE("topk " + describe(configs[c]) + ", n=" + std::to_string(n) + ", " + dtype_text(dt) + ", " +
                       kind_name(kind) + " input");
          run_case(*codecs[c], ctx, in, stream_for(n, stream.s), totals);
          if (HasFailure()) return;
        }
      }
    }
  }
  print_totals("topk", totals);
}

TEST(GpuSparse, RandomkBytesEqualCpuBytes) {
  if (!have_device()) GTEST_SKIP() << "no CUDA device";
  const std::vector<Config> configs = {{},
                                       {{"values", "fp16"}, {"rescale", "true"}},
                                       {{"rescale", "true"}, {"ratio", "0.3"}},
                                       {{"values", "fp16"}, {"k", "1"}},
                                       {{"rescale", "true"}, {"ratio", "1.0"}}};
  std::vector<std::unique_ptr<gwgpu::DirectCodec>> codecs;
  for (const Config& c : configs) {
    try {
      codecs.push_back(std::make_unique<gwgpu::DirectCodec>(GW_PLUGIN_DIR, "randomk", c));
    } catch (const std::exception& e) {
      FAIL() << "randomk codec (" << describe(c) << ") could not be created from " << GW_PLUGIN_DIR << ": " << e.what();
    }
  }
  struct SeedStep {
    uint64_t seed, step;
  };
  const SeedStep streams[] = {{0, 0}, {77, 9}, {0xfedcba9876543210ull, uint64_t{1} << 40}};
  Stream stream;
  GW_CUDA_OK(cudaStreamCreate(&stream.s));
  Totals totals;
  for (uint64_t n : kSizes) {
    // The coordinates do not depend on the values; two kinds cover the value conversions.
    for (Kind kind : {Kind::normal, Kind::specials}) {
      const std::vector<float> x = values(kind, n, static_cast<uint32_t>(n * 13 + static_cast<uint32_t>(kind)));
      for (gw_dtype dt : kDtypes) {
        Input in;
        ASSERT_NO_FATAL_FAILURE(prepare(in, x, dt, kind));
        for (size_t c = 0; c < configs.size(); ++c) {
          for (const SeedStep& ss : streams) {
            if (n >= kLarge && ss.seed != 77) continue;
            gw_codec_context ctx{};
            ctx.struct_size = sizeof ctx;
            ctx.seed = ss.seed;
            ctx.step = ss.step;
            ctx.world_size = 1;
            SCOPED_TRACE("randomk " + describe(configs[c]) + ", seed " + std::to_string(ss.seed) + " step " +
                         std::to_string(ss.step) + ", n=" + std::to_string(n) + ", " + dtype_text(dt) + ", " +
                         kind_name(kind) + " input");
            run_case(*codecs[c], ctx, in, stream_for(n, stream.s), totals);
            if (HasFailure()) return;
          }
        }
      }
    }
  }
  print_totals("randomk", totals);
}

// A malformed body in device memory is refused (GW_ERR_CORRUPT with a message) by the device decoder,
// and leaves no CUDA error behind.
TEST(GpuSparse, DeviceDecodersRefuseMalformedBodies) {
  if (!have_device()) GTEST_SKIP() << "no CUDA device";
  const uint64_t n = 1000;
  Stream stream;
  GW_CUDA_OK(cudaStreamCreate(&stream.s));
  std::vector<float> x = values(Kind::normal, n, 1);
  std::vector<uint8_t> host(n * 4);
  std::memcpy(host.data(), x.data(), host.size());
  DeviceBuffer d_out;
  GW_CUDA_OK(d_out.alloc(n * 4));

  struct Variant {
    std::string what;
    std::vector<uint8_t> body;
  };
  const auto expect_refused = [&](const gwgpu::DirectCodec& k, const std::vector<Variant>& variants) {
    for (const Variant& v : variants) {
      SCOPED_TRACE(v.what);
      DeviceBuffer d_body;
      GW_CUDA_OK(d_body.alloc(v.body.size()));
      if (!v.body.empty()) GW_CUDA_OK(cudaMemcpy(d_body.p, v.body.data(), v.body.size(), cudaMemcpyHostToDevice));
      gw_tensor o{};
      o.struct_size = sizeof o;
      o.memory = GW_MEMORY_CUDA;
      o.dtype = GW_DTYPE_F32;
      o.count = n;
      o.data = d_out.p;
      o.stream = stream.s;
      gwgpu::last_error.clear();
      EXPECT_EQ(k.vt()->decode(k.codec(), nullptr, d_body.p, v.body.size(), &o, 0), GW_ERR_CORRUPT);
      EXPECT_FALSE(gwgpu::last_error.empty()) << "a refused body must come with a message";
      GW_CUDA_OK(cudaStreamSynchronize(stream.s));
      GW_CUDA_OK(cudaGetLastError());
    }
  };
  const auto encode_on_cpu = [&](const gwgpu::DirectCodec& k, std::vector<uint8_t>& body) {
    gw_tensor t{};
    t.struct_size = sizeof t;
    t.memory = GW_MEMORY_HOST;
    t.dtype = GW_DTYPE_F32;
    t.count = n;
    t.data = host.data();
    gw_codec_context ctx{};
    ctx.struct_size = sizeof ctx;
    ctx.seed = 3;
    body.assign(k.max_body(GW_DTYPE_F32, n), 0);
    uint64_t size = 0;
    ASSERT_EQ(k.vt()->encode(k.codec(), &ctx, &t, body.data(), body.size(), &size), GW_OK) << gwgpu::last_error;
    body.resize(size);
  };

  {
    gwgpu::DirectCodec k(GW_PLUGIN_DIR, "topk", {{"indices", "u32"}, {"selection", "exact"}, {"ratio", "0.01"}});
    std::vector<uint8_t> body;
    ASSERT_NO_FATAL_FAILURE(encode_on_cpu(k, body));
    ASSERT_EQ(body.size(), 8u + 10 * 8) << "10 entries of fp32 values and u32 indices";
    std::vector<Variant> v;
    v.push_back({"topk: body shorter than its preamble", {body.begin(), body.begin() + 4}});
    v.push_back({"topk: body one byte short", {body.begin(), body.end() - 1}});
    Variant m{"topk: more entries than elements", body};
    gwc::store_le32(m.body.data() + 4, n + 1);
    v.push_back(m);
    Variant out_of_range{"topk: index out of range", body};
    gwc::store_le32(out_of_range.body.data() + 8 + 40 + 36, n);
    v.push_back(out_of_range);
    Variant order{"topk: indices not increasing", body};
    const uint32_t first = gwc::load_le32(order.body.data() + 48), second = gwc::load_le32(order.body.data() + 52);
    gwc::store_le32(order.body.data() + 48, second);
    gwc::store_le32(order.body.data() + 52, first);
    v.push_back(order);
    Variant format{"topk: unknown value format", body};
    format.body[0] = 7;
    v.push_back(format);
    expect_refused(k, v);
  }
  {
    gwgpu::DirectCodec k(GW_PLUGIN_DIR, "topk", {{"indices", "delta"}});
    std::vector<uint8_t> body;
    ASSERT_NO_FATAL_FAILURE(encode_on_cpu(k, body));
    std::vector<Variant> v;
    v.push_back({"topk delta: last varint truncated", {body.begin(), body.end() - 1}});
    Variant trailing{"topk delta: trailing bytes", body};
    trailing.body.push_back(0);
    v.push_back(trailing);
    Variant far{"topk delta: gap past the end", body};
    far.body.back() |= 0x80;  // the last varint goes on: its gap grows by 127 << 7, past n
    far.body.push_back(0x7f);
    v.push_back(far);
    expect_refused(k, v);
  }
  {
    gwgpu::DirectCodec k(GW_PLUGIN_DIR, "randomk", {{"ratio", "0.01"}});
    std::vector<uint8_t> body;
    ASSERT_NO_FATAL_FAILURE(encode_on_cpu(k, body));
    ASSERT_EQ(body.size(), 24u + 10 * 4);
    std::vector<Variant> v;
    v.push_back({"randomk: body shorter than its preamble", {body.begin(), body.begin() + 20}});
    v.push_back({"randomk: body one byte short", {body.begin(), body.end() - 1}});
    Variant k_big{"randomk: k larger than the tensor", body};
    gwc::store_le32(k_big.body.data() + 4, n + 1);
    v.push_back(k_big);
    Variant flags{"randomk: unknown flag", body};
    flags.body[1] = 0x80;
    v.push_back(flags);
    expect_refused(k, v);
  }
}

}  // namespace
