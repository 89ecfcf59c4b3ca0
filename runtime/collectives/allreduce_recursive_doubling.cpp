#include "collectives/algorithms.hpp"
#include "kernels/reduce.hpp"

namespace gw::coll {

// p is the largest power of two <= n and rem = n - p. Ranks below 2 * rem pair up (even r with r + 1):
// the even rank hands its buffer to the odd one and sits out. The p remaining ranks exchange whole
// buffers with the partner at distance 1, 2, 4, ... (in the numbering without the idle ranks); at the
// end each odd rank hands the result back to its idle partner. Both partners of an exchange combine
// (lower rank's data, higher rank's data) in that order, so every rank computes the same bits.
Task allreduce_recursive_doubling(Collective& c, void* buf, uint64_t count, gw_dtype dtype, gw_reduce_op op) {
  const uint32_t n = c.size(), r = c.rank();
  const uint64_t bytes = count * gw_dtype_size(dtype);
  uint32_t p = 1;
  while (p * 2 <= n) p *= 2;
  const uint32_t rem = n - p;
  unsigned char* incoming = c.scratch(0, bytes);
  uint32_t step = 0;

  const bool folded = r < 2 * rem;
  const bool idle = folded && r % 2 == 0;
  if (folded) {
    if (idle) {
      c.send(r + 1, step, buf, bytes);
    } else {
      c.recv(r - 1, step, incoming, bytes);
    }
    co_await c.all();
    if (!idle) reduce(buf, incoming, buf, count, dtype, op);
  }
  ++step;

  if (!idle) {
    const uint32_t vrank = folded ? r / 2 : r - rem;
    for (uint32_t mask = 1; mask < p; mask <<= 1, ++step) {
      const uint32_t vpeer = vrank ^ mask;
      const uint32_t peer = vpeer < rem ? vpeer * 2 + 1 : vpeer + rem;
      c.send(peer, step, buf, bytes);
      c.recv(peer, step, incoming, bytes);
      co_await c.all();
      if (peer < r) {
        reduce(buf, incoming, buf, count, dtype, op);
      } else {
        reduce(buf, buf, incoming, count, dtype, op);
      }
    }
    if (op == GW_REDUCE_AVG) divide(buf, count, dtype, n);
  } else {
    for (uint32_t mask = 1; mask < p; mask <<= 1) ++step;
  }

  if (folded) {
    if (idle) {
      c.recv(r + 1, step, buf, bytes);
    } else {
      c.send(r - 1, step, buf, bytes);
    }
    co_await c.all();
  }
}

}  // namespace gw::coll
