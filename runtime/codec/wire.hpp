// The 32-byte header in front of every encoded payload (docs/wire-format.md), little-endian whatever
// the host's byte order.
#pragma once

#include <gradwire/plugin.h>

#include <cstdint>

namespace gw::wire {

struct Header {
  uint16_t format_version = GW_WIRE_FORMAT_VERSION;
  uint16_t flags = 0;
  uint32_t codec_id = 0;
  uint32_t dtype = 0;
  uint64_t count = 0;
  uint64_t body_length = 0;
};

void write_header(void* dst, const Header& header);
// Reads and checks the header of a payload of `size` bytes: GW_ERR_CORRUPT when it is shorter than a
// header, has another magic, or its body length disagrees with `size`; GW_ERR_VERSION for another
// format version.
Header read_header(const void* payload, uint64_t size);

}  // namespace gw::wire
