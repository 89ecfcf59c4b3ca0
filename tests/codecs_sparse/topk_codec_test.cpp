// The topk codec through the C ABI: properties, every body format round trip, decode into the dense
// output, and hostile payloads.
#include <cmath>
#include <random>

#include "gw_codec/portable.h"
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

std::string config(const std::string& indices, const std::string& values, const std::string& extra = "") {
  return "[codec.topk]\nindices = \"" + indices + "\"\nvalues = \"" + values + "\"\n" + extra;
}

TEST(TopkCodec, PropertiesSaySparseAndLossy) {
  Codec c("topk", "");
  gw_codec_properties p = GW_CODEC_PROPERTIES_INIT;
  ASSERT_EQ(gw_codec_get_properties(c.codec, &p), GW_OK);
  EXPECT_TRUE(p.flags & GW_CODEC_SPARSE);
  EXPECT_FALSE(p.flags & GW_CODEC_LOSSLESS);
  EXPECT_FALSE(p.flags & GW_CODEC_SHARED_INDICES);
  EXPECT_TRUE(p.dtypes & (1u << GW_DTYPE_F32));
}

TEST(TopkCodec, EveryFormatRoundTripsTheSelectedValues) {
  for (const char* indices : {"u32", "delta"}) {
    for (const char* values : {"fp32", "fp16"}) {
      for (size_t n : {size_t{1}, size_t{2}, size_t{255}, size_t{257}, size_t{1000001}}) {
        SCOPED_TRACE(std::string(indices) + " " + values + " n=" + std::to_string(n));
        Codec c("topk", config(indices, values, "ratio = 0.05\nselection = \"exact\"\n"));
        const auto x = data(n, 1);
        const auto payload = c.encode(x);
        uint64_t cap = 0;
        ASSERT_EQ(gw_codec_max_encoded_size(c.codec, GW_DTYPE_F32, n, &cap), GW_OK);
        EXPECT_LE(payload.size(), cap);
        std::vector<float> out(n, 123.0f);
        ASSERT_EQ(c.decode(payload, out), GW_OK) << gw_last_error();
        const uint64_t k = std::max<uint64_t>(1, static_cast<uint64_t>(std::llround(0.05 * n)));
        uint64_t kept = 0;
        float min_kept = INFINITY, max_dropped = 0;
        for (size_t i = 0; i < n; ++i) {
          if (out[i] != 0.0f) {
            ++kept;
            const float expect = std::string(values) == "fp32" ? x[i] : gwc::f16_to_f32(gwc::f32_to_f16(x[i]));
            ASSERT_EQ(out[i], expect) << "element " << i;
            min_kept = std::min(min_kept, std::fabs(x[i]));
          } else {
            max_dropped = std::max(max_dropped, std::fabs(x[i]));
          }
        }
        EXPECT_EQ(kept, k);
        EXPECT_LE(max_dropped, min_kept);
      }
    }
  }
}

TEST(TopkCodec, DeltaIndicesAreSmallerThanU32) {
  const auto x = data(100000, 2);
  Codec u("topk", config("u32", "fp32"));
  Codec d("topk", config("delta", "fp32"));
  const auto pu = u.encode(x), pd = d.encode(x);
  EXPECT_LT(pd.size(), pu.size());
  std::vector<float> a(x.size()), b(x.size());
  ASSERT_EQ(u.decode(pu, a), GW_OK);
  ASSERT_EQ(d.decode(pd, b), GW_OK);
  EXPECT_EQ(a, b);
}

TEST(TopkCodec, DecodeAccumulatesIntoTheOutput) {
  const auto x = data(1000, 3);
  Codec c("topk", config("delta", "fp32", "k = 10\n"));
  const auto payload = c.encode(x);
  std::vector<float> sparse(x.size(), 0.0f), acc(x.size(), 1.0f);
  ASSERT_EQ(c.decode(payload, sparse), GW_OK);
  ASSERT_EQ(c.decode(payload, acc, GW_DTYPE_F32, GW_DECODE_ACCUMULATE), GW_OK);
  for (size_t i = 0; i < x.size(); ++i) EXPECT_EQ(acc[i], 1.0f + sparse[i]);
}

