#include "collectives/algorithms.hpp"

namespace gw::coll {

// At step s rank r forwards block (r + shift - s) to the right and receives block (r + shift - s - 1)
// from the left straight into its place: no copies, n - 1 steps.
Task allgather_ring(Collective& c, void* buf, const Blocks& blocks, uint32_t owner_shift, uint32_t first_step) {
  const uint32_t n = c.size(), r = c.rank();
  const uint32_t right = (r + 1) % n, left = (r + n - 1) % n;
  for (uint32_t s = 0; s + 1 < n; ++s) {
    const uint32_t send_block = (r + owner_shift + n - s) % n;
    const uint32_t recv_block = (r + owner_shift + 2 * n - s - 1) % n;
    c.send(right, first_step + s, blocks.at(buf, send_block), blocks.bytes(send_block));
    c.recv(left, first_step + s, blocks.at(buf, recv_block), blocks.bytes(recv_block));
    co_await c.all();
  }
}

Task allgatherv_ring(Collective& c, void* buf, Blocks blocks) { co_await allgather_ring(c, buf, blocks, 0, 0); }

}  // namespace gw::coll
