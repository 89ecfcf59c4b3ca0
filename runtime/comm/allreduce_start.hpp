// Starting an allreduce on a communicator, dense or compressed: the one place the C ABI (gw_allreduce,
// gw_allreduce_compressed) and the synchronizer (its buckets, exempt buckets and parameters) start them.
// The compressed reduce-scatter and allgather start here too.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "collectives/compressed.hpp"
#include "comm/communicator.hpp"

namespace gw::comm {

// Starts allreduce_compressed(args) with the communicator's pipelining and ring settings; the message
// headers carry the codec's id, so ranks with another codec fail with GW_ERR_MISMATCH. `seq`: a number
// from Communicator::reserve_sequence, or the next one.
// `finish`, when set, runs once the algorithm has completed on this rank (staged tensors are written
// back there), before the request completes.
gw_request* start_allreduce_compressed(Communicator& comm, coll::CompressedArgs args,
                                       std::optional<uint32_t> seq = std::nullopt,
                                       std::function<void()> finish = {});

// Starts coll::allreduce_rounds over several buffers of codecs of rounds (one collective per round for
// all of them), with the communicator's pipelining and ring settings; the header carries the buffers'
// total count and the first codec's id, so ranks that batch other buffers fail with GW_ERR_MISMATCH.
// Every buffer's codec must have rounds and share the first one's id. `seq`, `finish` as above.
gw_request* start_allreduce_rounds(Communicator& comm, std::vector<coll::CompressedArgs> buffers,
                                   std::optional<uint32_t> seq = std::nullopt, std::function<void()> finish = {});

// Starts the compressed reduce-scatter (kind ReduceScatter) or allgather (kind Allgather) of `args` with
// the communicator's pipelining, two-level where [collectives] two_level says so for its topology (as the
// compressed allreduce); the headers carry the kind, op, shard count and codec id, so ranks that disagree
// fail with GW_ERR_MISMATCH. `finish` as for start_allreduce_compressed.
gw_request* start_shards_compressed(Communicator& comm, CollectiveKind kind, coll::ShardArgs args,
                                    std::function<void()> finish = {});

// Starts the dense allreduce of `count` elements at buf (in place), ring or recursive doubling by the
// communicator's threshold. With `stats`, the bytes are booked there when it completes (raw: the
// elements' bytes, wire: what this rank sent), as the compressed allreduce books its own.
gw_request* start_allreduce_dense(Communicator& comm, void* buf, uint64_t count, gw_dtype dtype, gw_reduce_op op,
                                  std::optional<uint32_t> seq = std::nullopt, coll::CompressedStats* stats = nullptr);

}  // namespace gw::comm
