// The sparseq codec through the C ABI: properties, the kept set and the quantisation bound, ties, error
// feedback over many steps, configuration errors and hostile payloads.
#include <algorithm>
#include <cmath>
#include <random>

#include "sparse_test.hpp"

namespace {

using gwsparse::Codec;

std::vector<float> data(size_t n, uint32_t seed) {
  std::mt19937 g(seed);
  std::normal_distribution<float> d;
  std::vector<float> x(n);
  for (auto& v : x) v = d(g);
  return x;
}

std::string config(const std::string& keys) { return "[codec.sparseq]\n" + keys; }

uint64_t target(double ratio, size_t n) {
  return std::max<uint64_t>(1, static_cast<uint64_t>(std::llround(ratio * static_cast<double>(n))));
}

TEST(SparseqCodec, PropertiesSaySparseLossyAndHostOnly) {
  Codec c("sparseq", "");
  gw_codec_properties p = GW_CODEC_PROPERTIES_INIT;
  ASSERT_EQ(gw_codec_get_properties(c.codec, &p), GW_OK);
  EXPECT_TRUE(p.flags & GW_CODEC_SPARSE);
  EXPECT_FALSE(p.flags & GW_CODEC_LOSSLESS);  // so the runtime applies error feedback around it
  EXPECT_FALSE(p.flags & GW_CODEC_SHARED_INDICES);
  EXPECT_FALSE(p.flags & GW_CODEC_CUDA);
  EXPECT_TRUE(p.dtypes & (1u << GW_DTYPE_F32));
}

// Exactly k entries, the k largest magnitudes, each within half a step of its group (the group's
// magnitude range / 2^bits) with its sign kept.
TEST(SparseqCodec, KeepsExactlyTheKLargestWithinTheQuantisationBound) {
  for (int bits : {2, 3, 4}) {
    for (size_t n : {size_t{1}, size_t{2}, size_t{255}, size_t{257}, size_t{1000001}}) {
      SCOPED_TRACE("bits " + std::to_string(bits) + " n=" + std::to_string(n));
      Codec c("sparseq", config("ratio = 0.03\nbits = " + std::to_string(bits) + "\ngroup = 64\n"));
      const auto x = data(n, 1);
      const auto payload = c.encode(x);
      uint64_t cap = 0;
      ASSERT_EQ(gw_codec_max_encoded_size(c.codec, GW_DTYPE_F32, n, &cap), GW_OK);
      EXPECT_LE(payload.size(), cap);
      std::vector<float> out(n, 123.0f);
      ASSERT_EQ(c.decode(payload, out), GW_OK) << gw_last_error();
      std::vector<size_t> kept;
      float min_kept = INFINITY, max_dropped = 0;
      for (size_t i = 0; i < n; ++i) {
        if (out[i] != 0.0f) {
          kept.push_back(i);
          min_kept = std::min(min_kept, std::fabs(x[i]));
        } else {
          max_dropped = std::max(max_dropped, std::fabs(x[i]));
        }
      }
      ASSERT_EQ(kept.size(), target(0.03, n));
      EXPECT_LE(max_dropped, min_kept);
      const float levels = static_cast<float>(1u << (bits - 1));
      for (size_t g = 0; g < kept.size(); g += 64) {
        const size_t end = std::min(kept.size(), g + 64);
        float lo = INFINITY, hi = 0;
        for (size_t j = g; j < end; ++j) {
          lo = std::min(lo, std::fabs(x[kept[j]]));
          hi = std::max(hi, std::fabs(x[kept[j]]));
        }
        const float bound = (hi - lo) / (2 * levels) * 1.0001f + 1e-6f * hi;
        for (size_t j = g; j < end; ++j) {
          const size_t i = kept[j];
          ASSERT_EQ(std::signbit(out[i]), std::signbit(x[i])) << "element " << i;
          ASSERT_LE(std::fabs(out[i] - x[i]), bound) << "element " << i;
          ASSERT_GE(std::fabs(out[i]), lo * 0.9999f) << "element " << i;
          ASSERT_LE(std::fabs(out[i]), hi * 1.0001f) << "element " << i;
        }
      }
    }
  }
}

TEST(SparseqCodec, PayloadShrinksWithTheBits) {
  const auto x = data(100000, 2);
  size_t last = 0;
  for (int bits : {2, 3, 4}) {
    Codec c("sparseq", config("bits = " + std::to_string(bits) + "\n"));
    const size_t size = c.encode(x).size();
    if (last) {
      EXPECT_GT(size, last);
    }
    last = size;
  }
  Codec topk("topk", "[codec.topk]\nselection = \"exact\"\n");
  EXPECT_LT(last, topk.encode(x).size());  // 4 bits < fp32 values, same delta indices
}

// Equal magnitudes: the first k in index order are kept, and two encodings give the same bytes.
TEST(SparseqCodec, TiesKeepTheFirstInIndexOrderDeterministically) {
  std::vector<float> x(1000);
  for (size_t i = 0; i < x.size(); ++i) x[i] = (i % 3 == 0) ? -0.5f : 0.5f;
  x[700] = 2.0f;
  Codec c("sparseq", config("k = 10\nbits = 2\n"));
  const auto a = c.encode(x), b = c.encode(x);
  EXPECT_EQ(a, b);
  std::vector<float> out(x.size());
  ASSERT_EQ(c.decode(a, out), GW_OK) << gw_last_error();
  for (size_t i = 0; i < x.size(); ++i) {
    const bool want = i < 9 || i == 700;
    EXPECT_EQ(out[i] != 0.0f, want) << "element " << i;
    if (want) {
      EXPECT_EQ(std::signbit(out[i]), std::signbit(x[i])) << "element " << i;
    }
  }
  Codec other("sparseq", config("k = 10\nbits = 2\n"));
  EXPECT_EQ(other.encode(x), a);  // a fresh instance writes the same bytes
}

TEST(SparseqCodec, DecodeAccumulatesIntoTheOutput) {
  const auto x = data(5000, 3);
  Codec c("sparseq", config("bits = 4\n"));
  const auto payload = c.encode(x);
  std::vector<float> plain(x.size()), acc(x.size(), 1.0f);
  ASSERT_EQ(c.decode(payload, plain), GW_OK);
  ASSERT_EQ(c.decode(payload, acc, GW_DTYPE_F32, GW_DECODE_ACCUMULATE), GW_OK);
  for (size_t i = 0; i < x.size(); ++i) EXPECT_EQ(acc[i], 1.0f + plain[i]) << "element " << i;
}

TEST(SparseqCodec, HalfPrecisionTensors) {
  const auto x = data(4000, 4);
  for (gw_dtype dtype : {GW_DTYPE_F16, GW_DTYPE_BF16}) {
    std::vector<uint16_t> h(x.size());
    for (size_t i = 0; i < x.size(); ++i) {
      const float v = x[i];
      uint32_t b;
      std::memcpy(&b, &v, 4);
      h[i] = dtype == GW_DTYPE_BF16 ? static_cast<uint16_t>(b >> 16) : 0;
    }
    if (dtype == GW_DTYPE_F16)
      for (size_t i = 0; i < x.size(); ++i) h[i] = static_cast<uint16_t>(0x3c00 + (i * 37) % 0x400);  // [1, 2)
    Codec c("sparseq", config("k = 40\nbits = 4\n"));
    const auto payload = c.encode(h, dtype);
    std::vector<uint16_t> out(h.size(), 0x1234);
    ASSERT_EQ(c.decode(payload, out, dtype), GW_OK) << gw_last_error();
    size_t kept = 0;
    for (uint16_t v : out) kept += v != 0;
    EXPECT_EQ(kept, 40u);
  }
}

// The runtime's error feedback around sparseq: the sum of what was decoded over T steps differs from
// the sum of the inputs by the last residual only, so relative to the growing sum it shrinks; without
// error feedback the same codec loses most of the sum.
TEST(SparseqCodec, ErrorFeedbackMakesTheRunningSumConverge) {
  const size_t n = 4096;
  const int steps = 400;
  Codec c("sparseq", config("ratio = 0.02\nbits = 2\n"));
  gw_error_feedback* ef = nullptr;
  ASSERT_EQ(gw_error_feedback_create(c.codec, &ef), GW_OK) << gw_last_error();
  uint64_t cap = 0;
  ASSERT_EQ(gw_codec_max_encoded_size(c.codec, GW_DTYPE_F32, n, &cap), GW_OK);
  std::vector<unsigned char> payload(cap);
  std::vector<double> in_sum(n, 0.0), ef_sum(n, 0.0), plain_sum(n, 0.0);
  std::vector<float> out(n);
  std::mt19937 g(11);
  std::normal_distribution<float> noise;
  const auto base = data(n, 12);  // a fixed part, so that what is dropped repeats
  auto gap = [&](const std::vector<double>& s) {
    double e = 0, norm = 0;
    for (size_t i = 0; i < n; ++i) {
      e += (s[i] - in_sum[i]) * (s[i] - in_sum[i]);
      norm += in_sum[i] * in_sum[i];
    }
    return std::sqrt(e / norm);
  };
  double gap_early = 0;
  for (int t = 0; t < steps; ++t) {
    std::vector<float> x(n);
    for (size_t i = 0; i < n; ++i) x[i] = base[i] + 0.5f * noise(g);
    for (size_t i = 0; i < n; ++i) in_sum[i] += x[i];
    gw_tensor tx = GW_TENSOR_INIT;
    tx.data = x.data();
    tx.count = n;
    uint64_t size = 0;
    ASSERT_EQ(gw_error_feedback_encode(ef, 0, nullptr, &tx, payload.data(), cap, &size), GW_OK) << gw_last_error();
    ASSERT_EQ(c.decode(std::vector<unsigned char>(payload.begin(), payload.begin() + size), out), GW_OK);
    for (size_t i = 0; i < n; ++i) ef_sum[i] += out[i];
    ASSERT_EQ(c.decode(c.encode(x), out), GW_OK);
    for (size_t i = 0; i < n; ++i) plain_sum[i] += out[i];
    if (t == steps / 8 - 1) gap_early = gap(ef_sum);
  }
  const double gap_ef = gap(ef_sum), gap_plain = gap(plain_sum);
  EXPECT_LT(gap_ef, 0.5 * gap_early) << "relative gap after " << steps / 8 << " steps " << gap_early << ", after "
                                     << steps << " " << gap_ef;
  EXPECT_LT(gap_ef, 0.15) << gap_ef;
  EXPECT_GT(gap_plain, 0.8) << gap_plain;  // without feedback 98 % of the coordinates never arrive
  ASSERT_EQ(gw_error_feedback_destroy(ef), GW_OK);
}

TEST(SparseqCodec, ConfigErrorsNameTheKey) {
  for (const char* bad : {"bits = 1\n", "bits = 5\n", "bits = 8\n", "ratio = 0.0\n", "ratio = 1.5\n", "group = 0\n",
                          "bits = \"two\"\n"}) {
    SCOPED_TRACE(bad);
    gw_runtime* rt = nullptr;
    const gw_status s = gwtest::create_runtime(config(bad), &rt);
    if (s == GW_OK) {  // a key the loader cannot range-check is refused when the codec is made
      gw_codec* codec = nullptr;
      EXPECT_EQ(gw_codec_create(rt, "sparseq", &codec), GW_ERR_CONFIG);
      const std::string error = gw_last_error();
      gw_runtime_destroy(rt);
      EXPECT_NE(error.find(std::string(bad).substr(0, std::string(bad).find(' '))), std::string::npos) << error;
      continue;
    } else {
      EXPECT_EQ(s, GW_ERR_CONFIG);
    }
    const std::string key = std::string(bad).substr(0, std::string(bad).find(' '));
    EXPECT_NE(std::string(gw_last_error()).find(key), std::string::npos) << gw_last_error();
  }
}

TEST(SparseqCodec, NonFiniteInputIsRefused) {
  auto x = data(100, 6);
  x[17] = INFINITY;
  Codec c("sparseq", config("k = 5\n"));
  gw_tensor t = GW_TENSOR_INIT;
  t.data = x.data();
  t.count = x.size();
  uint64_t cap = 0, size = 0;
  ASSERT_EQ(gw_codec_max_encoded_size(c.codec, GW_DTYPE_F32, x.size(), &cap), GW_OK);
  std::vector<unsigned char> payload(cap);
  EXPECT_EQ(gw_codec_encode(c.codec, nullptr, &t, payload.data(), cap, &size), GW_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(gw_last_error()).find("element 17"), std::string::npos) << gw_last_error();
}

TEST(SparseqCodec, DeviceTensorsAreRefusedWithAClearMessage) {
  std::vector<float> x(16, 1.0f);
  Codec c("sparseq", "");
  gw_tensor t = GW_TENSOR_INIT;
  t.data = x.data();
  t.count = x.size();
  t.memory = GW_MEMORY_CUDA;
  uint64_t cap = 0, size = 0;
  ASSERT_EQ(gw_codec_max_encoded_size(c.codec, GW_DTYPE_F32, x.size(), &cap), GW_OK);
  std::vector<unsigned char> payload(cap);
  const gw_status s = gw_codec_encode(c.codec, nullptr, &t, payload.data(), cap, &size);
  EXPECT_EQ(s, GW_ERR_UNSUPPORTED);  // the runtime's refusal, from the missing GW_CODEC_CUDA flag
  EXPECT_NE(std::string(gw_last_error()).find("no CUDA implementation"), std::string::npos) << gw_last_error();
}

// ---- hostile payloads ------------------------------------------------------------------------------

// Body: 16-byte preamble, 8 bytes per scale pair, codes, delta indices (sparseq_body.hpp).
struct SparseqHostile : ::testing::Test {
  Codec c{"sparseq", config("k = 6\nbits = 3\ngroup = 4\n")};  // 2 scale pairs, 18 bits of codes = 3 bytes
  std::vector<float> x = data(64, 5);
  std::vector<float> out = std::vector<float>(64, 0.0f);
  static constexpr size_t kScales = 16, kCodes = 16 + 16, kIndices = 16 + 16 + 3;

