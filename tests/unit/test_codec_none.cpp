// The lossless codec `none` through the C ABI, and the wire header checks every payload passes.
#include <cstring>
#include <numeric>
#include <vector>

#include <gradwire/plugin.h>

#include "gw_test.hpp"

namespace {

struct NoneCodec : ::testing::Test {
  gwtest::Runtime runtime{"", {std::string(GW_TEST_PLUGIN_DIR) + "/valid"}};
  gw_codec* codec = nullptr;
  void SetUp() override { ASSERT_EQ(gw_codec_create(runtime.rt, "none", &codec), GW_OK) << gw_last_error(); }
  void TearDown() override { gw_codec_destroy(codec); }

  std::vector<unsigned char> encode(std::vector<float>& x) {
    gw_tensor t = GW_TENSOR_INIT;
    t.data = x.data();
    t.count = x.size();
    uint64_t cap = 0, size = 0;
    EXPECT_EQ(gw_codec_max_encoded_size(codec, GW_DTYPE_F32, x.size(), &cap), GW_OK);
    std::vector<unsigned char> payload(cap);
    EXPECT_EQ(gw_codec_encode(codec, nullptr, &t, payload.data(), cap, &size), GW_OK) << gw_last_error();
    payload.resize(size);
    return payload;
  }
  gw_status decode(const std::vector<unsigned char>& payload, std::vector<float>& out, uint32_t flags = 0) {
    gw_tensor t = GW_TENSOR_INIT;
    t.data = out.data();
    t.count = out.size();
    return gw_codec_decode(codec, nullptr, payload.data(), payload.size(), &t, flags);
  }
};

template <class T>
void round_trip(gw_codec* codec, gw_dtype dtype, size_t n) {
  std::vector<T> in(n), out(n);
  for (size_t i = 0; i < n; ++i) in[i] = static_cast<T>((i * 37 + 11) % 251);
  gw_tensor t = GW_TENSOR_INIT;
  t.dtype = dtype;
  t.data = in.data();
  t.count = n;
  uint64_t cap = 0, size = 0;
  ASSERT_EQ(gw_codec_max_encoded_size(codec, dtype, n, &cap), GW_OK);
  EXPECT_EQ(cap, GW_WIRE_HEADER_SIZE + n * sizeof(T));
  std::vector<unsigned char> payload(cap);
  ASSERT_EQ(gw_codec_encode(codec, nullptr, &t, payload.data(), cap, &size), GW_OK) << gw_last_error();
  EXPECT_EQ(size, cap);
  t.data = out.data();
  ASSERT_EQ(gw_codec_decode(codec, nullptr, payload.data(), size, &t, 0), GW_OK) << gw_last_error();
  EXPECT_EQ(std::memcmp(in.data(), out.data(), n * sizeof(T)), 0) << gw_dtype_name(dtype) << " n=" << n;
}

}  // namespace

TEST_F(NoneCodec, PropertiesSayLossless) {
  gw_codec_properties p = GW_CODEC_PROPERTIES_INIT;
  ASSERT_EQ(gw_codec_get_properties(codec, &p), GW_OK);
  EXPECT_TRUE(p.flags & GW_CODEC_LOSSLESS);
  EXPECT_FALSE(p.flags & GW_CODEC_SPARSE);
  EXPECT_STREQ(gw_codec_name(codec), "none");
}

TEST_F(NoneCodec, RoundTripsEveryDtypeAndSize) {
  for (size_t n : {0u, 1u, 2u, 7u, 255u, 257u, 100003u}) {
    round_trip<float>(codec, GW_DTYPE_F32, n);
    round_trip<double>(codec, GW_DTYPE_F64, n);
    round_trip<uint16_t>(codec, GW_DTYPE_F16, n);
    round_trip<uint16_t>(codec, GW_DTYPE_BF16, n);
    round_trip<int32_t>(codec, GW_DTYPE_I32, n);
    round_trip<int64_t>(codec, GW_DTYPE_I64, n);
    round_trip<uint8_t>(codec, GW_DTYPE_U8, n);
  }
}

TEST_F(NoneCodec, HeaderIsTheDocumentedLayout) {
  std::vector<float> x = {1.5f, -2.0f, 3.25f};
  auto p = encode(x);
  ASSERT_EQ(p.size(), 32u + 12u);
  EXPECT_EQ(std::string(p.begin(), p.begin() + 4), "GGWR");
  EXPECT_EQ(p[4] | p[5] << 8, 1);                         // format version
  const uint32_t fnv_none = 0xada7afdbu;                  // FNV-1a("none"), see docs/wire-format.md
  uint32_t id;
  std::memcpy(&id, &p[8], 4);
  EXPECT_EQ(id, fnv_none);
  EXPECT_EQ(p[12], GW_DTYPE_F32);
  EXPECT_EQ(p[16], 3);                                    // count
  EXPECT_EQ(p[24], 12);                                   // body length
}

