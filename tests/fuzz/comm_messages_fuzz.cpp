// libFuzzer target of the runtime's own parsers of bytes from another process: failure / stuck /
// acknowledgement notices and the stuck signature, the collective message header, the rendezvous
// record header and the packed records. Each must accept or refuse (GW_ERR_CORRUPT) without reading out
// of bounds, and what it accepts must encode back to the same bytes.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "bootstrap/rendezvous.hpp"
#include "comm/communicator.hpp"
#include "core/error.hpp"
#include "group/collective.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // Copies of exactly `size` bytes, so ASan sees any read past the end.
  const std::vector<unsigned char> in(data, data + size);

  int32_t code = 0;
  uint32_t seq = 0;
  std::string body;
  if (gw::comm::decode_notice(in.data(), in.size(), &code, &seq, &body)) {
    if (gw::comm::encode_notice(code, seq, body) != in) std::abort();
    gw::comm::Signature s;
    if (gw::comm::decode_signature(reinterpret_cast<const unsigned char*>(body.data()), body.size(), &s) &&
        gw::comm::encode_signature(s).size() != body.size())
      std::abort();
  }
  if (in.size() >= gw::comm::kMessageHeaderBytes) {
    const std::vector<unsigned char> head(in.begin(), in.begin() + gw::comm::kMessageHeaderBytes);
    const gw::comm::MessageHeader h = gw::comm::read_message_header(head.data());
    std::vector<unsigned char> back(gw::comm::kMessageHeaderBytes);
    gw::comm::write_message_header(back.data(), h);
    if (back != head) std::abort();
  }
  if (in.size() >= gw::bootstrap::kRecordHeaderBytes) {
    const std::vector<unsigned char> head(in.begin(), in.begin() + gw::bootstrap::kRecordHeaderBytes);
    const auto h = gw::bootstrap::decode_record_header(head.data());
    const std::string back = gw::bootstrap::encode_record_header(h);
    if (std::memcmp(back.data(), head.data(), head.size()) != 0) std::abort();
  }
  if (!in.empty()) {
    const std::string packed(reinterpret_cast<const char*>(in.data()) + 1, in.size() - 1);
    try {
      const auto records = gw::bootstrap::unpack_records(packed, in[0] % 8);
      if (records.size() != in[0] % 8) std::abort();
    } catch (const gw::Error& e) {
      if (e.status() != GW_ERR_CORRUPT) std::abort();
    }
  }
  return 0;
}
