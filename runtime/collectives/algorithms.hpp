// The collective algorithms, one per file, written against comm::Collective (point-to-point messages
// with checked headers) so they never know which transport carries them. Each is a coroutine the
// communicator drives; buffers are host memory and must stay valid until the collective completes.
#pragma once

#include <gradwire/gradwire.h>

#include <cstdint>
#include <vector>

#include "group/collective.hpp"
#include "group/task.hpp"

namespace gw::coll {

using comm::Collective;
using comm::Task;

// How a buffer is cut into one block per rank (element offsets and counts).
struct Blocks {
  std::vector<uint64_t> offset;
  std::vector<uint64_t> count;
  uint32_t element_size = 1;

  unsigned char* at(void* base, uint32_t i) const {
    return static_cast<unsigned char*>(base) + offset[i] * element_size;
  }
  uint64_t bytes(uint32_t i) const { return count[i] * element_size; }
};
// `count` elements starting at element `begin` cut into `n` blocks whose sizes differ by at most one
// (the larger ones first).
Blocks even_blocks(uint64_t count, uint32_t n, uint32_t element_size, uint64_t begin = 0);
// One block per rank of the given sizes, packed in rank order.
Blocks blocks_of(const std::vector<uint64_t>& counts, uint32_t element_size);

// Ring reduce-scatter in place: afterwards rank r's block (r + owner_shift) mod n of `buf` holds the
// reduction over all ranks. Uses messages first_step .. first_step + n - 2.
Task reduce_scatter_ring(Collective& c, void* buf, const Blocks& blocks, gw_dtype dtype, gw_reduce_op op,
                         uint32_t owner_shift, uint32_t first_step);

// Ring allgather in place: rank r starts owning block (r + owner_shift) mod n of `buf`; afterwards every
// rank holds every block, received straight into `buf`. Uses messages first_step .. first_step + n - 2.
Task allgather_ring(Collective& c, void* buf, const Blocks& blocks, uint32_t owner_shift, uint32_t first_step);

// Reduce-scatter of `in` (n * count elements) into `out` (count elements): rank r gets the reduction of
// block r. in == out works in place; otherwise `in` is left as it was.
Task reduce_scatter(Collective& c, const void* in, void* out, uint64_t count, gw_dtype dtype, gw_reduce_op op);

// Allgather(v) in place with the given layout: this rank's block is already in `buf`.
Task allgatherv_ring(Collective& c, void* buf, Blocks blocks);

// Allreduce in place for large buffers: ring reduce-scatter, the owner finishes its block (average),
// ring allgather of the owners' bytes, so every rank ends bit-identical.
Task allreduce_ring(Collective& c, void* buf, uint64_t count, gw_dtype dtype, gw_reduce_op op);

// Allreduce in place for small buffers: log2(p) exchanges of the whole buffer; with n not a power of
// two, the first 2(n - p) ranks fold in pairs first and unfold at the end.
Task allreduce_recursive_doubling(Collective& c, void* buf, uint64_t count, gw_dtype dtype, gw_reduce_op op);

// Broadcast along a binomial tree rooted at `root`.
Task broadcast_binomial(Collective& c, void* buf, uint64_t bytes, uint32_t root);

// Dissemination barrier: ceil(log2 n) rounds of empty messages.
Task barrier_dissemination(Collective& c);

}  // namespace gw::coll
