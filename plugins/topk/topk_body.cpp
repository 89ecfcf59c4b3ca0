#include "topk_body.hpp"

namespace gwtopk {

uint64_t body_bytes(gwc::SparseValues v, IndexFormat i, const uint32_t* idx, uint64_t m) {
  uint64_t bytes = kPreambleBytes + m * gwc::sparse_value_bytes(v);
  if (i == IndexFormat::u32) return bytes + 4 * m;
  return bytes + delta_index_bytes(idx, m);
}

uint64_t delta_index_bytes(const uint32_t* idx, uint64_t m) {
  uint64_t bytes = 0;
  uint32_t next = 0;  // previous index + 1
  for (uint64_t j = 0; j < m; ++j) {
    bytes += varint_bytes(idx[j] - next);
    next = idx[j] + 1;
  }
  return bytes;
}

uint8_t* write_delta_indices(const uint32_t* idx, uint64_t m, uint8_t* p) {
  uint32_t next = 0;
  for (uint64_t j = 0; j < m; ++j) {
    uint32_t gap = idx[j] - next;
    next = idx[j] + 1;
    while (gap >= 0x80u) {
      *p++ = static_cast<uint8_t>(gap | 0x80u);
      gap >>= 7;
    }
    *p++ = static_cast<uint8_t>(gap);
  }
  return p;
}

bool read_delta_indices(const uint8_t*& p, const uint8_t* end, uint64_t m, uint64_t n, uint32_t* index,
                        std::string& error) {
  uint64_t next = 0;
  for (uint64_t j = 0; j < m; ++j) {
    uint64_t gap = 0;
    for (uint32_t b = 0;; ++b) {
      if (p == end) {
        error = "delta index of entry " + std::to_string(j) + " is truncated at the end of the body";
        return false;
      }
      if (b == kMaxVarintBytes) {
        error = "delta index of entry " + std::to_string(j) + " is longer than 5 bytes";
        return false;
      }
      const uint8_t byte = *p++;
      gap |= static_cast<uint64_t>(byte & 0x7fu) << (7 * b);
      if (!(byte & 0x80u)) break;
    }
    const uint64_t index_j = next + gap;
    if (index_j >= n) {
      error = "delta index of entry " + std::to_string(j) + " reaches " + std::to_string(index_j) +
              ", out of range for " + std::to_string(n) + " elements";
      return false;
    }
    index[j] = static_cast<uint32_t>(index_j);
    next = index_j + 1;
  }
  return true;
}

void write_body(gwc::SparseValues v, IndexFormat i, gw_dtype dtype, const uint32_t* idx,
                const uint32_t* bits, uint64_t m, uint8_t* body) {
  body[0] = static_cast<uint8_t>(v);
  body[1] = static_cast<uint8_t>(i);
  gwc::store_le16(body + 2, 0);
  gwc::store_le32(body + 4, static_cast<uint32_t>(m));
  uint8_t* p = body + kPreambleBytes;
  const uint32_t vb = gwc::sparse_value_bytes(v);
  if (dtype == GW_DTYPE_F32 && v == gwc::SparseValues::fp32) {
    for (uint64_t j = 0; j < m; ++j) gwc::store_le32(p + 4 * j, bits[j]);
  } else {
    for (uint64_t j = 0; j < m; ++j)
      gwc::write_sparse_value(v, p + vb * j, gwc::sparse_value_bits(v, gwc::element_to_f32(dtype, bits[j])));
  }
  p += vb * m;
  if (i == IndexFormat::u32) {
    for (uint64_t j = 0; j < m; ++j) gwc::store_le32(p + 4 * j, idx[j]);
    return;
  }
  write_delta_indices(idx, m, p);
}

bool parse_body(const uint8_t* body, uint64_t size, uint64_t n, ParsedBody& out, std::string& error) {
  if (size < kPreambleBytes) {
    error = "body is " + std::to_string(size) + " bytes, shorter than the 8-byte topk preamble";
    return false;
  }
  if (body[0] > 1) {
    error = "unknown value format " + std::to_string(body[0]) + " (0 fp32, 1 fp16)";
    return false;
  }
  if (body[1] > 1) {
    error = "unknown index format " + std::to_string(body[1]) + " (0 u32, 1 delta)";
    return false;
  }
  if (gwc::load_le16(body + 2) != 0) {
    error = "reserved preamble bytes are not zero";
    return false;
  }
  out.values = static_cast<gwc::SparseValues>(body[0]);
  out.indices = static_cast<IndexFormat>(body[1]);
  out.m = gwc::load_le32(body + 4);
  if (out.m > n) {
    error = std::to_string(out.m) + " entries for a tensor of " + std::to_string(n) + " elements";
    return false;
  }
  const uint64_t values_end = kPreambleBytes + out.m * gwc::sparse_value_bytes(out.values);
  const uint64_t min_index_bytes = out.m * (out.indices == IndexFormat::u32 ? 4 : 1);
  if (size < values_end + min_index_bytes) {
    error = "body is " + std::to_string(size) + " bytes, too short for " + std::to_string(out.m) +
            " entries (at least " + std::to_string(values_end + min_index_bytes) + ")";
    return false;
  }
  out.value_bytes = body + kPreambleBytes;
  out.index.resize(out.m);
  const uint8_t* p = body + values_end;
  const uint8_t* const end = body + size;
  if (out.indices == IndexFormat::u32) {
    if (size != values_end + 4 * out.m) {
      error = "body is " + std::to_string(size) + " bytes, expected " + std::to_string(values_end + 4 * out.m) +
              " for " + std::to_string(out.m) + " entries with u32 indices";
      return false;
    }
    uint64_t next = 0;  // smallest index allowed
    for (uint64_t j = 0; j < out.m; ++j) {
      const uint32_t index = gwc::load_le32(p + 4 * j);
      if (index >= n) {
        error = "index " + std::to_string(index) + " of entry " + std::to_string(j) + " is out of range for " +
                std::to_string(n) + " elements";
        return false;
      }
      if (index < next) {
        error = "index " + std::to_string(index) + " of entry " + std::to_string(j) +
                " does not follow the previous index (indices must be strictly increasing)";
        return false;
      }
      out.index[j] = index;
      next = uint64_t{index} + 1;
    }
    return true;
  }
  if (!read_delta_indices(p, end, out.m, n, out.index.data(), error)) return false;
  if (p != end) {
    error = std::to_string(end - p) + " bytes follow the last delta index (body is " + std::to_string(size) +
            " bytes)";
    return false;
  }
  return true;
}

}  // namespace gwtopk
