#include "collectives/algorithms.hpp"

namespace gw::coll {

// Round k: tell rank r + 2^k, hear from rank r - 2^k. After ceil(log2 n) rounds every rank has heard,
// directly or not, from every other, so none leaves before all have arrived.
Task barrier_dissemination(Collective& c) {
  const uint32_t n = c.size(), r = c.rank();
  uint32_t step = 0;
  for (uint32_t distance = 1; distance < n; distance <<= 1, ++step) {
    c.send((r + distance) % n, step, nullptr, 0);
    c.recv((r + n - distance) % n, step, nullptr, 0);
    co_await c.all();
  }
}

}  // namespace gw::coll
