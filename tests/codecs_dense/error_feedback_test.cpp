// Error feedback (gradwire.h, "Error feedback") through the C ABI around the lossy dense codecs.
#include <gradwire/gradwire.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "gw_test.hpp"

namespace {

struct Ef {
  gwtest::Runtime runtime;
  gw_codec* codec = nullptr;
  gw_error_feedback* ef = nullptr;
  explicit Ef(const char* name, const std::string& toml = "") : runtime(toml, {GW_PLUGIN_DIR}) {
    EXPECT_EQ(gw_codec_create(runtime.rt, name, &codec), GW_OK) << gw_last_error();
    EXPECT_EQ(gw_error_feedback_create(codec, &ef), GW_OK) << gw_last_error();
  }
  ~Ef() {
    gw_error_feedback_destroy(ef);
    gw_codec_destroy(codec);
  }
  std::vector<uint8_t> encode(std::vector<float>& x, uint64_t id = 0, bool use_ef = true) {
    gw_tensor t = GW_TENSOR_INIT;
    t.data = x.data();
    t.count = x.size();
    uint64_t cap = 0, size = 0;
    EXPECT_EQ(gw_codec_max_encoded_size(codec, GW_DTYPE_F32, x.size(), &cap), GW_OK);
    std::vector<uint8_t> p(cap);
    if (use_ef) {
      EXPECT_EQ(gw_error_feedback_encode(ef, id, nullptr, &t, p.data(), cap, &size), GW_OK) << gw_last_error();
    } else {
      EXPECT_EQ(gw_codec_encode(codec, nullptr, &t, p.data(), cap, &size), GW_OK) << gw_last_error();
    }
    p.resize(size);
    return p;
  }
  std::vector<float> decode(const std::vector<uint8_t>& p, size_t n) {
    std::vector<float> y(n);
    gw_tensor t = GW_TENSOR_INIT;
    t.data = y.data();
    t.count = n;
    EXPECT_EQ(gw_codec_decode(codec, nullptr, p.data(), p.size(), &t, 0), GW_OK) << gw_last_error();
    return y;
  }
  std::vector<uint8_t> save() {
    uint64_t need = 0, size = 0;
    EXPECT_EQ(gw_error_feedback_state_size(ef, &need), GW_OK);
    std::vector<uint8_t> blob(need);
    EXPECT_EQ(gw_error_feedback_save(ef, blob.data(), blob.size(), &size), GW_OK) << gw_last_error();
    EXPECT_EQ(size, need);
    return blob;
  }
};

std::vector<float> step_input(std::mt19937& rng, size_t n) {
  std::normal_distribution<float> g(0.1f, 1.0f);  // a drift: dropped mass would accumulate
  std::vector<float> x(n);
  for (auto& v : x) v = g(rng);
  return x;
}

// Largest |sum of decoded - sum of inputs| over the steps, per element.
double tracking_gap(const char* codec, const std::string& toml, int steps, bool use_ef) {
  Ef e(codec, toml);
  const size_t n = 1000;
  std::mt19937 rng(42);
  std::vector<double> sx(n, 0.0), sd(n, 0.0);
  double worst = 0;
  for (int t = 0; t < steps; ++t) {
    std::vector<float> x = step_input(rng, n);
    const auto y = e.decode(e.encode(x, 7, use_ef), n);
    for (size_t i = 0; i < n; ++i) {
      sx[i] += x[i];
      sd[i] += y[i];
      worst = std::max(worst, std::fabs(sd[i] - sx[i]));
    }
  }
  return worst;
}

TEST(ErrorFeedback, DecodedSumTracksInputSumWithABoundThatDoesNotGrow) {
  struct Case {
    const char* codec;
    std::string toml;
  } cases[] = {{"onebit", "[codec.onebit]\nblock_size = 64\n"}, {"int8", "[codec.int8]\nblock_size = 256\n"},
               {"fp16", ""}};
  for (const Case& c : cases) {
    const double short_run = tracking_gap(c.codec, c.toml, 50, true);
    const double long_run = tracking_gap(c.codec, c.toml, 400, true);
    // With error feedback the gap is the last residual: bounded by a few input magnitudes, whatever T.
    EXPECT_LT(long_run, 8.0) << c.codec;
    EXPECT_LT(long_run, 2.0 * short_run + 1e-3) << c.codec << ": the gap grew with T";
  }
  // Without it, onebit's dropped mass piles up with the drift: the test can tell the difference.
  EXPECT_GT(tracking_gap("onebit", "[codec.onebit]\nblock_size = 64\n", 400, false), 40.0);
}

TEST(ErrorFeedback, ResidualMakesTheSecondPayloadDiffer_AndResetForgetsIt) {
  Ef e("onebit");
  std::mt19937 rng(1);
  std::vector<float> x = step_input(rng, 300);
  const auto first = e.encode(x);
  EXPECT_EQ(first, e.encode(x, 0, false)) << "a fresh residual is zero";
  EXPECT_NE(e.encode(x), first) << "the residual is added to the next input";
  ASSERT_EQ(gw_error_feedback_reset(e.ef), GW_OK);
  EXPECT_EQ(e.encode(x), first);
  std::vector<float> other(10);
  gw_tensor t = GW_TENSOR_INIT;
  t.data = other.data();
  t.count = other.size();
  std::vector<uint8_t> p(1000);
  uint64_t size = 0;
  EXPECT_EQ(gw_error_feedback_encode(e.ef, 0, nullptr, &t, p.data(), p.size(), &size), GW_ERR_MISMATCH);
  EXPECT_NE(std::string(gw_last_error()).find("buffer 0"), std::string::npos) << gw_last_error();
  EXPECT_EQ(gw_error_feedback_encode(e.ef, 1, nullptr, &t, p.data(), p.size(), &size), GW_OK) << "another id";
}

TEST(ErrorFeedback, SavedStateRestoresTheSamePayloads) {
  Ef a("int8", "[codec.int8]\nblock_size = 32\n"), b("int8", "[codec.int8]\nblock_size = 32\n");
  std::mt19937 rng(5);
  for (int t = 0; t < 5; ++t) {
    std::vector<float> x = step_input(rng, 500), z = step_input(rng, 70);
    a.encode(x, 1);
    a.encode(z, 2);
  }
  const auto blob = a.save();
  ASSERT_EQ(gw_error_feedback_load(b.ef, blob.data(), blob.size()), GW_OK) << gw_last_error();
  for (int t = 0; t < 3; ++t) {
    std::vector<float> x = step_input(rng, 500);
    EXPECT_EQ(a.encode(x, 1), b.encode(x, 1)) << "step " << t;
  }
  uint64_t size = 0;
  std::vector<uint8_t> small(10);
  EXPECT_EQ(gw_error_feedback_save(a.ef, small.data(), small.size(), &size), GW_ERR_BUFFER_TOO_SMALL);
}

TEST(ErrorFeedback, BadBlobsGiveTheirErrorsAndLeaveTheStateAlone) {
  Ef a("onebit"), other("int8");
  std::mt19937 rng(9);
  std::vector<float> x = step_input(rng, 100);
  a.encode(x);
  const auto blob = a.save();
  auto check = [&](std::vector<uint8_t> b, gw_status want, const char* what) {
    EXPECT_EQ(gw_error_feedback_load(a.ef, b.data(), b.size()), want) << what << ": " << gw_last_error();
    EXPECT_STRNE(gw_last_error(), "") << what;
  };
  check(std::vector<uint8_t>(blob.begin(), blob.end() - 1), GW_ERR_CORRUPT, "truncated");
  auto b = blob;
  b[40] ^= 1;
  check(b, GW_ERR_CORRUPT, "flipped bit");
  b = blob;
  b.push_back(0);
  check(b, GW_ERR_CORRUPT, "trailing byte");
  b = blob;
  b[0] = 'X';
  check(b, GW_ERR_CORRUPT, "bad magic");
  b = blob;
  b[4] = 2;
  check(b, GW_ERR_VERSION, "future version");
  check(std::vector<uint8_t>(3, 0), GW_ERR_CORRUPT, "too short");
  EXPECT_EQ(gw_error_feedback_load(other.ef, blob.data(), blob.size()), GW_ERR_MISMATCH) << gw_last_error();
  EXPECT_EQ(a.save(), blob) << "a refused blob leaves the state unchanged";
}

}  // namespace

