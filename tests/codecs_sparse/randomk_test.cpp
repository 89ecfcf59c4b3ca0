// The randomk codec through the C ABI: shared coordinates, unbiased rescaling, hostile payloads.
#include <cmath>
#include <random>
#include <set>

#include "randomk_coords.hpp"
#include "sparse_test.hpp"

namespace {

using gwsparse::Codec;

std::vector<uint32_t> kept(const std::vector<float>& out) {
  std::vector<uint32_t> idx;
  for (size_t i = 0; i < out.size(); ++i)
    if (out[i] != 0.0f) idx.push_back(static_cast<uint32_t>(i));
  return idx;
}

// Coordinates chosen for (seed, step): decode a payload of an all-ones tensor.
std::vector<uint32_t> coordinates(Codec& c, size_t n, uint64_t seed, uint64_t step) {
  const std::vector<float> ones(n, 1.0f);
  std::vector<float> out(n);
  EXPECT_EQ(c.decode(c.encode(ones, GW_DTYPE_F32, seed, step), out), GW_OK) << gw_last_error();
  return kept(out);
}

TEST(RandomkCodec, PropertiesSaySharedIndices) {
  Codec c("randomk", "");
  gw_codec_properties p = GW_CODEC_PROPERTIES_INIT;
  ASSERT_EQ(gw_codec_get_properties(c.codec, &p), GW_OK);
  EXPECT_TRUE(p.flags & GW_CODEC_SPARSE);
  EXPECT_TRUE(p.flags & GW_CODEC_SHARED_INDICES);
  EXPECT_FALSE(p.flags & GW_CODEC_LOSSLESS);
}

TEST(RandomkCodec, TwoInstancesWithTheSameSeedPickTheSameCoordinates) {
  Codec a("randomk", "[codec.randomk]\nratio = 0.01\n");
  Codec b("randomk", "[codec.randomk]\nratio = 0.01\n");
  for (size_t n : {size_t{1}, size_t{2}, size_t{255}, size_t{257}, size_t{1000001}}) {
    const auto ca = coordinates(a, n, 42, 7);
    EXPECT_EQ(ca, coordinates(b, n, 42, 7)) << "n=" << n;
    EXPECT_EQ(ca.size(), std::max<size_t>(1, static_cast<size_t>(std::llround(0.01 * n))));
  }
  // The body carries no index: preamble + k values.
  const std::vector<float> x(1000, 1.0f);
  EXPECT_EQ(a.encode(x).size(), GW_WIRE_HEADER_SIZE + 24 + 10 * 4);
}

TEST(RandomkCodec, CoordinatesChangeWithStepAndSeed) {
  Codec c("randomk", "[codec.randomk]\nratio = 0.01\n");
  const auto s0 = coordinates(c, 100000, 1, 0);
  EXPECT_NE(s0, coordinates(c, 100000, 1, 1));
  EXPECT_NE(s0, coordinates(c, 100000, 2, 0));
}

TEST(RandomkCodec, OneCoordinatePerStratum) {
  Codec c("randomk", "[codec.randomk]\nk = 97\n");
  const size_t n = 10007;
  const auto idx = coordinates(c, n, 3, 4);
  ASSERT_EQ(idx.size(), 97u);
  for (size_t j = 0; j < idx.size(); ++j) {
    EXPECT_GE(idx[j], j * n / 97);
    EXPECT_LT(idx[j], (j + 1) * n / 97);
  }
}

// The CPU encoder draws its coordinates incrementally and reads them a block ahead; they must be the
// ones the shared formula (randomk_coords.hpp, which the CUDA kernels call) gives, in order, for sizes
// where n / k is not whole and blocks end part-filled.
TEST(RandomkCodec, CoordinatesAreTheSharedFormulas) {
  for (const uint64_t k : {uint64_t{1}, uint64_t{3}, uint64_t{64}, uint64_t{65}, uint64_t{977}, uint64_t{4099}}) {
    Codec c("randomk", "[codec.randomk]\nk = " + std::to_string(k) + "\n");
    const uint64_t n = 1000003;  // prime: every k leaves a remainder
    std::vector<float> x(n);
    for (uint64_t i = 0; i < n; ++i) x[i] = static_cast<float>(i);  // exact below 2^24: a value names its index
    const auto body = gwsparse::body_of(c.encode(x, GW_DTYPE_F32, 11, 5));
    ASSERT_EQ(body.size(), 24 + 4 * k);
    const gwc::RandomStream stream = gwrandomk::coordinate_stream(11, 5);
    for (uint64_t j = 0; j < k; ++j) {
      float v;
      std::memcpy(&v, body.data() + 24 + 4 * j, 4);
      const gwrandomk::Stratum s = gwrandomk::stratum(j, n, k, stream.word(j));
      ASSERT_EQ(static_cast<uint64_t>(v), s.position) << "k=" << k << " j=" << j;
    }
  }
}

TEST(RandomkCodec, RescaledValuesAreUnbiasedInTheMean) {
  Codec c("randomk", "[codec.randomk]\nk = 50\nrescale = true\n");
  const size_t n = 1000;
  std::vector<float> x(n);
  for (size_t i = 0; i < n; ++i) x[i] = std::sin(0.1f * static_cast<float>(i)) + 0.5f;
  std::vector<double> sum(n, 0.0);
  const int steps = 4000;
  for (int s = 0; s < steps; ++s) {
    std::vector<float> out(n);
    ASSERT_EQ(c.decode(c.encode(x, GW_DTYPE_F32, 9, static_cast<uint64_t>(s)), out), GW_OK);
    for (size_t i = 0; i < n; ++i) sum[i] += out[i];
  }
  // Each element is kept with probability 1/20 and scaled by 20: the mean of the decoded tensor
  // converges to x. Standard error per element: |x| * sqrt(19 / steps) ~ 0.07 |x|; the whole-tensor
  // mean is far tighter.
  double err = 0, total = 0, total_x = 0;
  for (size_t i = 0; i < n; ++i) {
    const double mean = sum[i] / steps;
    err = std::max(err, std::fabs(mean - x[i]) / (std::fabs(x[i]) + 0.1));
    total += mean;
    total_x += x[i];
  }
  EXPECT_LT(err, 0.5);
  EXPECT_NEAR(total / n, total_x / n, 0.01 * std::fabs(total_x / n) + 0.005);
}

TEST(RandomkCodec, Fp16ValuesAndAccumulate) {
  Codec c("randomk", "[codec.randomk]\nk = 10\nvalues = \"fp16\"\n");
  std::vector<float> x(100);
  for (size_t i = 0; i < x.size(); ++i) x[i] = 0.25f * static_cast<float>(i) + 1.0f;
  const auto payload = c.encode(x, GW_DTYPE_F32, 5, 5);
  EXPECT_EQ(payload.size(), GW_WIRE_HEADER_SIZE + 24 + 10 * 2);
  std::vector<float> out(x.size(), 2.0f);
  ASSERT_EQ(c.decode(payload, out, GW_DTYPE_F32, GW_DECODE_ACCUMULATE), GW_OK);
  int changed = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    if (out[i] == 2.0f) continue;
    ++changed;
    EXPECT_EQ(out[i], 2.0f + x[i]);  // these values are exact in fp16
  }
  EXPECT_EQ(changed, 10);
}

