// One fp16/bf16 conversion, one NaN rule (gw_kernels/fp16.h, docs/wire-format.md): a NaN keeps its sign
// and payload and comes out quiet, whether it went through the runtime's reduction (gw::coll::reduce,
// divide) or a codec's round trip (the fp16 and bf16 plugins through the C ABI). The expected bits are
// written out here from the rule, not computed with the converter under test.
#include <gradwire/plugin_codec.h>
#include <gtest/gtest.h>

#include <bit>
#include <cstdint>
#include <vector>

#include "gw_test.hpp"
#include "kernels/reduce.hpp"

namespace {

// f32 NaNs: signalling and quiet, payloads in the bits each narrow format keeps and in the bits it drops,
// both signs.
const std::vector<uint32_t> kF32Nans = {0x7f800001u, 0x7fa00000u, 0x7fbfe000u, 0x7f8aa000u, 0x7fc00000u,
                                        0x7fd55555u, 0x7ffff000u, 0xff800001u, 0xffa02000u, 0xffc00000u,
                                        0xffeaa000u, 0xfffe0001u};
// fp16 NaNs (exponent 0x1f, mantissa != 0): signalling (0x0200 clear) and quiet, both signs.
const std::vector<uint16_t> kF16Nans = {0x7c01u, 0x7d55u, 0x7dffu, 0x7e00u, 0x7eaau, 0x7fffu,
                                        0xfc01u, 0xfd55u, 0xfe01u, 0xffffu};
// bf16 NaNs (exponent 0xff, mantissa != 0): signalling (0x0040 clear) and quiet, both signs.
const std::vector<uint16_t> kBf16Nans = {0x7f81u, 0x7fa5u, 0x7fbfu, 0x7fc0u, 0x7fd5u, 0xff81u, 0xffa5u, 0xffc1u};

// The rule, bit by bit.
uint16_t f16_of(uint32_t nan) { return uint16_t(((nan >> 16) & 0x8000u) | 0x7e00u | ((nan >> 13) & 0x3ffu)); }
uint16_t bf16_of(uint32_t nan) { return uint16_t((nan >> 16) | 0x40u); }
uint32_t f32_of_f16(uint16_t h) { return (uint32_t(h & 0x8000u) << 16) | 0x7fc00000u | (uint32_t(h & 0x3ffu) << 13); }
uint16_t quiet_f16(uint16_t h) { return uint16_t(h | 0x0200u); }
uint16_t quiet_bf16(uint16_t b) { return uint16_t(b | 0x0040u); }

void reduce_with_zeros(std::vector<uint16_t>& v, gw_dtype dtype, gw_reduce_op op) {
  const std::vector<uint16_t> zeros(v.size(), 0);
  gw::coll::reduce(v.data(), v.data(), zeros.data(), v.size(), dtype, op);
}

}  // namespace

TEST(Fp16Nan, ReductionKeepsThePayloadQuieted) {
  for (gw_reduce_op op : {GW_REDUCE_SUM, GW_REDUCE_MIN, GW_REDUCE_MAX}) {
    std::vector<uint16_t> h = kF16Nans;
    reduce_with_zeros(h, GW_DTYPE_F16, op);
    for (size_t i = 0; i < h.size(); ++i)
      EXPECT_EQ(h[i], quiet_f16(kF16Nans[i])) << std::hex << "f16 NaN 0x" << kF16Nans[i] << " op " << int(op);
    std::vector<uint16_t> b = kBf16Nans;
    reduce_with_zeros(b, GW_DTYPE_BF16, op);
    for (size_t i = 0; i < b.size(); ++i)
      EXPECT_EQ(b[i], quiet_bf16(kBf16Nans[i])) << std::hex << "bf16 NaN 0x" << kBf16Nans[i] << " op " << int(op);
  }
  std::vector<uint16_t> h = kF16Nans;  // AVG's division at the end
  gw::coll::divide(h.data(), h.size(), GW_DTYPE_F16, 3);
  for (size_t i = 0; i < h.size(); ++i) EXPECT_EQ(h[i], quiet_f16(kF16Nans[i])) << std::hex << kF16Nans[i];
}

TEST(Fp16Nan, CodecRoundTripKeepsThePayloadQuietedLikeTheReduction) {
  gwtest::Runtime rt("", {GW_PLUGIN_DIR});
  for (const char* name : {"fp16", "bf16"}) {
    const bool half = std::string(name) == "fp16";
    gw_codec* codec = nullptr;
    ASSERT_EQ(gw_codec_create(rt.rt, name, &codec), GW_OK) << gw_last_error();
    std::vector<float> in(kF32Nans.size()), out(kF32Nans.size());
    for (size_t i = 0; i < in.size(); ++i) in[i] = std::bit_cast<float>(kF32Nans[i]);
    gw_tensor t = GW_TENSOR_INIT;
    t.data = in.data();
    t.count = in.size();
    std::vector<uint8_t> payload(GW_WIRE_HEADER_SIZE + 2 * in.size() + 64);
    uint64_t size = 0;
    ASSERT_EQ(gw_codec_encode(codec, nullptr, &t, payload.data(), payload.size(), &size), GW_OK) << gw_last_error();
    ASSERT_EQ(size, GW_WIRE_HEADER_SIZE + 2 * in.size()) << name;
    std::vector<uint16_t> body(in.size());
    for (size_t i = 0; i < body.size(); ++i)
      body[i] = uint16_t(payload[GW_WIRE_HEADER_SIZE + 2 * i] | payload[GW_WIRE_HEADER_SIZE + 2 * i + 1] << 8);
    for (size_t i = 0; i < body.size(); ++i)
      EXPECT_EQ(body[i], half ? f16_of(kF32Nans[i]) : bf16_of(kF32Nans[i]))
          << name << std::hex << " of f32 NaN 0x" << kF32Nans[i];

    // The runtime's reduction of the encoded bodies (what a summable codec's ring does) gives the same bits.
    std::vector<uint16_t> summed = body;
    reduce_with_zeros(summed, half ? GW_DTYPE_F16 : GW_DTYPE_BF16, GW_REDUCE_SUM);
    EXPECT_EQ(summed, body) << name;

    t.data = out.data();
    ASSERT_EQ(gw_codec_decode(codec, nullptr, payload.data(), size, &t, 0), GW_OK) << gw_last_error();
    for (size_t i = 0; i < out.size(); ++i) {
      const uint32_t expected = half ? f32_of_f16(body[i]) : uint32_t(body[i]) << 16;
      EXPECT_EQ(std::bit_cast<uint32_t>(out[i]), expected) << name << std::hex << " of f32 NaN 0x" << kF32Nans[i];
    }
    gw_codec_destroy(codec);
  }
}
