// The topk body (docs/wire-format.md, "topk"): an 8-byte preamble, the selected values, then their
// indices, either as u32 or as LEB128 varints of the gaps between successive indices.
//
//   offset 0  u8   value format   0 fp32, 1 fp16            (gwc::SparseValues)
//   offset 1  u8   index format   0 u32, 1 delta            (varint of index - previous - 1, previous = -1)
//   offset 2  u16  reserved, 0
//   offset 4  u32  m, the number of entries
//   offset 8  m values (4 or 2 bytes each), then the indices (4 bytes each, or 1..5 bytes each)
#pragma once

#include <gradwire/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "gw_codec/sparse.hpp"
#include "topk_select.hpp"

namespace gwtopk {

enum class IndexFormat : uint8_t { u32 = 0, delta = 1 };

constexpr uint64_t kPreambleBytes = 8;
constexpr uint32_t kMaxVarintBytes = 5;

GW_HD uint32_t varint_bytes(uint32_t v) {
  return 1u + (v >= 1u << 7) + (v >= 1u << 14) + (v >= 1u << 21) + (v >= 1u << 28);
}

// The delta index coding of the sparse bodies (topk's delta format, sparseq's indices): m LEB128 varints
// of index - previous - 1 (previous = -1), the indices strictly increasing.
uint64_t delta_index_bytes(const uint32_t* idx, uint64_t m);
// Writes them at p; returns the byte after the last.
uint8_t* write_delta_indices(const uint32_t* idx, uint64_t m, uint8_t* p);
// Reads m of them from [p, end) into `index`, each < n, and advances p; on anything malformed returns
// false with `error` saying what was wrong.
bool read_delta_indices(const uint8_t*& p, const uint8_t* end, uint64_t m, uint64_t n, uint32_t* index,
                        std::string& error);

// Worst-case body bytes for at most `entries` entries.
inline uint64_t max_body_bytes(gwc::SparseValues v, IndexFormat i, uint64_t entries) {
  return kPreambleBytes + entries * (gwc::sparse_value_bytes(v) + (i == IndexFormat::u32 ? 4 : kMaxVarintBytes));
}

// Exact body bytes of a selection (indices strictly increasing).
uint64_t body_bytes(gwc::SparseValues v, IndexFormat i, const uint32_t* idx, uint64_t m);

// Writes the body of a selection: m (index, element bits of `dtype`) pairs in index order.
void write_body(gwc::SparseValues v, IndexFormat i, gw_dtype dtype, const uint32_t* idx,
                const uint32_t* bits, uint64_t m, uint8_t* body);

// A parsed and validated body: every index < n and strictly increasing, every length consistent.
struct ParsedBody {
  gwc::SparseValues values = gwc::SparseValues::fp32;
  IndexFormat indices = IndexFormat::u32;
  uint64_t m = 0;
  const uint8_t* value_bytes = nullptr;
  std::vector<uint32_t> index;
};

// Parses `body` for a tensor of n elements; on anything malformed returns false with `error` saying
// what was wrong (the caller reports GW_ERR_CORRUPT).
bool parse_body(const uint8_t* body, uint64_t size, uint64_t n, ParsedBody& out, std::string& error);

}  // namespace gwtopk

namespace gwtopk {

// What a topk codec instance is configured to do ([codec.topk] keys).
struct Settings {
  gwc::SparseCount count;
  Selection selection = Selection::approx;
  gwc::SparseValues values = gwc::SparseValues::fp32;
  IndexFormat indices = IndexFormat::delta;
};

}  // namespace gwtopk
