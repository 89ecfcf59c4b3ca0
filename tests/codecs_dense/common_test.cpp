// plugins/common: the scalar conversions against an independent oracle (the compiler's _Float16 or the
// CPU's F16C, and a double-precision nearest-even search), every compiled SIMD target against the scalar bytes, and
// Philox-4x32-10 against the published known-answer vectors.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

#include "common_simd.hpp"
#include "gw_codec/philox.h"
#include "gw_codec/portable.h"
#include "hwy/targets.h"
#include "half_oracle.hpp"

namespace {

std::vector<float> conversion_inputs() {
  std::vector<float> v;
  // Every exponent with a spread of mantissas, the edges of fp16's range, and random bit patterns.
  for (uint32_t e = 0; e < 256; ++e)
    for (uint32_t m : {0u, 1u, 0xfffu, 0x1000u, 0x1001u, 0x2000u, 0x3000u, 0x5000u, 0x7fe000u, 0x7ff000u,
                       0x7fffffu, 0x400000u, 0x001fffu, 0x00ffffu, 0x10000u, 0x18000u, 0x8000u})
      for (uint32_t s : {0u, 1u}) v.push_back(gwc::f32_from_bits((s << 31) | (e << 23) | m));
  for (float f : {65504.f, 65519.99f, 65520.f, 65536.f, 6.103515625e-05f, 5.9604644775390625e-08f,
                  2.98023223876953125e-08f, 2.98023259404089e-08f, 1e-10f, 0.f, -0.f})
    v.push_back(f);
  std::mt19937 rng(12345);
  for (int i = 0; i < 1 << 20; ++i) v.push_back(gwc::f32_from_bits(rng()));
  while (v.size() % 64) v.push_back(1.0f);
  return v;
}

uint16_t bf16_oracle(float f) {
  const uint32_t u = gwc::f32_bits(f);
  if (std::isinf(f)) return (uint16_t)(u >> 16);
  const uint32_t lo = u & 0xffff0000u;
  const double x = f, a = gwc::f32_from_bits(lo), b = gwc::f32_from_bits(lo + 0x10000u);
  const double da = std::fabs(x - a), db = std::fabs(b - x);
  if (std::isinf(b) && !std::isinf(x)) {
    // Rounding up would overflow: compare with the value 2^128 that infinity stands for.
    const double db_inf = std::ldexp(1.0, 128) - std::fabs(x);
    return (uint16_t)((da < db_inf || (da == db_inf && !((lo >> 16) & 1))) ? lo >> 16 : (lo + 0x10000u) >> 16);
  }
  if (da < db || (da == db && !((lo >> 16) & 1))) return (uint16_t)(lo >> 16);
  return (uint16_t)((lo + 0x10000u) >> 16);
}

TEST(CodecCommon, F32ToF16MatchesCompilerFloat16) {
  for (float f : conversion_inputs()) {
    const uint16_t h = gwc::f32_to_f16(f);
    if (std::isnan(f)) {
      EXPECT_EQ(h & 0x7e00u, 0x7e00u) << "NaN must stay a quiet NaN";
      EXPECT_EQ(h & 0x8000u, (gwc::f32_bits(f) >> 16) & 0x8000u);
      continue;
    }
    const uint16_t rb = gwtest::half_from_float(f);
    ASSERT_EQ(h, rb) << "input bits 0x" << std::hex << gwc::f32_bits(f);
  }
}

TEST(CodecCommon, F16ToF32IsExactForEveryHalf) {
  for (uint32_t h = 0; h < 65536; ++h) {
    const float f = gwc::f16_to_f32((uint16_t)h);
    const float x = gwtest::float_from_half((uint16_t)h);
    if (std::isnan(x)) {
      EXPECT_TRUE(std::isnan(f));
      continue;
    }
    ASSERT_EQ(gwc::f32_bits(f), gwc::f32_bits(x)) << "half 0x" << std::hex << h;
    ASSERT_EQ(gwc::f32_to_f16(f), h) << "round trip of half 0x" << std::hex << h;
  }
}

TEST(CodecCommon, F32ToBF16RoundsToNearestEven) {
  for (float f : conversion_inputs()) {
    const uint16_t b = gwc::f32_to_bf16(f);
    if (std::isnan(f)) {
      EXPECT_TRUE(std::isnan(gwc::bf16_to_f32(b)));
      continue;
    }
    ASSERT_EQ(b, bf16_oracle(f)) << "input bits 0x" << std::hex << gwc::f32_bits(f);
  }
}

// Every SIMD target compiled into the binary and supported by this CPU writes the scalar bytes.
TEST(CodecCommon, EverySimdTargetWritesTheScalarBytes) {
  const std::vector<float> in = conversion_inputs();
  std::vector<uint16_t> halves(65536);
  for (uint32_t h = 0; h < 65536; ++h) halves[h] = (uint16_t)h;
  int targets_run = 0;
  for (int64_t target : hwy::SupportedAndGeneratedTargets()) {
    hwy::SetSupportedTargetsForTest(target);
    SCOPED_TRACE(hwy::TargetName(target));
    std::printf("checking SIMD target %s\n", hwy::TargetName(target));
    ++targets_run;
    std::vector<uint16_t> out(in.size());
    gwc_test::simd_to_f16(in.data(), out.data(), in.size());
    for (size_t i = 0; i < in.size(); ++i)
      ASSERT_EQ(out[i], gwc::f32_to_f16(in[i])) << "f16 of bits 0x" << std::hex << gwc::f32_bits(in[i]);
    gwc_test::simd_to_bf16(in.data(), out.data(), in.size());
    for (size_t i = 0; i < in.size(); ++i)
      ASSERT_EQ(out[i], gwc::f32_to_bf16(in[i])) << "bf16 of bits 0x" << std::hex << gwc::f32_bits(in[i]);
    std::vector<float> back(65536);
    gwc_test::simd_from_f16(halves.data(), back.data(), halves.size());
    for (uint32_t h = 0; h < 65536; ++h)
      ASSERT_EQ(gwc::f32_bits(back[h]), gwc::f32_bits(gwc::f16_to_f32((uint16_t)h))) << "half 0x" << std::hex << h;
    gwc_test::simd_from_bf16(halves.data(), back.data(), halves.size());
    for (uint32_t h = 0; h < 65536; ++h)
      ASSERT_EQ(gwc::f32_bits(back[h]), gwc::f32_bits(gwc::bf16_to_f32((uint16_t)h)));
  }
  hwy::SetSupportedTargetsForTest(0);
  EXPECT_GE(targets_run, 2) << "expected a vector target and the portable fallback";
}

// Known-answer vectors of Philox-4x32-10 (Random123's kat_vectors).
TEST(CodecCommon, PhiloxKnownAnswers) {
  struct Kat {
    uint32_t ctr[4], key[2], out[4];
  };
  const Kat kats[] = {
      {{0, 0, 0, 0}, {0, 0}, {0x6627e8d5u, 0xe169c58du, 0xbc57ac4cu, 0x9b00dbd8u}},
      {{0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu},
       {0xffffffffu, 0xffffffffu},
       {0x408f276du, 0x41c83b0eu, 0xa20bc7c6u, 0x6d5451fdu}},
      {{0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u},
       {0xa4093822u, 0x299f31d0u},
       {0xd16cfe09u, 0x94fdccebu, 0x5001e420u, 0x24126ea1u}},
  };
  for (const Kat& k : kats) {
    uint32_t out[4];
    gwc::philox4x32_10(k.ctr, k.key, out);
    for (int i = 0; i < 4; ++i) EXPECT_EQ(out[i], k.out[i]) << "word " << i;
  }
}

TEST(CodecCommon, RandomStreamWordsComeFromTheirBlock) {
  const gwc::RandomStream s{0x0123456789abcdefull, 42, gwc::kStreamInt8Rounding};
  uint32_t block[4];
  s.block(1000, block);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(s.word(4000 + i), block[i]);
  const gwc::RandomStream other{s.seed, s.step, gwc::kStreamRandomK};
  EXPECT_NE(other.word(4000), s.word(4000)) << "stream ids must separate the uses of one seed";
  const gwc::RandomStream next_step{s.seed, 43, s.stream};
  EXPECT_NE(next_step.word(4000), s.word(4000));
  double sum = 0;
  for (uint64_t i = 0; i < 100000; ++i) {
    const float u = gwc::uniform01(s.word(i));
    ASSERT_GE(u, 0.0f);
    ASSERT_LT(u, 1.0f);
    sum += u;
  }
  EXPECT_NEAR(sum / 100000, 0.5, 0.005);
}

}  // namespace