TEST(TopkCodec, HalfPrecisionTensors) {
  const auto x = data(4096, 4);
  std::vector<uint16_t> h(x.size());
  for (size_t i = 0; i < x.size(); ++i) h[i] = gwc::f32_to_bf16(x[i]);
  Codec c("topk", config("u32", "fp32", "k = 40\n"));
  const auto payload = c.encode(h, GW_DTYPE_BF16);
  std::vector<uint16_t> out(h.size(), 0x3f80);
  ASSERT_EQ(c.decode(payload, out, GW_DTYPE_BF16), GW_OK) << gw_last_error();
  size_t kept = 0;
  for (size_t i = 0; i < h.size(); ++i) {
    if (out[i] == 0) continue;
    ++kept;
    EXPECT_EQ(out[i], h[i]);
  }
  EXPECT_EQ(kept, 40u);
}

TEST(TopkCodec, ConfigErrorsNameTheKey) {
  gw_runtime* rt = nullptr;
  ASSERT_EQ(gwtest::create_runtime("[codec.topk]\nindices = \"u16\"\n", &rt), GW_ERR_CONFIG);
  EXPECT_NE(std::string(gw_last_error()).find("indices"), std::string::npos) << gw_last_error();
}

// ---- hostile payloads ------------------------------------------------------------------------------

struct Hostile : ::testing::Test {
  Codec c{"topk", config("u32", "fp32", "k = 4\n")};
  Codec d{"topk", config("delta", "fp32", "k = 4\n")};
  std::vector<float> x = data(64, 5);
  std::vector<float> out = std::vector<float>(64, 0.0f);

  void expect_corrupt(Codec& codec, const std::vector<unsigned char>& body, const std::string& phrase) {
    const auto payload = gwsparse::with_body(codec.encode(x), body);
    EXPECT_EQ(codec.decode(payload, out), GW_ERR_CORRUPT);
    EXPECT_NE(std::string(gw_last_error()).find(phrase), std::string::npos) << gw_last_error();
  }
};

TEST_F(Hostile, IndexOutOfRange) {
  auto body = gwsparse::body_of(c.encode(x));
  gwsparse::put32(body.data() + 8 + 4 * 4 + 3 * 4, 64);  // the last u32 index
  expect_corrupt(c, body, "out of range");
}

TEST_F(Hostile, DuplicateIndex) {
  auto body = gwsparse::body_of(c.encode(x));
  unsigned char* idx = body.data() + 8 + 4 * 4;
  gwsparse::put32(idx + 4, gwsparse::le32(idx));
  expect_corrupt(c, body, "strictly increasing");
}

TEST_F(Hostile, Truncated) {
  auto body = gwsparse::body_of(c.encode(x));
  body.pop_back();
  expect_corrupt(c, body, "too short");
  auto dbody = gwsparse::body_of(d.encode(x));
  dbody.resize(dbody.size() - 1);
  expect_corrupt(d, dbody, "too short");
  // A varint whose continuation bit runs into the end of the body.
  auto open_varint = gwsparse::body_of(d.encode(x));
  open_varint.back() |= 0x80;
  expect_corrupt(d, open_varint, "truncated");
  expect_corrupt(c, std::vector<unsigned char>(5, 0), "preamble");
}

TEST_F(Hostile, Oversized) {
  auto body = gwsparse::body_of(c.encode(x));
  body.push_back(0);
  expect_corrupt(c, body, "expected");
  auto dbody = gwsparse::body_of(d.encode(x));
  dbody.push_back(0);
  expect_corrupt(d, dbody, "follow the last delta index");
}

TEST_F(Hostile, MoreEntriesThanElements) {
  auto body = gwsparse::body_of(c.encode(x));
  gwsparse::put32(body.data() + 4, 65);
  expect_corrupt(c, body, "entries for a tensor of 64");
}

TEST_F(Hostile, DeltaIndexBeyondTheEndAndOverlongVarint) {
  auto body = gwsparse::body_of(d.encode(x));
  const size_t first_index = 8 + 4 * 4;
  auto far = body;
  far[first_index] = 0x7f;  // first index 127 >= 64
  expect_corrupt(d, far, "out of range");
  std::vector<unsigned char> overlong(body.begin(), body.begin() + static_cast<long>(first_index));
  for (int i = 0; i < 4; ++i) overlong.insert(overlong.end(), {0x80, 0x80, 0x80, 0x80, 0x80, 0x00});
  expect_corrupt(d, overlong, "longer than 5 bytes");
}

TEST_F(Hostile, UnknownFormats) {
  auto body = gwsparse::body_of(c.encode(x));
  body[0] = 7;
  expect_corrupt(c, body, "value format");
  body[0] = 0;
  body[1] = 9;
  expect_corrupt(c, body, "index format");
}

}  // namespace
