// Compressed allreduce: the algorithms that move encoded payloads instead of raw elements, one per file,
// written against comm::Collective like the dense ones. The codec's properties pick the algorithm
// (choose_compressed); every path ends with every rank decoding the same bytes, so all ranks hold
// bit-identical results. Inputs are f32 in host memory, or in device memory through a TensorMemory
// (below), reduced in place; op is sum or avg (avg divides
// once, after the last decode). Behaviour and the reasons for each choice: docs/collectives.md.
#pragma once

#include <gradwire/gradwire.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "codec/codec.hpp"
#include "collectives/algorithms.hpp"
#include "ef/error_feedback.hpp"
#include "group/topology.hpp"

namespace gw::coll {

enum class CompressedAlgorithm {
  Local,                   // one rank: decode(encode(x)) through the same error feedback
  Dense,                   // none: its payloads are the f32 values, so the dense ring moves them as they are
  SummableRing,            // fp16, bf16: ring over encoded pieces, decode-add-re-encode per hop
  ScatterReduceAllgather,  // int8, onebit: owners sum decoded contributions in rank order, encode once
  SparseAllgather,         // topk: every rank's payloads to every rank, summed in rank order
  SparseDense,             // topk when the gathered payloads would outweigh a dense ring allreduce
  SharedIndices,           // randomk: the k values of every chunk reduced densely, then decoded
  Rounds,                  // powersgd: the codec's rounds, each vector summed over the ranks (ABI 1.4)
};
const char* compressed_algorithm_name(CompressedAlgorithm a);

// What one compressed allreduce costs this rank.
struct CompressedStats {
  uint64_t raw_bytes = 0;   // f32 bytes reduced
  uint64_t wire_bytes = 0;  // payload bytes this rank sent (wire headers included)
  double encode_seconds = 0;
  double decode_seconds = 0;
};

// Where a compressed allreduce's tensor lives, and what the algorithms do to it there. The algorithms
// never touch the tensor's memory themselves, so the same code runs on host and device tensors. Payloads
// travel from host memory (the transports of this path carry host buffers): a memory whose codecs
// encode elsewhere (device memory) stages each payload through scratch of its own, so only the encoded
// bytes cross to the host and back.
class TensorMemory {
 public:
  virtual ~TensorMemory() = default;
  // A gw_tensor of `count` f32 elements at x in this memory.
  virtual gw_tensor tensor(const float* x, uint64_t count) const = 0;
  // Whether codecs encode into and decode from the host payloads directly (host memory).
  virtual bool direct_payloads() const = 0;
  // Scratch for one staged payload, valid until the next call (the algorithms run on one thread).
  virtual void* payload_scratch(uint64_t bytes) = 0;
  // Staged payload -> host, complete when this returns; host -> staged, ordered before later work.
  virtual void payload_to_host(void* host, const void* staged, uint64_t bytes) = 0;
  virtual void payload_from_host(void* staged, const void* host, uint64_t bytes) = 0;
  virtual void copy(float* dst, const float* src, uint64_t count) = 0;  // the ranges may overlap
  virtual void add(float* dst, const float* src, uint64_t count) = 0;   // dst[i] = dst[i] + src[i]
  virtual void divide(float* x, uint64_t count, uint32_t n) = 0;         // as coll::divide does, bit for bit
  // f32 scratch in this memory for `count` elements, alive as long as the object (one at a time).
  virtual float* scratch(uint64_t count) = 0;
};

// Host memory: payloads encoded in place, plain loops.
class HostMemory : public TensorMemory {
 public:
  gw_tensor tensor(const float* x, uint64_t count) const override;
  bool direct_payloads() const override { return true; }
  void* payload_scratch(uint64_t bytes) override;
  void payload_to_host(void* host, const void* staged, uint64_t bytes) override;
  void payload_from_host(void* staged, const void* host, uint64_t bytes) override;
  void copy(float* dst, const float* src, uint64_t count) override;
  void add(float* dst, const float* src, uint64_t count) override;
  void divide(float* x, uint64_t count, uint32_t n) override;
  float* scratch(uint64_t count) override;