namespace {

// Golden bytes of the error-feedback state blob (docs/wire-format.md): little-endian whatever the host.
// fp16 rounds 1 + 2^-12 to 1, so buffer 7 keeps the residual 2^-12 (f32 0x39800000).
TEST(ErrorFeedbackBlob, GoldenBytes) {
  Ef e("fp16");
  std::vector<float> x = {1.0f + 1.0f / 4096.0f};
  const auto payload = e.encode(x, 7);
  const auto blob = e.save();
  const std::vector<uint8_t> head = {0x47, 0x57, 0x45, 0x46,  // "GWEF"
                                     1, 0, 0, 0};            // version 1
  ASSERT_EQ(blob.size(), 24u + 16u + 4u + 8u);
  EXPECT_TRUE(std::equal(head.begin(), head.end(), blob.begin()));
  EXPECT_TRUE(std::equal(payload.begin() + 8, payload.begin() + 12, blob.begin() + 8)) << "the codec id, as in the wire header";
  const std::vector<uint8_t> rest = {0, 0, 0, 0,               // reserved
                                     1, 0, 0, 0, 0, 0, 0, 0,   // one buffer
                                     7, 0, 0, 0, 0, 0, 0, 0,   // its id
                                     1, 0, 0, 0, 0, 0, 0, 0,   // one element
                                     0x00, 0x00, 0x80, 0x39};  // 2^-12
  EXPECT_TRUE(std::equal(rest.begin(), rest.end(), blob.begin() + 12));
  uint64_t h = 0xcbf29ce484222325ull;
  for (size_t i = 0; i + 8 < blob.size(); ++i) h = (h ^ blob[i]) * 0x100000001b3ull;
  uint64_t stored = 0;
  for (int i = 0; i < 8; ++i) stored |= uint64_t(blob[blob.size() - 8 + i]) << (8 * i);
  EXPECT_EQ(stored, h) << "FNV-1a 64 of every preceding byte, little-endian";
}

}  // namespace
