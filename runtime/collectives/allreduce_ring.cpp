#include "collectives/algorithms.hpp"
#include "collectives/reduce.hpp"

namespace gw::coll {

Task allreduce_ring(Collective& c, void* buf, uint64_t count, gw_dtype dtype, gw_reduce_op op) {
  const uint32_t n = c.size(), r = c.rank();
  const Blocks blocks = even_blocks(count, n, gw_dtype_size(dtype));
  co_await reduce_scatter_ring(c, buf, blocks, dtype, op, 0, 0);
  // Only the owner finishes its block; the others receive its bytes, so every rank ends identical.
  if (op == GW_REDUCE_AVG) divide(blocks.at(buf, r), blocks.count[r], dtype, n);
  co_await allgather_ring(c, buf, blocks, 0, n - 1);
}

}  // namespace gw::coll
