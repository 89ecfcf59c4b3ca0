// CPU kernels of the onebit codec (Highway dynamic dispatch; the portable fallback writes the same bytes).
#pragma once

#include <cstdint>

#include "onebit_math.h"

namespace gwc {
namespace onebit {

// Encodes elements [begin, end) given as x[0 .. end-begin); begin is a multiple of the block size and
// of 64. Writes their scales at scales + 4 * (begin / block) and their bits into `bits` (the whole
// body's bit array, bit i of byte k = element 8k + i).
void encode_range(uint32_t block, const float* x, uint64_t begin, uint64_t end, uint8_t* scales, uint8_t* bits);
// Decodes elements [begin, end) into out[0 .. end-begin) (added with accumulate); begin is a multiple
// of the block size. bits_bytes: size of the bit array (reads never pass it).
void decode_range(uint32_t block, const uint8_t* scales, const uint8_t* bits, uint64_t bits_bytes, uint64_t begin,
                  uint64_t end, float* out, bool accumulate);

}  // namespace onebit
}  // namespace gwc