struct RandomkHostile : ::testing::Test {
  Codec c{"randomk", "[codec.randomk]\nk = 8\n"};
  std::vector<float> x = std::vector<float>(64, 1.0f);
  std::vector<float> out = std::vector<float>(64, 0.0f);
  void expect_corrupt(const std::vector<unsigned char>& body, const std::string& phrase) {
    const auto payload = gwsparse::with_body(c.encode(x), body);
    EXPECT_EQ(c.decode(payload, out), GW_ERR_CORRUPT);
    EXPECT_NE(std::string(gw_last_error()).find(phrase), std::string::npos) << gw_last_error();
  }
};

TEST_F(RandomkHostile, TruncatedOversizedAndMalformed) {
  const auto body = gwsparse::body_of(c.encode(x));
  ASSERT_GT(body.size(), 10u);
  expect_corrupt(std::vector<unsigned char>(body.begin(), body.end() - 1), "expected");
  auto big = body;
  big.push_back(0);
  expect_corrupt(big, "expected");
  expect_corrupt(std::vector<unsigned char>(body.begin(), body.begin() + 10), "preamble");
  auto many = body;
  gwsparse::put32(many.data() + 4, 65);
  expect_corrupt(many, "k = 65");
  auto flags = body;
  flags[1] = 0x80;
  expect_corrupt(flags, "flags");
  auto format = body;
  format[0] = 3;
  expect_corrupt(format, "value format");
}

}  // namespace