 protected:
  std::vector<unsigned char> payload_;
  std::vector<float> scratch_;
};

// CUDA device memory of device `device`, work ordered on `stream` (a cudaStream_t; 0: the default
// stream): the codecs' CUDA kernels encode and decode on the device, and only payloads are copied.
// Without CUDA in the build every operation fails with GW_ERR_UNSUPPORTED.
std::unique_ptr<TensorMemory> cuda_memory(int device, void* stream);

struct CompressedArgs {
  Codec* codec = nullptr;
  ErrorFeedback* ef = nullptr;  // around `codec`, or nullptr; residuals keyed by each chunk's element offset
  gw_codec_context ctx = GW_CODEC_CONTEXT_INIT;
  float* buf = nullptr;       // the result (out)
  const float* in = nullptr;  // the input when it is not buf (out of place); nullptr: in place
  uint64_t count = 0;
  gw_reduce_op op = GW_REDUCE_SUM;
  uint64_t chunk_elements = 1 << 18;        // pipelining granularity ([collectives] pipeline_chunk_bytes / 4)
  uint64_t ring_threshold_bytes = 64 << 10;  // the dense allreduce's choice ([collectives] ring_threshold_bytes)
  CompressedStats* stats = nullptr;         // filled when the collective completes; may be nullptr
  // Where buf and in live; nullptr: f32 host memory. Shared: the request's closure keeps it alive.
  std::shared_ptr<TensorMemory> memory;
  // The tensors' 2-D views (gw_codec_context.shapes, copied: the algorithm points ctx at this copy).
  std::vector<gw_tensor_shape> shapes;
};

// Whether a codec's payload body is its f32 input as it is: lossless, summable in f32, and 4 bytes per
// element (the none codec). Its encodings would be copies, and its sums those of the dense allreduce.
bool payloads_are_values(Codec& codec);

// The algorithm every rank will run for this codec, count, world size and memory (a pure function of
// them). `host`: the tensor is in host memory, where a codec whose payloads are its values skips its copies
// (Dense: the dense ring, with the summable ring's bits; error feedback around such a codec has nothing
// to keep); a device tensor takes the summable ring like fp16, so the ranks of one collective must hold
// their tensors in the same kind of memory.
CompressedAlgorithm choose_compressed(Codec& codec, uint64_t count, uint32_t world_size, uint64_t chunk_elements,
                                      bool host = true);

// The whole compressed allreduce of args.in (or args.buf) into args.buf. One rank and the sparse codecs'
// dense fallback work in place on a copy; every other algorithm reads the input where it is.
Task allreduce_compressed(Collective& c, CompressedArgs args);

// The dense allreduce gw_allreduce runs: the ring from ring_threshold_bytes on (and at least one element
// per rank), recursive doubling below.
Task allreduce_dense(Collective& c, void* buf, uint64_t count, gw_dtype dtype, gw_reduce_op op,
                     uint64_t ring_threshold_bytes);

// Compressed reduce-scatter and allgather: one shard of `count` f32 elements per rank, in host memory.
// Reduce-scatter: `in` holds world_size shards (shard b at in + b * count) and rank r's `out` receives
// the sum (or average) of every rank's shard r. Allgather: `in` is this rank's shard and `out` receives
// every rank's shard in rank order, decoded (this rank's own too). Behaviour: docs/collectives.md.
struct ShardArgs {
  Codec* codec = nullptr;
  ErrorFeedback* ef = nullptr;  // around `codec`, or nullptr; residuals keyed by each piece's element offset
  gw_codec_context ctx = GW_CODEC_CONTEXT_INIT;
  const float* in = nullptr;
  float* out = nullptr;  // may overlap `in` in any way: overlapping results are staged and copied at the end
  uint64_t count = 0;    // the shard's elements
  gw_reduce_op op = GW_REDUCE_SUM;   // reduce-scatter: sum or avg (divided once, by the owner)
  uint64_t chunk_elements = 1 << 18;  // pipelining granularity ([collectives] pipeline_chunk_bytes / 4)
  CompressedStats* stats = nullptr;  // filled when the collective completes; may be nullptr
};

// A codec whose payloads are its values (none) takes gw_reduce_scatter's ring and gives its bits. Any
// other codec: reduce_scatter_all_to_all over all ranks, or with `topology` (the communicator's, when
// use_two_level says so) over nodes: exact sums inside each node, then reduce_scatter_all_to_all of the
// node sums between the nodes (reduce_scatter_two_level.cpp). Every rank passes the same topology.
Task reduce_scatter_compressed(Collective& c, ShardArgs args, std::optional<comm::Topology> topology = std::nullopt);

// A codec whose payloads are its values (none) takes gw_allgather's ring. Any other codec:
// allgather_direct over all ranks, or with `topology` over nodes: allgather_direct between the nodes,
// then exact copies inside each node (allgather_two_level.cpp).
Task allgather_compressed(Collective& c, ShardArgs args, std::optional<comm::Topology> topology = std::nullopt);

// Encoding and decoding as the compressed algorithms see them: f32 pieces identified by their element
// offset, error feedback applied to every encoding this rank makes, time accounted.
class CodecOps {
 public:
  // `memory`: where the tensor lives (nullptr: host memory); error feedback keeps its residuals there.
  CodecOps(Codec& codec, ErrorFeedback* ef, const gw_codec_context& ctx, uint32_t rank, uint32_t world_size,
           TensorMemory* memory = nullptr);

