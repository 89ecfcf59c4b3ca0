#include <algorithm>
#include <chrono>
#include <cstring>
#include <utility>

#include "collectives/algorithms.hpp"
#include "collectives/compressed.hpp"
#include "collectives/pipeline.hpp"
#include "core/error.hpp"

namespace gw::coll {
namespace {

using Clock = std::chrono::steady_clock;

double since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

// The largest message number a collective can use (comm::tags::kStepBits).
constexpr uint64_t kMaxMessages = uint64_t{1} << comm::tags::kStepBits;

}  // namespace

const char* compressed_algorithm_name(CompressedAlgorithm a) {
  switch (a) {
    case CompressedAlgorithm::Local: return "local";
    case CompressedAlgorithm::Dense: return "dense";
    case CompressedAlgorithm::SummableRing: return "summable ring";
    case CompressedAlgorithm::ScatterReduceAllgather: return "scatter-reduce-allgather";
    case CompressedAlgorithm::SparseAllgather: return "sparse allgather";
    case CompressedAlgorithm::SparseDense: return "sparse, dense ring";
    case CompressedAlgorithm::SharedIndices: return "shared indices";
    case CompressedAlgorithm::Rounds: return "rounds";
  }
  return "?";
}

CodecOps::CodecOps(Codec& codec, ErrorFeedback* ef, const gw_codec_context& ctx, uint32_t rank, uint32_t world_size,
                   TensorMemory* memory)
    : codec_(codec), ef_(ef), ctx_(ctx), memory_(memory ? memory : &host_) {
  ctx_.struct_size = sizeof(gw_codec_context);
  ctx_.rank = rank;
  ctx_.world_size = world_size;
  ctx_.workspace = nullptr;
  ctx_.workspace_bytes = 0;
}

gw_codec_context CodecOps::context_for(uint64_t offset) const {
  // Each piece draws its own random stream (random-k coordinates, stochastic rounding); every rank
  // derives the same one from the shared seed and the piece's offset.
  gw_codec_context c = ctx_;
  c.seed ^= offset * 0x9e3779b97f4a7c15ull;
  return c;
}

uint64_t CodecOps::max_payload(uint64_t count) { return codec_.max_payload_size(GW_DTYPE_F32, count); }

uint64_t CodecOps::encode(uint64_t offset, const float* x, uint64_t count, void* payload, uint64_t capacity) {
  const auto start = Clock::now();
  const gw_tensor t = memory_->tensor(x, count);
  const gw_codec_context c = context_for(offset);
  uint64_t size = 0;
  if (memory_->direct_payloads()) {
    size = ef_ ? ef_->encode(offset, c, t, payload, capacity) : codec_.encode(c, t, payload, capacity);
  } else {
    void* staged = memory_->payload_scratch(capacity);
    size = ef_ ? ef_->encode(offset, c, t, staged, capacity) : codec_.encode(c, t, staged, capacity);
    memory_->payload_to_host(payload, staged, size);
  }
  encode_seconds_ += since(start);
  return size;
}

void CodecOps::decode(uint64_t offset, const void* payload, uint64_t size, float* out, uint64_t count,
                      bool accumulate) {
  const auto start = Clock::now();
  gw_tensor t = memory_->tensor(out, count);
  const void* from = payload;
  const void* host_header = nullptr;  // staged: the header is read where it arrived, without a copy back
  if (!memory_->direct_payloads()) {
    void* staged = memory_->payload_scratch(size);
    memory_->payload_from_host(staged, payload, size);
    from = staged;
    host_header = payload;
  }
  codec_.decode(context_for(offset), from, size, t, accumulate ? uint32_t(GW_DECODE_ACCUMULATE) : 0u, host_header);
  decode_seconds_ += since(start);
}

Pieces split_even(uint64_t begin, uint64_t count, uint64_t n) {
  Blocks b = even_blocks(count, uint32_t(n), 1, begin);
  return Pieces{std::move(b.offset), std::move(b.count)};
}

uint64_t piece_count(uint64_t count, uint64_t chunk_elements, uint64_t messages_per_piece) {
  const uint64_t wanted = std::max<uint64_t>(1, (count + chunk_elements - 1) / std::max<uint64_t>(1, chunk_elements));
  return std::max<uint64_t>(1, std::min(wanted, (kMaxMessages - 1) / std::max<uint64_t>(1, messages_per_piece)));
}

bool payloads_are_values(Codec& codec) {
  const gw_codec_properties& p = codec.properties();
  const uint32_t both = GW_CODEC_LOSSLESS | GW_CODEC_SUMMABLE;
  if ((p.flags & both) != both || (p.flags & (GW_CODEC_SPARSE | GW_CODEC_SHARED_INDICES)) ||
      p.sum_dtype != GW_DTYPE_F32)
    return false;
  const uint64_t header = codec.max_payload_size(GW_DTYPE_F32, 0);
  return codec.max_payload_size(GW_DTYPE_F32, 1) == header + 4 &&
         codec.max_payload_size(GW_DTYPE_F32, 4096) == header + 4 * 4096;
}

CompressedAlgorithm choose_compressed(Codec& codec, uint64_t count, uint32_t world_size, uint64_t chunk_elements,
                                      bool host) {
  const uint32_t flags = codec.properties().flags;
  if (codec.has_rounds()) return CompressedAlgorithm::Rounds;
  if (world_size == 1) return CompressedAlgorithm::Local;
  // The dense ring adds exactly as the summable ring does (the same blocks, the same order), so a tensor
  // gets the same bits whichever of the two it takes; below one element per rank the ring has no blocks.
  if (host && count >= world_size && payloads_are_values(codec)) return CompressedAlgorithm::Dense;
  if (flags & GW_CODEC_SHARED_INDICES) return CompressedAlgorithm::SharedIndices;
  if (flags & GW_CODEC_SPARSE) {
    // Every rank receives the others' payloads (n - 1 of them) where a dense ring allreduce receives
    // 2 (n - 1) / n of the f32 buffer: gather while n payloads weigh at most twice the dense buffer.
    // Decided from the codec's worst-case size, so every rank decides alike without asking the others.
    const Pieces pieces = split_even(0, count, piece_count(count, chunk_elements, 1));
    uint64_t payload = 0;
    for (uint64_t c : pieces.count) payload += codec.max_payload_size(GW_DTYPE_F32, c);
    return payload * world_size <= 2 * 4 * count ? CompressedAlgorithm::SparseAllgather
                                                 : CompressedAlgorithm::SparseDense;
  }
  if (flags & GW_CODEC_SUMMABLE) return CompressedAlgorithm::SummableRing;
  return CompressedAlgorithm::ScatterReduceAllgather;
}

Task allreduce_compressed(Collective& c, CompressedArgs a) {
  if (a.codec->has_rounds()) {
    co_await allreduce_rounds(c, std::move(a));
    co_return;
  }
  CodecOps ops(*a.codec, a.ef, a.ctx, c.rank(), c.size(), a.memory.get());
  const uint64_t chunk = std::max<uint64_t>(1, a.chunk_elements);
  if (a.count > 0) {
    const CompressedAlgorithm algorithm =
        choose_compressed(*a.codec, a.count, c.size(), chunk, ops.memory().direct_payloads());
    const float* in = a.in != nullptr ? a.in : a.buf;
    // Every algorithm but these three reads the input where it is.
    const bool works_on_a_copy = algorithm == CompressedAlgorithm::Local || algorithm == CompressedAlgorithm::Dense ||
                                 algorithm == CompressedAlgorithm::SparseDense;
    if (in != a.buf && works_on_a_copy) ops.memory().copy(a.buf, in, a.count);
    switch (algorithm) {
      case CompressedAlgorithm::Local: co_await allreduce_local(ops, a.buf, a.count, a.op, chunk); break;
      case CompressedAlgorithm::Dense: co_await allreduce_ring(c, a.buf, a.count, GW_DTYPE_F32, a.op); break;
      case CompressedAlgorithm::SummableRing:
        co_await allreduce_summable_ring(c, ops, in, a.buf, a.count, a.op, chunk);
        break;
      case CompressedAlgorithm::ScatterReduceAllgather:
        co_await allreduce_scatter_reduce_allgather(c, ops, in, a.buf, a.count, a.op, chunk);
        break;
      case CompressedAlgorithm::SparseAllgather:
        co_await allreduce_sparse_allgather(c, ops, in, a.buf, a.count, a.op, chunk);
        break;
      case CompressedAlgorithm::SparseDense:
        co_await allreduce_sparse_dense(c, ops, a.buf, a.count, a.op, chunk, a.ring_threshold_bytes);
        break;
      case CompressedAlgorithm::SharedIndices:
        co_await allreduce_shared_indices(c, ops, in, a.buf, a.count, a.op, chunk, a.ring_threshold_bytes);
        break;
      case CompressedAlgorithm::Rounds: break;  // taken above
    }
  }
  book(a.stats, c, ops, 4 * a.count);
}

void book(CompressedStats* stats, const Collective& c, const CodecOps& ops, uint64_t raw_bytes) {
  if (stats == nullptr) return;
  stats->raw_bytes += raw_bytes;
  stats->wire_bytes += c.bytes_sent();
  stats->encode_seconds += ops.encode_seconds();
  stats->decode_seconds += ops.decode_seconds();
}

bool overlap(const void* a, uint64_t a_bytes, const void* b, uint64_t b_bytes) {
  const auto x = reinterpret_cast<uintptr_t>(a), y = reinterpret_cast<uintptr_t>(b);
  return a_bytes > 0 && b_bytes > 0 && x < y + b_bytes && y < x + a_bytes;
}

Task allreduce_local(CodecOps& ops, float* buf, uint64_t count, gw_reduce_op, uint64_t chunk_elements) {
  const Pieces pieces = split_even(0, count, piece_count(count, chunk_elements, 1));
  PayloadBuffer payload;
  for (size_t i = 0; i < pieces.size(); ++i) {
    float* x = buf + pieces.offset[i];
    payload.reserve(ops.max_payload(pieces.count[i]));
    payload.size = ops.encode(pieces.offset[i], x, pieces.count[i], payload.data, payload.capacity);
    ops.decode(pieces.offset[i], payload.data, payload.size, x, pieces.count[i], false);
  }
  co_return;  // avg over one rank is the value itself
}

Task allreduce_dense(Collective& c, void* buf, uint64_t count, gw_dtype dtype, gw_reduce_op op,
                     uint64_t ring_threshold_bytes) {
  const bool ring = count * gw_dtype_size(dtype) >= ring_threshold_bytes && count >= c.size();
  if (ring) {
    co_await allreduce_ring(c, buf, count, dtype, op);
  } else {
    co_await allreduce_recursive_doubling(c, buf, count, dtype, op);
  }
}

}  // namespace gw::coll
