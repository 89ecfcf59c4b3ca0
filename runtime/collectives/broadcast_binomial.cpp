#include "collectives/algorithms.hpp"

namespace gw::coll {

// In the numbering where the root is 0, rank v receives from v minus its lowest set bit, then sends to
// v + 2^k for every 2^k below that bit: the data reaches everyone in ceil(log2 n) rounds.
Task broadcast_binomial(Collective& c, void* buf, uint64_t bytes, uint32_t root) {
  const uint32_t n = c.size();
  const uint32_t v = (c.rank() + n - root) % n;
  uint32_t mask = 1;
  while (mask < n) {
    if (v & mask) {
      c.recv((v - mask + root) % n, 0, buf, bytes);
      co_await c.all();
      break;
    }
    mask <<= 1;
  }
  for (mask >>= 1; mask > 0; mask >>= 1) {
    if (v + mask < n) c.send((v + mask + root) % n, 0, buf, bytes);
  }
  co_await c.all();
}

}  // namespace gw::coll