  uint64_t max_payload(uint64_t count);
  // Encodes x[0, count) (the piece at element `offset`, in the tensor's memory) into payload (host
  // memory); returns the payload's size.
  uint64_t encode(uint64_t offset, const float* x, uint64_t count, void* payload, uint64_t capacity);
  // Decodes payload (host memory) into out[0, count) in the tensor's memory.
  void decode(uint64_t offset, const void* payload, uint64_t size, float* out, uint64_t count, bool accumulate);
  // The tensor's memory, for what the algorithms do to it besides encoding and decoding.
  TensorMemory& memory() { return *memory_; }

  Codec& codec() { return codec_; }
  double encode_seconds() const { return encode_seconds_; }
  double decode_seconds() const { return decode_seconds_; }

 private:
  gw_codec_context context_for(uint64_t offset) const;

  Codec& codec_;
  ErrorFeedback* ef_;
  gw_codec_context ctx_;
  HostMemory host_;
  TensorMemory* memory_;
  double encode_seconds_ = 0;
  double decode_seconds_ = 0;
};

// Adds what a collective cost this rank to `stats` (nothing when it is nullptr): `raw_bytes` f32 bytes,
// the bytes it sent and its codec time.
void book(CompressedStats* stats, const Collective& c, const CodecOps& ops, uint64_t raw_bytes);

// Whether [a, a + a_bytes) and [b, b + b_bytes) share a byte.
bool overlap(const void* a, uint64_t a_bytes, const void* b, uint64_t b_bytes);

// A buffer cut into pieces for pipelining: piece i covers elements [offset[i], offset[i] + count[i]).
struct Pieces {
  std::vector<uint64_t> offset;
  std::vector<uint64_t> count;
  size_t size() const { return offset.size(); }
};
// Cuts [begin, begin + count) into `n` pieces whose sizes differ by at most one.
Pieces split_even(uint64_t begin, uint64_t count, uint64_t n);
// How many pieces of at most `chunk_elements` a run of `count` elements needs (at least 1), limited so
// that `messages_per_piece` messages per piece fit into a collective's message numbers.
uint64_t piece_count(uint64_t count, uint64_t chunk_elements, uint64_t messages_per_piece);

// The algorithms (one file each), over a CodecOps that lives as long as they run.
Task allreduce_local(CodecOps& ops, float* buf, uint64_t count, gw_reduce_op op, uint64_t chunk_elements);
Task allreduce_summable_ring(Collective& c, CodecOps& ops, const float* in, float* buf, uint64_t count,
                             gw_reduce_op op, uint64_t chunk_elements);
Task allreduce_scatter_reduce_allgather(Collective& c, CodecOps& ops, const float* in, float* buf, uint64_t count, gw_reduce_op op,
                                        uint64_t chunk_elements);
Task allreduce_sparse_allgather(Collective& c, CodecOps& ops, const float* in, float* buf, uint64_t count, gw_reduce_op op,
                                uint64_t chunk_elements);
Task allreduce_sparse_dense(Collective& c, CodecOps& ops, float* buf, uint64_t count, gw_reduce_op op,
                            uint64_t chunk_elements, uint64_t ring_threshold_bytes);
Task allreduce_shared_indices(Collective& c, CodecOps& ops, const float* in, float* buf, uint64_t count,
                              gw_reduce_op op, uint64_t chunk_elements, uint64_t ring_threshold_bytes);
// A codec of rounds (Codec::has_rounds): for each round the codec writes a vector from the input (and
// the previous round's sum), the vector is summed over the ranks (exactly in f32 by the dense allreduce,
// or through the plan's wire codec's compressed allreduce), and the last round writes the sum into buf;
// avg divides once at the end. Every rank gets the same sums, so the same final bits. Host f32 only.
// Each round's messages are numbered from round * kRoundSteps. Books its cost into args.stats.
Task allreduce_rounds(Collective& c, CompressedArgs args);
// Several buffers of codecs of rounds in one collective per round: round r's local work runs for every
// buffer in the given order, their vectors are concatenated in that order and summed at once (one
// collective per round instead of one per buffer per round), and each buffer's part of the sum is what
// its next round reads. Every rank must pass the same buffers in the same order (same counts and shapes:
// the collective's header carries the total count). The codecs must be alike (the first buffer's wire codec
// and pipelining carry every vector). Each buffer's result has the bits the one-buffer form gives wherever
// the dense allreduce sums its elements in the same order in both (recursive doubling: below
// ring_threshold_bytes, or two ranks); the ring's order depends on where an element falls in the vector.
// Each buffer's stats get its raw bytes, its codec time and the bytes sent in proportion to its elements.
Task allreduce_rounds(Collective& c, std::vector<CompressedArgs> buffers);
// Checks shapes against a buffer of `count` elements: increasing offsets, no overlap, inside the buffer,
// rows and cols at least 1; GW_ERR_INVALID_ARGUMENT naming the shape otherwise.
void check_shapes(const gw_tensor_shape* shapes, uint32_t num_shapes, uint64_t count);

// The compressed cores, over the collective's current group (Collective::set_group), n = c.size():
// Reduce-scatter: `in` holds n shards of `count`; every rank encodes each piece of every other rank's
// shard once and sends it to that shard's owner, which decodes the contributions and sums them into
// `result` in f32 in rank order 0, 1, ..., n - 1 (its own shard unencoded at its own place in that
// order): one hop, the same sum whichever rank computes it, pipelined piece by piece. No average.
// Message number: the piece.
Task reduce_scatter_all_to_all(Collective& c, CodecOps& ops, const float* in, float* result, uint64_t count,
                               uint64_t chunk_elements);
// Allgather: every rank encodes each piece of its `in` once, sends the payload to every other rank and
// decodes it into its own place of `out` (n shards of `count`) too, so every rank holds the same bits of
// every shard. Message number: the piece.
Task allgather_direct(Collective& c, CodecOps& ops, const float* in, float* out, uint64_t count,
                      uint64_t chunk_elements);
// The two-level forms (topology even, as use_two_level requires).
Task reduce_scatter_two_level(Collective& c, ShardArgs args, const comm::Topology& topology);
Task allgather_two_level(Collective& c, ShardArgs args, const comm::Topology& topology);

}  // namespace gw::coll
