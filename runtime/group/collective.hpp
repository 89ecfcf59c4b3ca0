// One running collective as its algorithm sees it: who it is (rank, size), what every rank must have
// called (the Signature), and messages to peers that it starts and then awaits. Every message carries a
// MessageHeader; a receiver compares it with its own signature, so ranks that disagree (count, dtype,
// op, collective, codec) fail with GW_ERR_MISMATCH spelling out the difference instead of hanging or
// producing wrong numbers. Every wait has a deadline (GW_ERR_TIMEOUT naming the silent peer).
#pragma once

#include <gradwire/types.h>

#include <chrono>
#include <coroutine>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/buffer.hpp"
#include "group/p2p.hpp"
#include "group/task.hpp"

namespace gw::comm {

enum class CollectiveKind : uint8_t {
  Allreduce = 1,
  ReduceScatter = 2,
  Allgather = 3,
  Allgatherv = 4,
  Broadcast = 5,
  Barrier = 6,
  Alltoallv = 7,  // every rank sends each other rank its own block (the data cache's exchange)
};

const char* kind_name(CollectiveKind kind);
const char* op_name(gw_reduce_op op);

// What every rank of a collective must agree on.
struct Signature {
  CollectiveKind kind = CollectiveKind::Barrier;
  gw_reduce_op op = GW_REDUCE_SUM;
  gw_dtype dtype = GW_DTYPE_U8;
  uint64_t count = 0;     // the collective's element count (allgatherv: the total)
  uint32_t root = 0;      // broadcast
  uint32_t codec_id = 0;  // FNV-1a of the codec's name; 0: uncompressed

  std::string describe() const;  // "allreduce(sum, f32, 100 elements)"
};

// How another rank's call (theirs) differs from this rank's (mine), one "what: theirs vs mine" per field;
// empty when they agree.
std::vector<std::string> signature_differences(const Signature& theirs, const Signature& mine);
// The GW_ERR_MISMATCH text of collective #seq: both calls and the differences (as listed above, plus
// any the caller found, such as another collective number). Every mismatch the runtime reports between
// two ranks' collectives is spelled by this function.
std::string mismatch_message(uint32_t seq, uint32_t their_rank, const Signature& theirs, uint32_t my_rank,
                             const Signature& mine, const std::vector<std::string>& differences);

// The header in front of every collective message. On the wire it is 40 bytes, little-endian, at these
// offsets: magic 0, seq 4, kind 8, op 9, dtype 10, flags 11, root 12, codec_id 16, step 20, count 24,
// bytes 32 (docs/collectives.md); write_message_header / read_message_header are the only way in and out.
struct MessageHeader {
  uint32_t magic = 0;
  uint32_t seq = 0;  // the collective's number on this communicator
  uint8_t kind = 0;
  uint8_t op = 0;
  uint8_t dtype = 0;
  uint8_t flags = 0;  // kPacked: the payload follows the header in the same message
  uint32_t root = 0;
  uint32_t codec_id = 0;
  uint32_t step = 0;  // which message of the algorithm
  uint64_t count = 0;
  uint64_t bytes = 0;  // payload bytes
};
constexpr uint64_t kMessageHeaderBytes = 40;
void write_message_header(unsigned char* out, const MessageHeader& h);
MessageHeader read_message_header(const unsigned char* in);

// Tag layout inside the transport's 40 bits.
namespace tags {
constexpr uint64_t kUser = uint64_t{1} << 39;     // application point-to-point, low 32 bits the tag
constexpr uint64_t kControl = uint64_t{1} << 38;  // failure notices between ranks
constexpr uint64_t kPayload = uint64_t{1} << 37;  // the payload of a large collective message
constexpr uint64_t kBootstrap = kUser | kControl;  // creation only: the intra-node transport's addresses
constexpr unsigned kStepBits = 16;
constexpr unsigned kSeqBits = 21;
inline uint64_t collective(uint32_t seq, uint32_t step) {
  return (uint64_t(seq & ((1u << kSeqBits) - 1)) << kStepBits) | (step & ((1u << kStepBits) - 1));
}
}  // namespace tags

class Collective {
 public:
  // Payloads up to this size travel in one message with their header (one small copy); larger ones
  // travel as a header message plus the payload sent from and received into the caller's buffer.
  static constexpr uint64_t kPackedLimit = 16 * 1024;

  Collective(PointToPoint& p2p, uint32_t seq, const Signature& signature, double timeout_s,
             std::string timeout_source = "[runtime] timeout_s");
  ~Collective();
  Collective(const Collective&) = delete;
  Collective& operator=(const Collective&) = delete;

  uint32_t rank() const { return group_.empty() ? rank_ : group_rank_; }
  uint32_t size() const { return group_.empty() ? size_ : uint32_t(group_.size()); }
  uint32_t seq() const { return seq_; }
  const Signature& signature() const { return signature_; }

