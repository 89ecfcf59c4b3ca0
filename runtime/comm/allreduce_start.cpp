#include "comm/allreduce_start.hpp"

#include <algorithm>

#include "collectives/two_level.hpp"
#include "core/error.hpp"
namespace gw::comm {
namespace {

Task booked_dense(Collective& c, void* buf, uint64_t count, gw_dtype dtype, gw_reduce_op op, uint64_t threshold,
                  coll::CompressedStats* stats) {
  co_await coll::allreduce_dense(c, buf, count, dtype, op, threshold);
  stats->raw_bytes += uint64_t(gw_dtype_size(dtype)) * count;
  stats->wire_bytes += c.bytes_sent();
}

Task then(Task algorithm, std::function<void()> finish) {
  co_await algorithm;
  if (finish) finish();
}

}  // namespace

gw_request* start_allreduce_compressed(Communicator& comm, coll::CompressedArgs a, std::optional<uint32_t> seq,
                                       std::function<void()> finish) {
  a.chunk_elements = std::max<uint64_t>(1, comm.settings().pipeline_chunk_bytes / 4);
  a.ring_threshold_bytes = comm.settings().ring_threshold_bytes;
  const Signature s{CollectiveKind::Allreduce, a.op, GW_DTYPE_F32, a.count, 0, a.codec->id()};
  // A codec of rounds sums its round vectors with the flat collectives (allreduce_rounds).
  if (!a.codec->has_rounds() && coll::use_two_level(comm.topology(), comm.settings().two_level)) {
    const bool gather = coll::gathers_encoded(comm.topology().node_count(), comm.settings().two_level_cross);
    const auto two_level = [a, t = comm.topology(), gather, finish](Collective& c) {
      return then(coll::allreduce_two_level(c, a, t, gather), finish);
    };
    return seq ? comm.start_collective_at(*seq, s, two_level) : comm.start_collective(s, two_level);
  }
  const auto algorithm = [a, finish](Collective& c) { return then(coll::allreduce_compressed(c, a), finish); };
  return seq ? comm.start_collective_at(*seq, s, algorithm) : comm.start_collective(s, algorithm);
}

gw_request* start_allreduce_rounds(Communicator& comm, std::vector<coll::CompressedArgs> buffers,
                                   std::optional<uint32_t> seq, std::function<void()> finish) {
  if (buffers.empty()) fail(GW_ERR_INVALID_ARGUMENT, "a batch of rounds needs at least one buffer");
  uint64_t total = 0;
  for (coll::CompressedArgs& a : buffers) {
    if (a.codec == nullptr || !a.codec->has_rounds() || a.codec->id() != buffers.front().codec->id())
      fail(GW_ERR_INVALID_ARGUMENT, "a batch of rounds takes buffers of one codec of rounds (codec '" +
                                        buffers.front().codec->name() + "'); '" +
                                        (a.codec ? a.codec->name() : std::string("NULL")) + "' is not one");
    a.chunk_elements = std::max<uint64_t>(1, comm.settings().pipeline_chunk_bytes / 4);
    a.ring_threshold_bytes = comm.settings().ring_threshold_bytes;
    total += a.count;
  }
  const Signature s{CollectiveKind::Allreduce, buffers.front().op, GW_DTYPE_F32, total, 0, buffers.front().codec->id()};
  const auto algorithm = [buffers = std::move(buffers), finish](Collective& c) {
    return then(coll::allreduce_rounds(c, buffers), finish);
  };
  return seq ? comm.start_collective_at(*seq, s, algorithm) : comm.start_collective(s, algorithm);
}

gw_request* start_shards_compressed(Communicator& comm, CollectiveKind kind, coll::ShardArgs a,
                                    std::function<void()> finish) {
  a.chunk_elements = std::max<uint64_t>(1, comm.settings().pipeline_chunk_bytes / 4);
  const bool scatter = kind == CollectiveKind::ReduceScatter;
  const Signature s{kind, scatter ? a.op : GW_REDUCE_SUM, GW_DTYPE_F32, a.count, 0, a.codec->id()};
  std::optional<Topology> topology;
  if (coll::use_two_level(comm.topology(), comm.settings().two_level)) topology = comm.topology();
  return comm.start_collective(s, [a, scatter, topology, finish](Collective& c) {
    return then(scatter ? coll::reduce_scatter_compressed(c, a, topology) : coll::allgather_compressed(c, a, topology),
                finish);
  });
}

gw_request* start_allreduce_dense(Communicator& comm, void* buf, uint64_t count, gw_dtype dtype, gw_reduce_op op,
                                  std::optional<uint32_t> seq, coll::CompressedStats* stats) {
  const Signature s{CollectiveKind::Allreduce, op, dtype, count, 0, 0};
  const uint64_t threshold = comm.settings().ring_threshold_bytes;
  const auto algorithm = [=](Collective& c) {
    return stats ? booked_dense(c, buf, count, dtype, op, threshold, stats)
                 : coll::allreduce_dense(c, buf, count, dtype, op, threshold);
  };
  return seq ? comm.start_collective_at(*seq, s, algorithm) : comm.start_collective(s, algorithm);
}

}  // namespace gw::comm
