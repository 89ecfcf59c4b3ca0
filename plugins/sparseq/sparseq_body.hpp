// The sparseq body (docs/wire-format.md, "sparseq"): the kept entries of a top-k selection, their
// magnitudes quantised to `bits - 1` bits between a per-group floor and step, the sign in the top bit of
// each code, and the indices as LEB128 varints of the gaps between successive indices.
//
//   offset 0   u8   bits           2, 3 or 4: bits per code (one sign bit, bits - 1 level bits)
//   offset 1   u8   reserved, 0
//   offset 2   u16  reserved, 0
//   offset 4   u32  m              entries kept
//   offset 8   u32  group          entries per scale pair (>= 1)
//   offset 12  u32  index_bytes    bytes of the index section
//   offset 16  G = ceil(m / group) scale pairs: f32 floor, f32 step (finite, >= 0)
//              then ceil(m * bits / 8) bytes of codes, packed from bit 0 of byte 0 upwards, unused
//              bits of the last byte 0
//              then index_bytes bytes: m varints of index - previous - 1 (previous = -1)
//
// Entry j of group g = j / group, with code c (level q = c & (2^(bits-1) - 1), sign = c >> (bits - 1)),
// decodes to (sign ? -1 : +1) * (floor_g + (q + 0.5) * step_g), all in f32 arithmetic in that order.
// The encoder sets floor_g and step_g = (max_g - floor_g) / L from the smallest and largest kept
// magnitude of the group (L = 2^(bits-1) levels), and q = min(L - 1, floor((|x| - floor_g) / step_g)):
// the magnitude error of an entry is at most step_g / 2 = (max_g - floor_g) / (2 L), plus f32 rounding.
#pragma once

#include <gradwire/types.h>

#include <cstdint>
#include <string>
#include <vector>

namespace gwsparseq {

constexpr uint64_t kPreambleBytes = 16;
constexpr uint32_t kMaxVarintBytes = 5;

inline uint64_t group_count(uint64_t m, uint64_t group) { return (m + group - 1) / group; }
inline uint64_t code_bytes(uint64_t m, uint32_t bits) { return (m * bits + 7) / 8; }

// Worst-case body bytes for at most `entries` entries.
inline uint64_t max_body_bytes(uint32_t bits, uint32_t group, uint64_t entries) {
  return kPreambleBytes + 8 * group_count(entries, group) + code_bytes(entries, bits) + kMaxVarintBytes * entries;
}

// Bytes of the delta index section of strictly increasing indices.
uint64_t index_bytes(const uint32_t* idx, uint64_t m);

// Writes the body of m selected entries in index order: idx[j] and its value v[j] (finite f32).
// `body` holds at least max_body_bytes(bits, group, m). Returns the bytes written.
uint64_t write_body(uint32_t bits, uint32_t group, const uint32_t* idx, const float* v, uint64_t m, uint8_t* body);

// A parsed and validated body.
struct ParsedBody {
  uint32_t bits = 0;
  uint32_t group = 0;
  uint64_t m = 0;
  std::vector<uint32_t> index;  // m indices, strictly increasing, each < n
  std::vector<float> values;    // m decoded values
};

// Parses `body` for a tensor of n elements; on anything malformed returns false with `error` saying what
// was wrong (the caller reports GW_ERR_CORRUPT).
bool parse_body(const uint8_t* body, uint64_t size, uint64_t n, ParsedBody& out, std::string& error);

}  // namespace gwsparseq