  // Start a message; `step` numbers the algorithm's messages so that every (peer, step) pair is unique.
  // Buffers must stay valid until the next all() completes (or until the message's id is reported by
  // take_completed()). Each returns the message's id: 0, 1, 2, ... in the order they were started.
  uint32_t send(uint32_t peer, uint32_t step, const void* data, uint64_t bytes);
  uint32_t recv(uint32_t peer, uint32_t step, void* data, uint64_t bytes);
  // A receive whose size only the sender knows (compressed payloads): at most `capacity` bytes; the
  // size that arrived is received_bytes(id) once the message completed. A larger message is
  // GW_ERR_CORRUPT naming the sender.
  uint32_t recv_upto(uint32_t peer, uint32_t step, void* data, uint64_t capacity);
  // Hierarchical algorithms (collectives/two_level.hpp) run the flat algorithms on a subset of the ranks:
  // while a group is set, rank() and size() are this rank's index in `members` (world ranks, which must
  // hold this rank) and their number, peers passed to send/recv are indices into `members`, and
  // `step_base` is added to every message number. An empty `members` ends the group.
  void set_group(std::vector<uint32_t> members, uint32_t step_base);
  // An operation started on the transport directly (a native collective, comm/native.hpp): awaited
  // like a message, without a header; `what` names it in timeout messages.
  // `via`: the transport that started it, when not the collective's own (a device transport).
  uint32_t adopt(PointToPoint::Op* op, const char* what, PointToPoint* via = nullptr);
  uint64_t received_bytes(uint32_t id) const { return received_.at(id); }
  // Payload bytes of every message this rank started sending (headers not counted).
  uint64_t bytes_sent() const { return bytes_sent_; }

  // Pipelined algorithms: check() drives the transport and tests every message in flight without
  // suspending; take_completed() hands over the ids completed since its last call, in completion
  // order; `co_await c.any()` suspends until at least one message has completed that take_completed()
  // has not reported yet.
  void check();
  std::vector<uint32_t> take_completed();
  struct AnyAwaiter {
    Collective& c;
    bool await_ready() const { return !c.completed_.empty(); }
    void await_suspend(std::coroutine_handle<> h) {
      c.waiting_any_ = true;
      c.resume_point_ = h;
    }
    void await_resume() const { c.waiting_any_ = false; }
  };
  AnyAwaiter any();

  // `co_await c.all()`: every message started so far has completed (headers checked).
  struct AllAwaiter {
    Collective& c;
    bool await_ready() const { return c.pending_.empty(); }
    void await_suspend(std::coroutine_handle<> h) { c.resume_point_ = h; }
    void await_resume() const {}
  };
  AllAwaiter all();

  // A scratch buffer that lives as long as the collective (slot 0, 1, ...), at least `bytes` long.
  unsigned char* scratch(unsigned slot, uint64_t bytes);

  // The driver side: run `algorithm` (a coroutine over this collective) until it waits.
  void start(Task algorithm);
  // Tests the messages in flight and resumes the algorithm when they are done. Returns true once the
  // algorithm has finished; throws gw::Error on a mismatch or a transport failure. It never times out by
  // itself: the driver asks overdue() and decides when to give up (fail_timeout), so that it can first
  // ask the other ranks where they are stuck (the communicator's stuck notices).
  bool poll();
  // Seconds the algorithm's current wait has gone without completing.
  double waited() const;
  double timeout_s() const { return timeout_s_; }
  // The current wait has passed timeout_s.
  bool overdue() const { return waited() > timeout_s_; }
  // GW_ERR_TIMEOUT naming the peers this rank waits for; `detail` is appended (what the others said).
  [[noreturn]] void fail_timeout(const std::string& detail) const;

 private:
  struct Message;
  uint32_t start_recv(uint32_t peer, uint32_t step, void* data, uint64_t bytes, bool exact);
  void check_header(const Message& m, uint64_t received) const;
  bool poll_message(Message& m);
  // Tests every pending message, moving the completed ones to completed_. True when none is pending.
  bool poll_pending();

  PointToPoint& p2p_;
  uint32_t rank_;
  uint32_t size_;
  std::vector<uint32_t> group_;  // set_group: world ranks by group index; empty: the whole world
  uint32_t group_rank_ = 0;
  uint32_t step_base_ = 0;
  uint32_t seq_;
  Signature signature_;
  double timeout_s_;
  std::string timeout_source_;  // where timeout_s came from, for the timeout message
  std::vector<std::unique_ptr<Message>> pending_;
  std::vector<uint64_t> received_;   // by message id: payload bytes that arrived (receives)
  std::vector<uint32_t> completed_;  // ids completed and not yet taken
  bool waiting_any_ = false;
  uint64_t bytes_sent_ = 0;
  std::chrono::steady_clock::time_point wait_started_;
  std::coroutine_handle<> resume_point_;
  Task task_;
  // Uninitialized, and recycled through a per-thread pool: zero-filling and first-touch page faults of
  // a fresh 128 MiB buffer cost more than reducing it.
  struct Scratch {
    Buffer data;
    uint64_t size = 0;
  };
  std::vector<Scratch> scratch_;
};

}  // namespace gw::comm
