// gw_codec/block_body.hpp — the layout shared by the blockwise codecs (int8, onebit):
//
//   offset 0   u32 block_size (elements per scale, >= 1)
//   offset 4   u32 reserved, 0
//   offset 8   ceil(count / block_size) f32 scales, little-endian
//   then       the codec's element payload (int8: count bytes; onebit: ceil(count / 8) bytes)
//
// BlockLayout computes the offsets; parse_block_body validates a received body against the element
// count and fails with GW_ERR_CORRUPT (through CodecBase::corrupt) on any inconsistency.
#pragma once

#include <string>

#include "gw_codec/codec_base.hpp"
#include "gw_codec/portable.h"

namespace gwc {

inline constexpr uint64_t kBlockBodyHeader = 8;
inline constexpr uint64_t kMaxBlockSize = 1u << 24;

struct BlockLayout {
  uint64_t count = 0;
  uint64_t block = 1;
  uint64_t blocks = 0;        // number of scales
  uint64_t scales_offset = kBlockBodyHeader;
  uint64_t payload_offset = 0;
  uint64_t size = 0;          // total body bytes

  // payload_bytes(count): bytes of the element payload.
  template <class PayloadBytes>
  static BlockLayout make(uint64_t count, uint64_t block, PayloadBytes payload_bytes) {
    BlockLayout l;
    l.count = count;
    l.block = block;
    l.blocks = ceil_div(count, block);
    l.payload_offset = kBlockBodyHeader + 4 * l.blocks;
    l.size = l.payload_offset + payload_bytes(count);
    return l;
  }
};

inline void write_block_header(void* body, uint32_t block) {
  store_le32(body, block);
  store_le32(static_cast<uint8_t*>(body) + 4, 0);
}

template <class PayloadBytes>
BlockLayout parse_block_body(const CodecBase& c, const void* body, uint64_t size, uint64_t count,
                             PayloadBytes payload_bytes) {
  if (count > (UINT64_MAX >> 4)) c.corrupt("element count " + std::to_string(count) + " is too large");
  if (size < kBlockBodyHeader)
    c.corrupt("body has " + std::to_string(size) + " bytes, fewer than its " + std::to_string(kBlockBodyHeader) +
              "-byte block header");
  const uint32_t block = load_le32(body);
  const uint32_t reserved = load_le32(static_cast<const uint8_t*>(body) + 4);
  if (block == 0 || block > kMaxBlockSize)
    c.corrupt("block size " + std::to_string(block) + " is outside [1, " + std::to_string(kMaxBlockSize) + "]");
  if (reserved != 0) c.corrupt("reserved header word is " + std::to_string(reserved) + ", expected 0");
  const BlockLayout l = BlockLayout::make(count, block, payload_bytes);
  if (size != l.size)
    c.corrupt("body has " + std::to_string(size) + " bytes but " + std::to_string(count) +
              " elements in blocks of " + std::to_string(block) + " need exactly " + std::to_string(l.size));
  return l;
}

}  // namespace gwc