TEST_F(NoneCodec, AccumulatingDecodeAdds) {
  std::vector<float> x = {1, 2, 3, 4};
  auto payload = encode(x);
  std::vector<float> acc = {10, 20, 30, 40};
  ASSERT_EQ(decode(payload, acc, GW_DECODE_ACCUMULATE), GW_OK) << gw_last_error();
  EXPECT_EQ(acc, (std::vector<float>{11, 22, 33, 44}));
}

TEST_F(NoneCodec, TruncatedPayload) {
  std::vector<float> x(10, 1.0f), out(10);
  auto p = encode(x);
  p.resize(p.size() - 1);
  EXPECT_EQ(decode(p, out), GW_ERR_CORRUPT);
  EXPECT_NE(std::string(gw_last_error()).find("truncated or padded"), std::string::npos) << gw_last_error();
  p.resize(10);
  EXPECT_EQ(decode(p, out), GW_ERR_CORRUPT);
  EXPECT_NE(std::string(gw_last_error()).find("shorter than the 32-byte wire header"), std::string::npos);
}

TEST_F(NoneCodec, OversizedPayload) {
  std::vector<float> x(10, 1.0f), out(10);
  auto p = encode(x);
  p.push_back(0);
  EXPECT_EQ(decode(p, out), GW_ERR_CORRUPT);
}

TEST_F(NoneCodec, BadMagic) {
  std::vector<float> x(4, 1.0f), out(4);
  auto p = encode(x);
  p[0] = 'X';
  EXPECT_EQ(decode(p, out), GW_ERR_CORRUPT);
  EXPECT_NE(std::string(gw_last_error()).find("magic"), std::string::npos);
}

TEST_F(NoneCodec, OtherFormatVersion) {
  std::vector<float> x(4, 1.0f), out(4);
  auto p = encode(x);
  p[4] = 9;
  EXPECT_EQ(decode(p, out), GW_ERR_VERSION);
  EXPECT_NE(std::string(gw_last_error()).find("wire format version 9"), std::string::npos) << gw_last_error();
}

TEST_F(NoneCodec, PayloadOfAnotherCodec) {
  gw_codec* other = nullptr;
  ASSERT_EQ(gw_codec_create(runtime.rt, "testcodec", &other), GW_OK) << gw_last_error();
  std::vector<float> x(4, 1.0f), out(4);
  auto p = encode(x);
  gw_tensor t = GW_TENSOR_INIT;
  t.data = out.data();
  t.count = out.size();
  EXPECT_EQ(gw_codec_decode(other, nullptr, p.data(), p.size(), &t, 0), GW_ERR_MISMATCH);
  EXPECT_NE(std::string(gw_last_error()).find("not by 'testcodec'"), std::string::npos) << gw_last_error();
  gw_codec_destroy(other);
}

TEST_F(NoneCodec, CountOrDtypeDisagreeWithOutput) {
  std::vector<float> x(4, 1.0f), out(5);
  auto p = encode(x);
  EXPECT_EQ(decode(p, out), GW_ERR_MISMATCH);
  EXPECT_NE(std::string(gw_last_error()).find("payload holds 4 elements but the output has 5"), std::string::npos);
  std::vector<double> d(4);
  gw_tensor t = GW_TENSOR_INIT;
  t.dtype = GW_DTYPE_F64;
  t.data = d.data();
  t.count = 4;
  EXPECT_EQ(gw_codec_decode(codec, nullptr, p.data(), p.size(), &t, 0), GW_ERR_MISMATCH);
  EXPECT_NE(std::string(gw_last_error()).find("payload holds f32 elements but the output is f64"), std::string::npos);
}

TEST_F(NoneCodec, CapacityTooSmall) {
  std::vector<float> x(8, 1.0f);
  gw_tensor t = GW_TENSOR_INIT;
  t.data = x.data();
  t.count = x.size();
  unsigned char small[40];
  uint64_t size = 0;
  EXPECT_EQ(gw_codec_encode(codec, nullptr, &t, small, sizeof small, &size), GW_ERR_BUFFER_TOO_SMALL);
  EXPECT_EQ(gw_codec_encode(codec, nullptr, &t, small, 8, &size), GW_ERR_BUFFER_TOO_SMALL);
}

TEST_F(NoneCodec, CudaMemoryIsRefusedClearly) {
  std::vector<float> x(8, 1.0f);
  gw_tensor t = GW_TENSOR_INIT;
  t.memory = GW_MEMORY_CUDA;
  t.data = x.data();
  t.count = x.size();
  unsigned char payload[128];
  uint64_t size = 0;
  EXPECT_EQ(gw_codec_encode(codec, nullptr, &t, payload, sizeof payload, &size), GW_ERR_UNSUPPORTED);
  EXPECT_NE(std::string(gw_last_error()).find("no CUDA implementation"), std::string::npos);
}

TEST(Codec, UnknownCodecNameListsWhatIsLoaded) {
  gwtest::Runtime r;
  gw_codec* codec = nullptr;
  EXPECT_EQ(gw_codec_create(r.rt, "nonee", &codec), GW_ERR_NOT_FOUND);
  EXPECT_EQ(codec, nullptr);
  EXPECT_NE(std::string(gw_last_error()).find("did you mean 'none'?"), std::string::npos) << gw_last_error();
}
