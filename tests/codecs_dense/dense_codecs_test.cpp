// The dense codecs (fp16, bf16, int8, onebit) through the public C ABI: exact bytes against the
// golden models (reference.hpp) on every SIMD target, exact cases, analytic error bounds over sizes
// that are not multiples of the block, stochastic rounding, fp16 overflow with pre-division,
// accumulate, other input dtypes, and hostile payloads.
#include <gradwire/gradwire.h>
#include <gradwire/plugin.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "gw_test.hpp"
#include "hwy/targets.h"
#include "reference.hpp"

namespace {

struct Codec {
  gwtest::Runtime runtime;
  gw_codec* codec = nullptr;
  Codec(const std::string& name, const std::string& toml = "") : runtime(toml, {GW_PLUGIN_DIR}) {
    if (runtime.rt) {
      EXPECT_EQ(gw_codec_create(runtime.rt, name.c_str(), &codec), GW_OK) << gw_last_error();
    }
  }
  ~Codec() {
    if (codec) gw_codec_destroy(codec);
  }

  std::vector<uint8_t> encode(const void* data, uint64_t n, gw_dtype dtype = GW_DTYPE_F32, uint64_t seed = 0,
                              uint64_t step = 0, uint32_t world = 1) {
    gw_tensor t = GW_TENSOR_INIT;
    t.dtype = dtype;
    t.data = const_cast<void*>(data);
    t.count = n;
    uint64_t cap = 0, size = 0;
    EXPECT_EQ(gw_codec_max_encoded_size(codec, dtype, n, &cap), GW_OK) << gw_last_error();
    std::vector<uint8_t> payload(cap);
    gw_codec_context ctx = GW_CODEC_CONTEXT_INIT;
    ctx.seed = seed;
    ctx.step = step;
    ctx.world_size = world;
    EXPECT_EQ(gw_codec_encode(codec, &ctx, &t, payload.data(), cap, &size), GW_OK) << gw_last_error();
    EXPECT_EQ(size, cap) << "dense codecs fill their worst case exactly";
    payload.resize(size);
    return payload;
  }
  std::vector<uint8_t> encode(const std::vector<float>& x, uint64_t seed = 0, uint64_t step = 0, uint32_t world = 1) {
    return encode(x.data(), x.size(), GW_DTYPE_F32, seed, step, world);
  }
  gw_status decode(const std::vector<uint8_t>& p, void* out, uint64_t n, gw_dtype dtype = GW_DTYPE_F32,
                   uint32_t flags = 0, uint32_t world = 1) {
    gw_tensor t = GW_TENSOR_INIT;
    t.dtype = dtype;
    t.data = out;
    t.count = n;
    gw_codec_context ctx = GW_CODEC_CONTEXT_INIT;
    ctx.world_size = world;
    return gw_codec_decode(codec, &ctx, p.data(), p.size(), &t, flags);
  }
  std::vector<float> round_trip(const std::vector<float>& x, uint64_t seed = 0, uint64_t step = 0) {
    std::vector<float> y(x.size(), -12345.0f);
    const auto p = encode(x, seed, step);
    EXPECT_EQ(decode(p, y.data(), y.size()), GW_OK) << gw_last_error();
    return y;
  }
};

std::vector<uint8_t> body_of(const std::vector<uint8_t>& payload) {
  return std::vector<uint8_t>(payload.begin() + GW_WIRE_HEADER_SIZE, payload.end());
}

std::vector<float> gradient_like(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> g(0.0f, 1.0f);
  std::uniform_real_distribution<float> mag(-6, 2);
  std::vector<float> x(n);
  for (size_t i = 0; i < n; ++i) x[i] = g(rng) * std::pow(10.0f, mag(rng));
  return x;
}

std::vector<float> hard_values(size_t n, uint32_t seed) {
  std::vector<float> x = gradient_like(n, seed);
  const float special[] = {0.0f, -0.0f, 1e-40f, -1e-42f, 65504.0f, 65520.0f, -7e4f, 3.4e38f, 1e-30f, 0.5f, -1.0f};
  for (size_t i = 0; i < n; i += 7) x[i] = special[(i / 7) % (sizeof special / sizeof special[0])];
  return x;
}

const uint64_t kSizes[] = {1, 2, 255, 257, 1000001};

// ---- bytes: every SIMD target writes the golden model's bytes ------------------------------------

struct TargetSweep {
  std::vector<int64_t> targets = hwy::SupportedAndGeneratedTargets();
  ~TargetSweep() { hwy::SetSupportedTargetsForTest(0); }
};

TEST(DenseCodecBytes, EveryTargetWritesTheReferenceBytes) {
  Codec f16("fp16"), bf16("bf16"), q8("int8", "[codec.int8]\nblock_size = 100\n"),
      q8s("int8", "[codec.int8]\nrounding = \"stochastic\"\nblock_size = 33\n"), ob("onebit", "[codec.onebit]\nblock_size = 77\n"),
      f16p("fp16", "[codec.fp16]\nprediv = true\n");
  TargetSweep sweep;
  ASSERT_GE(sweep.targets.size(), 2u);
  for (uint64_t n : {uint64_t{1}, uint64_t{31}, uint64_t{1000}, uint64_t{70001}}) {
    const std::vector<float> x = hard_values(n, static_cast<uint32_t>(n));
    for (int64_t target : sweep.targets) {
      hwy::SetSupportedTargetsForTest(target);
      SCOPED_TRACE(std::string(hwy::TargetName(target)) + " n=" + std::to_string(n));
      EXPECT_EQ(body_of(f16.encode(x)), gwref::half_body(x, false, 1.0f));
      EXPECT_EQ(body_of(f16p.encode(x, 0, 0, 3)), gwref::half_body(x, false, 1.0f / 3.0f));
      EXPECT_EQ(body_of(bf16.encode(x)), gwref::half_body(x, true, 1.0f));
      EXPECT_EQ(body_of(q8.encode(x)), gwref::int8_body(x, 100, false, 0, 0));
      EXPECT_EQ(body_of(q8s.encode(x, 99, 5)), gwref::int8_body(x, 33, true, 99, 5));
      EXPECT_EQ(body_of(ob.encode(x)), gwref::onebit_body(x, 77));
    }
  }
}

// The blockwise codecs at every block shape their kernels tell apart: blocks that start on a byte
// of onebit's bit array (B % 8 == 0: the one-pass encoder) or not, blocks shorter than a vector,
// int8 blocks long enough for its four-vector packing, rounding ties, outputs at every alignment
// (the kernels align their stores), accumulated or not, and an int8 payload and outputs past the
// streaming-store threshold (16 MiB) — every path of every target held to the reference bytes and
// values.
TEST(DenseCodecBytes, EveryTargetMatchesTheReferenceAtEveryBlockShape) {
  TargetSweep sweep;
  ASSERT_GE(sweep.targets.size(), 2u);
  const uint64_t big = (uint64_t{16} << 20) + 1001;  // int8 payload bytes past 16 MiB
  struct Case {
    uint32_t block;
    uint64_t n;
    bool ties;  // int8 rounding ties: block maxima of 127 (scale 1), elements k + 0.5
  } cases[] = {{8, 1, false},      {8, 17, false},    {16, 15, false},   {16, 16, false},  {24, 1000, false},
               {64, 70001, false}, {256, 255, false}, {256, 4099, false}, {1000, 3001, false}, {5, 333, false},
               {77, 1000, false},  {4, 2000, false},  {256, 1024, true},  {40, 999, true},
               {256, big, false}};
  for (const Case& c : cases) {
    const std::string b = std::to_string(c.block);
    Codec q8("int8", "[codec.int8]\nblock_size = " + b + "\n"), ob("onebit", "[codec.onebit]\nblock_size = " + b + "\n");
    std::vector<float> x = hard_values(c.n, c.block * 7 + static_cast<uint32_t>(c.n));
    if (c.ties) {
      for (uint64_t i = 0; i < c.n; ++i)
        x[i] = i % c.block == 0 ? 127.0f : static_cast<float>(static_cast<int64_t>(i % 254) - 127) + 0.5f;
    }
    const std::vector<uint8_t> q8_body = gwref::int8_body(x, c.block, false, 0, 0), ob_body = gwref::onebit_body(x, c.block);
    const std::vector<float> q8_y = gwref::int8_decoded(q8_body, c.n), ob_y = gwref::onebit_decoded(ob_body, c.n);
    for (int64_t target : sweep.targets) {
      hwy::SetSupportedTargetsForTest(target);
      SCOPED_TRACE(std::string(hwy::TargetName(target)) + " block=" + b + " n=" + std::to_string(c.n));
      const auto q8_payload = q8.encode(x), ob_payload = ob.encode(x);
      ASSERT_EQ(body_of(q8_payload), q8_body);
      ASSERT_EQ(body_of(ob_payload), ob_body);
      for (size_t offset : {size_t{0}, size_t{1}, size_t{3}, size_t{4}, size_t{7}}) {  // output offset, in floats
        if (c.n == big && offset > 1) continue;
        std::vector<float> y(c.n + offset + 1, 0.5f);
        for (auto [codec, payload, want] : {std::tuple{&q8, &q8_payload, &q8_y}, std::tuple{&ob, &ob_payload, &ob_y}}) {
          std::fill(y.begin(), y.end(), 0.5f);
          ASSERT_EQ(codec->decode(*payload, y.data() + offset, c.n), GW_OK) << gw_last_error();
          for (uint64_t i = 0; i < c.n; ++i)
            ASSERT_EQ(gwc::f32_bits(y[offset + i]), gwc::f32_bits((*want)[i])) << "offset " << offset << " i " << i;
          ASSERT_EQ(y[c.n + offset], 0.5f) << "wrote past the output";
          if (offset > 0) {
            ASSERT_EQ(y[offset - 1], 0.5f) << "wrote before the output";
          }
          if (c.n == big) continue;
          ASSERT_EQ(codec->decode(*payload, y.data() + offset, c.n, GW_DTYPE_F32, GW_DECODE_ACCUMULATE), GW_OK);
          for (uint64_t i = 0; i < c.n; ++i)
            ASSERT_EQ(gwc::f32_bits(y[offset + i]), gwc::f32_bits((*want)[i] + (*want)[i])) << "accumulate, i " << i;
        }
      }
    }
  }
}

// ---- properties and sizes ---------------------------------------------------------------------------

TEST(DenseCodecs, PropertiesAndExactWorstCaseSizes) {
  const uint32_t dense = (1u << GW_DTYPE_F32) | (1u << GW_DTYPE_F16) | (1u << GW_DTYPE_BF16);
  struct Case {
    const char* name;
    uint32_t must, must_not;
    gw_dtype sum;
  } cases[] = {{"fp16", GW_CODEC_SUMMABLE, GW_CODEC_LOSSLESS | GW_CODEC_SPARSE, GW_DTYPE_F16},
               {"bf16", GW_CODEC_SUMMABLE, GW_CODEC_LOSSLESS | GW_CODEC_SPARSE, GW_DTYPE_BF16},
               {"int8", 0, GW_CODEC_SUMMABLE | GW_CODEC_LOSSLESS | GW_CODEC_SPARSE | GW_CODEC_STATEFUL, GW_DTYPE_F32},
               {"onebit", 0, GW_CODEC_SUMMABLE | GW_CODEC_LOSSLESS | GW_CODEC_SPARSE, GW_DTYPE_F32}};
  for (const Case& c : cases) {
    Codec k(c.name);
    gw_codec_properties p = GW_CODEC_PROPERTIES_INIT;
    ASSERT_EQ(gw_codec_get_properties(k.codec, &p), GW_OK);
    EXPECT_EQ(p.flags & c.must, c.must) << c.name;
    EXPECT_EQ(p.flags & c.must_not, 0u) << c.name;
    EXPECT_EQ(p.dtypes, dense) << c.name;
    if (c.must & GW_CODEC_SUMMABLE) {
      EXPECT_EQ(p.sum_dtype, c.sum) << c.name;
    }
  }
  Codec s("int8", "[codec.int8]\nrounding = \"stochastic\"\n");
  gw_codec_properties p = GW_CODEC_PROPERTIES_INIT;
  ASSERT_EQ(gw_codec_get_properties(s.codec, &p), GW_OK);
  EXPECT_TRUE(p.flags & GW_CODEC_STATEFUL);

  Codec f("fp16"), q("int8", "[codec.int8]\nblock_size = 100\n"), o("onebit", "[codec.onebit]\nblock_size = 100\n");
  for (uint64_t n : {uint64_t{0}, uint64_t{1}, uint64_t{100}, uint64_t{101}, uint64_t{1000001}}) {
    uint64_t bytes = 0;
    ASSERT_EQ(gw_codec_max_encoded_size(f.codec, GW_DTYPE_F32, n, &bytes), GW_OK);
    EXPECT_EQ(bytes, 32 + 2 * n);
    ASSERT_EQ(gw_codec_max_encoded_size(q.codec, GW_DTYPE_F32, n, &bytes), GW_OK);
    EXPECT_EQ(bytes, 32 + 8 + 4 * ((n + 99) / 100) + n);
    ASSERT_EQ(gw_codec_max_encoded_size(o.codec, GW_DTYPE_F32, n, &bytes), GW_OK);
    EXPECT_EQ(bytes, 32 + 8 + 4 * ((n + 99) / 100) + (n + 7) / 8);
  }
  uint64_t bytes = 0;
  EXPECT_EQ(gw_codec_max_encoded_size(q.codec, GW_DTYPE_I32, 10, &bytes), GW_ERR_UNSUPPORTED);
  EXPECT_NE(std::string(gw_last_error()).find("i32"), std::string::npos) << gw_last_error();
}

TEST(DenseCodecs, BadConfigurationIsRefusedWithItsKey) {
  gw_runtime* rt = nullptr;
  EXPECT_NE(gwtest::create_runtime("[codec.int8]\nrounding = \"up\"\n", &rt, {GW_PLUGIN_DIR}), GW_OK);
  EXPECT_NE(std::string(gw_last_error()).find("rounding"), std::string::npos) << gw_last_error();
  if (rt) gw_runtime_destroy(rt);
  rt = nullptr;
  EXPECT_NE(gwtest::create_runtime("[codec.onebit]\nblock_size = 0\n", &rt, {GW_PLUGIN_DIR}), GW_OK);
  EXPECT_NE(std::string(gw_last_error()).find("block_size"), std::string::npos) << gw_last_error();
  if (rt) gw_runtime_destroy(rt);
}

// ---- exact cases ------------------------------------------------------------------------------------

TEST(DenseCodecs, HalfFormatsRoundTripTheirOwnValuesExactly) {
  for (const char* name : {"fp16", "bf16"}) {
    Codec k(name);
    const bool bf = std::string(name) == "bf16";
    std::vector<uint16_t> h;
    for (uint32_t v = 0; v < 65536; ++v) {
      const float f = bf ? gwc::bf16_to_f32(uint16_t(v)) : gwc::f16_to_f32(uint16_t(v));
      if (f == f) h.push_back(uint16_t(v));
    }
    // The codec's own format as input is copied bit for bit.
    const auto p = k.encode(h.data(), h.size(), bf ? GW_DTYPE_BF16 : GW_DTYPE_F16);
    std::vector<uint16_t> back(h.size());
    ASSERT_EQ(k.decode(p, back.data(), back.size(), bf ? GW_DTYPE_BF16 : GW_DTYPE_F16), GW_OK) << gw_last_error();
    EXPECT_EQ(back, h) << name;
    // f32 values that the format represents survive f32 -> body -> f32.
    std::vector<float> x(h.size());
    for (size_t i = 0; i < h.size(); ++i) x[i] = bf ? gwc::bf16_to_f32(h[i]) : gwc::f16_to_f32(h[i]);
    const auto y = k.round_trip(x);
    for (size_t i = 0; i < x.size(); ++i) ASSERT_EQ(gwc::f32_bits(y[i]), gwc::f32_bits(x[i])) << name << " " << i;
  }
}

TEST(DenseCodecs, BlockConstantsSurviveInt8AndOnebitExactly) {
  for (uint32_t block : {1u, 7u, 256u, 1000u}) {
    const std::string b = std::to_string(block);
    Codec q8("int8", "[codec.int8]\nblock_size = " + b + "\n"),
        q8s("int8", "[codec.int8]\nrounding = \"stochastic\"\nblock_size = " + b + "\n"),
        ob("onebit", "[codec.onebit]\nblock_size = " + b + "\n");
    for (uint64_t n : kSizes) {
      std::vector<float> x(n);
      const float constants[] = {0.1f, -3.75f, 1e-20f, 12345.678f, 0.0f, -1e30f, 7.0f};
      for (uint64_t i = 0; i < n; ++i) x[i] = constants[(i / block) % 7];
      for (Codec* k : {&q8, &q8s, &ob}) {
        const auto y = k->round_trip(x, 1, 2);
        for (uint64_t i = 0; i < n; ++i)
          ASSERT_EQ(y[i], x[i]) << "block " << block << " n " << n << " i " << i;
      }
    }
  }
}

// ---- analytic error bounds --------------------------------------------------------------------------

TEST(DenseCodecs, HalfFormatsStayWithinHalfAnUlp) {
  Codec f16("fp16"), bf16("bf16");
  for (uint64_t n : kSizes) {
    const std::vector<float> x = gradient_like(n, 7);
    const auto a = f16.round_trip(x), b = bf16.round_trip(x);
    for (uint64_t i = 0; i < n; ++i) {
      const double ax = std::fabs(x[i]);
      // fp16: relative 2^-11 in the normal range, absolute 2^-25 below it.
      ASSERT_LE(std::fabs(a[i] - x[i]), std::max(ax * std::ldexp(1.0, -11), std::ldexp(1.0, -25))) << i;
      ASSERT_LE(std::fabs(b[i] - x[i]), ax * std::ldexp(1.0, -8)) << i;
    }
  }
}

TEST(DenseCodecs, Int8ErrorIsBoundedByTheBlockScale) {
  for (uint32_t block : {1u, 16u, 256u, 4096u}) {
    const std::string b = std::to_string(block);
    Codec near("int8", "[codec.int8]\nblock_size = " + b + "\n"),
        stoch("int8", "[codec.int8]\nrounding = \"stochastic\"\nblock_size = " + b + "\n");
    for (uint64_t n : kSizes) {
      const std::vector<float> x = gradient_like(n, block + 3);
      const auto yn = near.round_trip(x), ys = stoch.round_trip(x, 11, 3);
      for (uint64_t k = 0; k * block < n; ++k) {
        double m = 0;
        const uint64_t last = std::min<uint64_t>(n, (k + 1) * block);
        for (uint64_t i = k * block; i < last; ++i) m = std::max(m, std::fabs(double(x[i])));
        const double step = m / 127.0, slack = 1e-6 * m + 1e-37;
        for (uint64_t i = k * block; i < last; ++i) {
          ASSERT_LE(std::fabs(yn[i] - x[i]), step / 2 + slack) << "nearest block " << block << " i " << i;
          ASSERT_LE(std::fabs(ys[i] - x[i]), step + slack) << "stochastic block " << block << " i " << i;
        }
      }
    }
  }
}

TEST(DenseCodecs, OnebitDecodesToSignTimesBlockMean) {
  for (uint32_t block : {1u, 5u, 256u, 3000u}) {
    Codec ob("onebit", "[codec.onebit]\nblock_size = " + std::to_string(block) + "\n");
    for (uint64_t n : kSizes) {
      const std::vector<float> x = gradient_like(n, block);
      const auto y = ob.round_trip(x);
      for (uint64_t k = 0; k * block < n; ++k) {
        const uint64_t last = std::min<uint64_t>(n, (k + 1) * block);
        double mean = 0;
        for (uint64_t i = k * block; i < last; ++i) mean += std::fabs(double(x[i]));
        mean /= double(last - k * block);
        for (uint64_t i = k * block; i < last; ++i) {
          ASSERT_EQ(std::signbit(y[i]), std::signbit(x[i])) << i;
          ASSERT_NEAR(std::fabs(y[i]), mean, mean * 1e-6) << "block " << block << " i " << i;
        }
      }
    }
  }
}

// ---- stochastic rounding ---------------------------------------------------------------------------

TEST(DenseCodecs, StochasticRoundingIsUnbiasedAndReproducible) {
  Codec stoch("int8", "[codec.int8]\nrounding = \"stochastic\"\nblock_size = 64\n"), near("int8", "[codec.int8]\nblock_size = 64\n");
  std::vector<float> x(64);
  x[0] = 127.0f;  // the block maximum: one quantization step is 1.0
  for (size_t i = 1; i < x.size(); ++i) x[i] = -20.0f + 0.37f * float(i) + 0.13f;
  const int steps = 4000;
  std::vector<double> mean(x.size(), 0.0);
  for (int s = 0; s < steps; ++s) {
    const auto y = stoch.round_trip(x, 1234, uint64_t(s));
    for (size_t i = 0; i < x.size(); ++i) mean[i] += y[i] / steps;
  }
  const auto yn = near.round_trip(x);
  double worst_nearest = 0;
  for (size_t i = 1; i < x.size(); ++i) {
    // Each draw is x's floor or ceiling (1.0 apart): standard deviation <= 0.5 / sqrt(steps).
    EXPECT_NEAR(mean[i], x[i], 5 * 0.5 / std::sqrt(double(steps))) << "element " << i;
    worst_nearest = std::max(worst_nearest, std::fabs(double(yn[i]) - x[i]));
  }
  EXPECT_GT(worst_nearest, 0.3) << "round-to-nearest is biased on these inputs; the test would see a biased mean";
  EXPECT_EQ(stoch.encode(x, 5, 6), stoch.encode(x, 5, 6)) << "same seed and step, same bytes";
  EXPECT_NE(stoch.encode(x, 5, 6), stoch.encode(x, 5, 7)) << "another step draws other numbers";
  EXPECT_NE(stoch.encode(x, 5, 6), stoch.encode(x, 8, 6)) << "another seed draws other numbers";
}

// ---- fp16 overflow and pre-division ------------------------------------------------------------------

// Sums bodies elementwise in their own format, as a reduction over summable bodies does.
std::vector<uint8_t> sum_f16_payloads(const std::vector<std::vector<uint8_t>>& ps) {
  std::vector<uint8_t> sum = ps[0];
  for (size_t r = 1; r < ps.size(); ++r)
    for (size_t i = GW_WIRE_HEADER_SIZE; i < sum.size(); i += 2) {
      const float a = gwc::f16_to_f32(gwc::load_le16(&sum[i])), b = gwc::f16_to_f32(gwc::load_le16(&ps[r][i]));
      gwc::store_le16(&sum[i], gwc::f32_to_f16(a + b));
    }
  return sum;
}

TEST(DenseCodecs, Fp16PredivisionPreventsOverflowOfSums) {
  const uint32_t world = 4;
  std::vector<float> x(1000);
  for (size_t i = 0; i < x.size(); ++i) x[i] = 30000.0f + float(i);
  Codec plain("fp16"), prediv("fp16", "[codec.fp16]\nprediv = true\n");
  std::vector<float> y(x.size());
  const auto overflowed = sum_f16_payloads(std::vector<std::vector<uint8_t>>(world, plain.encode(x)));
  ASSERT_EQ(plain.decode(overflowed, y.data(), y.size()), GW_OK);
  EXPECT_TRUE(std::isinf(y[0])) << "without pre-division the fp16 sum overflows";
  const auto summed = sum_f16_payloads(std::vector<std::vector<uint8_t>>(world, prediv.encode(x, 0, 0, world)));
  ASSERT_EQ(prediv.decode(summed, y.data(), y.size(), GW_DTYPE_F32, 0, world), GW_OK) << gw_last_error();
  for (size_t i = 0; i < x.size(); ++i) EXPECT_NEAR(y[i], world * x[i], world * x[i] * 2e-3) << i;
}

// ---- accumulate and input dtypes ------------------------------------------------------------------

TEST(DenseCodecs, AccumulateAddsAndOtherDtypesMatchTheirF32Values) {
  for (const char* name : {"fp16", "bf16", "int8", "onebit"}) {
    Codec k(name);
    const std::vector<float> x = gradient_like(1001, 3);
    const auto p = k.encode(x);
    std::vector<float> plain(x.size()), acc(x.size(), 2.0f);
    ASSERT_EQ(k.decode(p, plain.data(), plain.size()), GW_OK);
    ASSERT_EQ(k.decode(p, acc.data(), acc.size(), GW_DTYPE_F32, GW_DECODE_ACCUMULATE), GW_OK);
    for (size_t i = 0; i < x.size(); ++i) ASSERT_EQ(acc[i], 2.0f + plain[i]) << name << " " << i;

    for (gw_dtype dt : {GW_DTYPE_F16, GW_DTYPE_BF16}) {
      std::vector<uint16_t> h(x.size());
      std::vector<float> xf(x.size());
      for (size_t i = 0; i < x.size(); ++i) {
        h[i] = dt == GW_DTYPE_F16 ? gwc::f32_to_f16(x[i]) : gwc::f32_to_bf16(x[i]);
        xf[i] = dt == GW_DTYPE_F16 ? gwc::f16_to_f32(h[i]) : gwc::bf16_to_f32(h[i]);
      }
      const auto ph = k.encode(h.data(), h.size(), dt);
      EXPECT_EQ(body_of(ph), body_of(k.encode(xf))) << name << " " << gw_dtype_name(dt);
      std::vector<uint16_t> out(x.size(), 0), acc16(x.size());
      std::vector<float> ref(x.size());
      ASSERT_EQ(k.decode(ph, out.data(), out.size(), dt), GW_OK) << gw_last_error();
      ASSERT_EQ(k.decode(k.encode(xf), ref.data(), ref.size()), GW_OK);
      for (size_t i = 0; i < x.size(); ++i) {
        ASSERT_EQ(out[i], dt == GW_DTYPE_F16 ? gwc::f32_to_f16(ref[i]) : gwc::f32_to_bf16(ref[i])) << name << " " << i;
        acc16[i] = dt == GW_DTYPE_F16 ? gwc::f32_to_f16(1.5f) : gwc::f32_to_bf16(1.5f);
      }
      ASSERT_EQ(k.decode(ph, acc16.data(), acc16.size(), dt, GW_DECODE_ACCUMULATE), GW_OK);
      for (size_t i = 0; i < x.size(); ++i)
        ASSERT_EQ(acc16[i], dt == GW_DTYPE_F16 ? gwc::f32_to_f16(1.5f + ref[i]) : gwc::f32_to_bf16(1.5f + ref[i]));
    }
  }
}

// ---- hostile payloads ------------------------------------------------------------------------------

void expect_error(gw_status got, gw_status want, const char* what) {
  EXPECT_EQ(got, want) << what << ": " << gw_last_error();
  EXPECT_STRNE(gw_last_error(), "") << what;
}

// Rewrites the header's body length to match a modified body, so the codec itself must catch it.
void set_body(std::vector<uint8_t>& p, const std::vector<uint8_t>& good, const std::vector<uint8_t>& body) {
  p.assign(good.begin(), good.begin() + GW_WIRE_HEADER_SIZE);
  p.insert(p.end(), body.begin(), body.end());
  gwc::store_le64(&p[24], body.size());
}

TEST(DenseCodecs, HostilePayloadsGiveTheirErrors) {
  for (const char* name : {"fp16", "bf16", "int8", "onebit"}) {
    SCOPED_TRACE(name);
    Codec k(name), other(std::string(name) == "fp16" ? "bf16" : "fp16");
    const std::vector<float> x = gradient_like(1000, 1);
    const auto good = k.encode(x);
    std::vector<float> y(x.size());
    ASSERT_EQ(k.decode(good, y.data(), y.size()), GW_OK);

    auto p = good;
    p.pop_back();
    expect_error(k.decode(p, y.data(), y.size()), GW_ERR_CORRUPT, "truncated payload");
    p = good;
    p.push_back(0);
    expect_error(k.decode(p, y.data(), y.size()), GW_ERR_CORRUPT, "oversized payload");
    p = good;
    gwc::store_le16(&p[4], GW_WIRE_FORMAT_VERSION + 1);
    expect_error(k.decode(p, y.data(), y.size()), GW_ERR_VERSION, "wrong version");
    expect_error(k.decode(other.encode(x), y.data(), y.size()), GW_ERR_MISMATCH, "wrong codec");

    // Body-level damage the header cannot see.
    std::vector<uint8_t> body = body_of(good);
    body.pop_back();
    set_body(p, good, body);
    expect_error(k.decode(p, y.data(), y.size()), GW_ERR_CORRUPT, "short body");
    body = body_of(good);
    body.push_back(1);
    set_body(p, good, body);
    expect_error(k.decode(p, y.data(), y.size()), GW_ERR_CORRUPT, "long body");
    if (std::string(name) == "int8" || std::string(name) == "onebit") {
      for (uint32_t bad_block : {0u, 128u, 0xffffffffu}) {
        body = body_of(good);
        gwc::store_le32(body.data(), bad_block);
        set_body(p, good, body);
        expect_error(k.decode(p, y.data(), y.size()), GW_ERR_CORRUPT, "wrong block size");
      }
      body = body_of(good);
      gwc::store_le32(body.data() + 4, 1);
      set_body(p, good, body);
      expect_error(k.decode(p, y.data(), y.size()), GW_ERR_CORRUPT, "reserved word set");
      set_body(p, good, std::vector<uint8_t>(5, 0));
      expect_error(k.decode(p, y.data(), y.size()), GW_ERR_CORRUPT, "body shorter than its header");
    }
  }
}

}  // namespace
