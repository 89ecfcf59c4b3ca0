#include "collectives/algorithms.hpp"
#include "kernels/reduce.hpp"

#include <cstring>

namespace gw::coll {

// At step s rank r sends its partial block (r + shift - 1 - s) to the right and receives block
// (r + shift - 2 - s) from the left, adding its own contribution; after n - 1 steps block (r + shift)
// has passed through every rank.
Task reduce_scatter_ring(Collective& c, void* buf, const Blocks& blocks, gw_dtype dtype, gw_reduce_op op,
                         uint32_t owner_shift, uint32_t first_step) {
  const uint32_t n = c.size(), r = c.rank();
  const uint32_t right = (r + 1) % n, left = (r + n - 1) % n;
  uint64_t largest = 0;
  for (uint32_t i = 0; i < n; ++i) largest = std::max(largest, blocks.bytes(i));
  unsigned char* incoming = c.scratch(0, largest);
  for (uint32_t s = 0; s + 1 < n; ++s) {
    const uint32_t send_block = (r + owner_shift + 2 * n - 1 - s) % n;
    const uint32_t recv_block = (r + owner_shift + 2 * n - 2 - s) % n;
    c.send(right, first_step + s, blocks.at(buf, send_block), blocks.bytes(send_block));
    c.recv(left, first_step + s, incoming, blocks.bytes(recv_block));
    co_await c.all();
    unsigned char* mine = blocks.at(buf, recv_block);
    reduce(mine, incoming, mine, blocks.count[recv_block], dtype, op);
  }
}

Task reduce_scatter(Collective& c, const void* in, void* out, uint64_t count, gw_dtype dtype, gw_reduce_op op) {
  const uint32_t n = c.size(), r = c.rank();
  const uint32_t esize = gw_dtype_size(dtype);
  // The ring works in place; an out-of-place call works on a copy so `in` stays untouched.
  void* work = in == out ? out : c.scratch(1, count * n * esize);
  if (work != in && count > 0) std::memcpy(work, in, count * n * esize);
  const Blocks blocks = even_blocks(count * n, n, esize);
  co_await reduce_scatter_ring(c, work, blocks, dtype, op, 0, 0);
  if (op == GW_REDUCE_AVG) divide(blocks.at(work, r), count, dtype, n);
  if (count > 0) std::memmove(out, blocks.at(work, r), count * esize);
}

}  // namespace gw::coll
