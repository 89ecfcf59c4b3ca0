#include "collectives/algorithms.hpp"

namespace gw::coll {

Blocks even_blocks(uint64_t count, uint32_t n, uint32_t element_size, uint64_t begin) {
  Blocks b;
  b.element_size = element_size;
  uint64_t offset = begin;
  for (uint32_t i = 0; i < n; ++i) {
    const uint64_t c = count / n + (i < count % n ? 1 : 0);
    b.offset.push_back(offset);
    b.count.push_back(c);
    offset += c;
  }
  return b;
}

Blocks blocks_of(const std::vector<uint64_t>& counts, uint32_t element_size) {
  Blocks b;
  b.element_size = element_size;
  uint64_t offset = 0;
  for (uint64_t c : counts) {
    b.offset.push_back(offset);
    b.count.push_back(c);
    offset += c;
  }
  return b;
}

}  // namespace gw::coll
