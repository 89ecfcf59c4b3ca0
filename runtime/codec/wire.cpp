#include "codec/wire.hpp"

#include <string>

#include "core/bytes.hpp"
#include "core/error.hpp"

namespace gw::wire {
using bytes::get_le;
using bytes::put_le;

void write_header(void* dst, const Header& h) {
  auto* p = static_cast<unsigned char*>(dst);
  put_le(p + 0, GW_WIRE_MAGIC, 4);
  put_le(p + 4, h.format_version, 2);
  put_le(p + 6, h.flags, 2);
  put_le(p + 8, h.codec_id, 4);
  put_le(p + 12, h.dtype, 4);
  put_le(p + 16, h.count, 8);
  put_le(p + 24, h.body_length, 8);
}

Header read_header(const void* payload, uint64_t size) {
  if (payload == nullptr && size > 0) fail(GW_ERR_INVALID_ARGUMENT, "payload is NULL");
  if (size < GW_WIRE_HEADER_SIZE)
    fail(GW_ERR_CORRUPT, "payload of " + std::to_string(size) + " bytes is shorter than the " +
                             std::to_string(GW_WIRE_HEADER_SIZE) + "-byte wire header; it was truncated");
  const auto* p = static_cast<const unsigned char*>(payload);
  if (get_le(p, 4) != GW_WIRE_MAGIC)
    fail(GW_ERR_CORRUPT, "payload does not start with the gradwire magic 'GGWR'; it is not a gradwire payload "
                         "or it was corrupted");
  Header h;
  h.format_version = static_cast<uint16_t>(get_le(p + 4, 2));
  h.flags = static_cast<uint16_t>(get_le(p + 6, 2));
  h.codec_id = static_cast<uint32_t>(get_le(p + 8, 4));
  h.dtype = static_cast<uint32_t>(get_le(p + 12, 4));
  h.count = get_le(p + 16, 8);
  h.body_length = get_le(p + 24, 8);
  if (h.format_version != GW_WIRE_FORMAT_VERSION)
    fail(GW_ERR_VERSION, "payload uses wire format version " + std::to_string(h.format_version) +
                             "; this gradwire reads version " + std::to_string(GW_WIRE_FORMAT_VERSION) +
                             "; use the same gradwire version on every rank");
  if (h.body_length != size - GW_WIRE_HEADER_SIZE)
    fail(GW_ERR_CORRUPT, "payload header announces a body of " + std::to_string(h.body_length) + " bytes but " +
                             std::to_string(size - GW_WIRE_HEADER_SIZE) + " follow it; the payload was truncated or padded");
  return h;
}

}  // namespace gw::wire
