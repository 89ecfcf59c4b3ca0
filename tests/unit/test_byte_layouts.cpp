// Golden bytes of every header and record that crosses a process: the collective message header, the
// failure / stuck / acknowledgement notices and the stuck notice's signature, the rendezvous record
// header, the root's reply and the packed records. Each is written from known values and compared byte
// for byte with the little-endian layout of docs/collectives.md and docs/bootstrap.md, then read back.
// A host of either byte order must produce these bytes. (The codec wire header and the error-feedback
// state blob have their golden tests next to the codecs.)
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "bootstrap/rendezvous.hpp"
#include "comm/communicator.hpp"
#include "core/bytes.hpp"
#include "core/error.hpp"
#include "group/collective.hpp"

namespace {

std::vector<unsigned char> hex(const std::string& text) {
  std::vector<unsigned char> out;
  for (size_t i = 0; i + 1 < text.size();) {
    if (text[i] == ' ') {
      ++i;
      continue;
    }
    out.push_back(static_cast<unsigned char>(std::stoul(text.substr(i, 2), nullptr, 16)));
    i += 2;
  }
  return out;
}

std::vector<unsigned char> bytes_of(const std::string& s) { return std::vector<unsigned char>(s.begin(), s.end()); }

TEST(ByteLayouts, CollectiveMessageHeader) {
  gw::comm::MessageHeader h;
  h.magic = 0x43574747u;
  h.seq = 0x01020304u;
  h.kind = 1;
  h.op = 3;
  h.dtype = 4;
  h.flags = 1;
  h.root = 0x0a0b0c0du;
  h.codec_id = 0xdeadbeefu;
  h.step = 0x00001234u;
  h.count = 0x1122334455667788ull;
  h.bytes = 0x0000000100000002ull;
  std::vector<unsigned char> out(gw::comm::kMessageHeaderBytes);
  gw::comm::write_message_header(out.data(), h);
  EXPECT_EQ(out, hex("47475743 04030201 01 03 04 01 0d0c0b0a efbeadde 34120000 8877665544332211 0200000001000000"));
  const gw::comm::MessageHeader back = gw::comm::read_message_header(out.data());
  EXPECT_EQ(back.magic, h.magic);
  EXPECT_EQ(back.seq, h.seq);
  EXPECT_EQ(back.kind, h.kind);
  EXPECT_EQ(back.op, h.op);
  EXPECT_EQ(back.dtype, h.dtype);
  EXPECT_EQ(back.flags, h.flags);
  EXPECT_EQ(back.root, h.root);
  EXPECT_EQ(back.codec_id, h.codec_id);
  EXPECT_EQ(back.step, h.step);
  EXPECT_EQ(back.count, h.count);
  EXPECT_EQ(back.bytes, h.bytes);
}

// A failure: the negative gw_status, the collective number, the message; an acknowledgement (2) and a
// stuck notice (1) use the same frame.
TEST(ByteLayouts, FailureAndAcknowledgementNotices) {
  const int32_t code = GW_ERR_MISMATCH;
  std::vector<unsigned char> expected(4);
  gw::bytes::put_le(expected.data(), uint32_t(code), 4);
  const std::vector<unsigned char> rest = hex("02010000 6162");
  expected.insert(expected.end(), rest.begin(), rest.end());
  EXPECT_EQ(gw::comm::encode_notice(code, 0x0102, "ab"), expected);
  // Negative codes are two's complement, little-endian: -5 is fb ff ff ff.
  EXPECT_EQ(gw::comm::encode_notice(-5, 7, ""), hex("fbffffff 07000000"));
  EXPECT_EQ(gw::comm::encode_notice(2, 9, ""), hex("02000000 09000000"));  // an acknowledgement

  int32_t got_code = 0;
  uint32_t seq = 0;
  std::string body;
  const auto bytes = gw::comm::encode_notice(-5, 7, "why");
  ASSERT_TRUE(gw::comm::decode_notice(bytes.data(), bytes.size(), &got_code, &seq, &body));
  EXPECT_EQ(got_code, -5);
  EXPECT_EQ(seq, 7u);
  EXPECT_EQ(body, "why");
  EXPECT_FALSE(gw::comm::decode_notice(bytes.data(), 7, &got_code, &seq, &body)) << "shorter than its header";
}

TEST(ByteLayouts, StuckNoticeSignature) {
  gw::comm::Signature s;
  s.kind = gw::comm::CollectiveKind::Broadcast;
  s.op = GW_REDUCE_MAX;
  s.dtype = GW_DTYPE_I64;
  s.root = 0x05060708u;
  s.codec_id = 0x11223344u;
  s.count = 0x0102030405060708ull;
  const std::string encoded = gw::comm::encode_signature(s);
  std::vector<unsigned char> expected = {uint8_t(gw::comm::CollectiveKind::Broadcast), uint8_t(GW_REDUCE_MAX),
                                         uint8_t(GW_DTYPE_I64), 0};
  const std::vector<unsigned char> rest = hex("08070605 44332211 0807060504030201");
  expected.insert(expected.end(), rest.begin(), rest.end());
  EXPECT_EQ(bytes_of(encoded), expected);
  gw::comm::Signature back;
  ASSERT_TRUE(gw::comm::decode_signature(reinterpret_cast<const unsigned char*>(encoded.data()), encoded.size(), &back));
  EXPECT_TRUE(gw::comm::signature_differences(back, s).empty());
  EXPECT_FALSE(gw::comm::decode_signature(reinterpret_cast<const unsigned char*>(encoded.data()), 19, &back));
}

TEST(ByteLayouts, RendezvousRecordHeaderAndReply) {
  gw::bootstrap::RecordHeader h{0x42574747u, 3, 8, 2, 0x0000000000000102ull};
  const std::string encoded = gw::bootstrap::encode_record_header(h);
  EXPECT_EQ(bytes_of(encoded), hex("47475742 03000000 08000000 02000000 0201000000000000"));
  const auto back = gw::bootstrap::decode_record_header(reinterpret_cast<const unsigned char*>(encoded.data()));
  EXPECT_EQ(back.magic, h.magic);
  EXPECT_EQ(back.rank, 3u);
  EXPECT_EQ(back.world_size, 8u);
  EXPECT_EQ(back.communicator, 2u);
  EXPECT_EQ(back.length, 0x102u);
  EXPECT_EQ(bytes_of(gw::bootstrap::encode_reply(-7, "xy")), hex("0600000000000000 f9ffffff 7879"));
}

TEST(ByteLayouts, PackedRecords) {
  const std::string packed = gw::bootstrap::pack_records({"A", "", "bc"});
  EXPECT_EQ(bytes_of(packed), hex("03000000 0100000000000000 0000000000000000 0200000000000000 41 6263"));
  EXPECT_EQ(gw::bootstrap::unpack_records(packed, 3), (std::vector<std::string>{"A", "", "bc"}));
  try {
    gw::bootstrap::unpack_records(packed.substr(0, packed.size() - 1), 3);
    FAIL() << "a cut-off record set was accepted";
  } catch (const gw::Error& e) {
    EXPECT_EQ(e.status(), GW_ERR_CORRUPT);
  }
}

}  // namespace