  std::vector<unsigned char> body() { return gwsparse::body_of(c.encode(x)); }
  void expect_corrupt(const std::vector<unsigned char>& b, const std::string& phrase) {
    const auto payload = gwsparse::with_body(c.encode(x), b);
    EXPECT_EQ(c.decode(payload, out), GW_ERR_CORRUPT);
    EXPECT_NE(std::string(gw_last_error()).find(phrase), std::string::npos) << gw_last_error();
  }
};

TEST_F(SparseqHostile, TheValidBodyHasTheDocumentedLayout) {
  const auto b = body();
  EXPECT_EQ(b[0], 3);
  EXPECT_EQ(gwsparse::le32(b.data() + 4), 6u);
  EXPECT_EQ(gwsparse::le32(b.data() + 8), 4u);
  EXPECT_EQ(b.size(), kIndices + gwsparse::le32(b.data() + 12));
  EXPECT_EQ(c.decode(gwsparse::with_body(c.encode(x), b), out), GW_OK) << gw_last_error();
}

TEST_F(SparseqHostile, BadPreamble) {
  expect_corrupt(std::vector<unsigned char>(15, 0), "preamble");
  auto b = body();
  b[0] = 5;
  expect_corrupt(b, "bits per code");
  b = body();
  b[2] = 1;
  expect_corrupt(b, "reserved");
  b = body();
  gwsparse::put32(b.data() + 8, 0);
  expect_corrupt(b, "group size is 0");
  b = body();
  gwsparse::put32(b.data() + 4, 65);
  expect_corrupt(b, "entries for a tensor of 64");
}

TEST_F(SparseqHostile, LengthsThatDisagreeWithTheBody) {
  auto b = body();
  b.pop_back();
  expect_corrupt(b, "expected");
  b = body();
  b.push_back(0);
  expect_corrupt(b, "expected");
  b = body();
  gwsparse::put32(b.data() + 4, 9);  // a third scale pair and more codes than the body holds
  expect_corrupt(b, "expected");
  b = body();
  gwsparse::put32(b.data() + 4, 7);  // the same pairs and code bytes, but 7 varints in 6 index bytes
  expect_corrupt(b, "cannot hold");
  b = body();
  gwsparse::put32(b.data() + 12, gwsparse::le32(b.data() + 12) + 1);
  expect_corrupt(b, "expected");
  // A header whose index_bytes is too small for m varints, with the body cut to match.
  b = body();
  gwsparse::put32(b.data() + 12, 5);
  b.resize(kIndices + 5);
  expect_corrupt(b, "cannot hold");
}

TEST_F(SparseqHostile, BadScalesAndPadding) {
  auto b = body();
  gwsparse::put32(b.data() + kScales, 0x7fc00000u);  // NaN floor
  expect_corrupt(b, "scale pair 0");
  b = body();
  gwsparse::put32(b.data() + kScales + 12, 0xbf800000u);  // step -1 of the second group
  expect_corrupt(b, "scale pair 1");
  b = body();
  b[kCodes + 2] |= 0x80;  // bit 23 of the codes: past the 18 used
  expect_corrupt(b, "unused bits");
}

TEST_F(SparseqHostile, BadIndices) {
  auto b = body();
  const size_t ib = gwsparse::le32(b.data() + 12);
  // Six one-byte gaps of 20: the fourth index reaches 79 >= 64.
  if (ib == 6) {
    for (size_t j = 0; j < 6; ++j) b[kIndices + j] = 20;
    expect_corrupt(b, "out of range");
  }
  // The last varint continued: truncated at the end of the body.
  b = body();
  b.back() |= 0x80;
  expect_corrupt(b, "truncated");
  // Varints longer than 5 bytes.
  b.resize(kIndices);
  for (int j = 0; j < 6; ++j) b.insert(b.end(), {0x80, 0x80, 0x80, 0x80, 0x80});
  gwsparse::put32(b.data() + 12, 30);
  expect_corrupt(b, "longer than 5 bytes");
}

}  // namespace
