// CPU kernels of the int8 codec (Highway dynamic dispatch; the portable fallback writes the same bytes).
#pragma once

#include <cstdint>

#include "int8_math.h"

namespace gwc {
namespace int8 {

struct EncodeArgs {
  uint32_t block = 256;
  Rounding rounding = kNearest;
  uint64_t seed = 0;   // stochastic rounding stream (gw_codec_context.seed / step)
  uint64_t step = 0;
};

// Encodes elements [begin, end) given as x[0 .. end-begin); begin is a multiple of the block size.
// Writes their scales at scales + 4 * (begin / block) and their bytes at q + begin.
void encode_range(const EncodeArgs& args, const float* x, uint64_t begin, uint64_t end, uint8_t* scales, int8_t* q,
                  float* uniform_scratch);
// Decodes elements [begin, end) into out[0 .. end-begin) (added with accumulate); begin as above.
void decode_range(uint32_t block, const uint8_t* scales, const int8_t* q, uint64_t begin, uint64_t end, float* out,
                  bool accumulate);

}  // namespace int8
}  // namespace gwc
