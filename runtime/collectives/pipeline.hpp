// The event loop of a pipelined compressed algorithm. Local work (encoding a piece, summing decoded
// contributions) waits in a queue; each message that arrives runs its handler (decode, forward, queue
// the next encoding). run() alternates one unit of local work with a non-blocking look at the
// transport, so while a piece is being encoded the previous pieces travel and arriving ones are
// decoded: encoding, transfer and decoding of successive pieces overlap on one thread.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <initializer_list>
#include <memory>
#include <vector>

#include "group/collective.hpp"
#include "group/task.hpp"

namespace gw::coll {

// A payload buffer left uninitialised (it is always written before it is read). Its memory is either
// its own (reserve) or part of a collective's scratch memory (carve).
struct PayloadBuffer {
  unsigned char* data = nullptr;
  uint64_t capacity = 0;
  uint64_t size = 0;
  Buffer owned;

  void reserve(uint64_t bytes) {
    if (capacity < bytes) {
      owned = allocate_buffer(bytes);
      data = owned.get();
      capacity = bytes;
    }
  }
};

// Gives every buffer of `sets` `capacity` bytes of one scratch buffer of the collective (slot `slot`).
// Scratch memory goes back to a per-thread pool when the collective ends, so the next allreduce reuses
// pages that are already mapped instead of faulting in (and zeroing) fresh ones for every payload.
void carve(comm::Collective& c, unsigned slot, uint64_t capacity, std::initializer_list<std::vector<PayloadBuffer>*> sets);

class Pipeline {
 public:
  explicit Pipeline(comm::Collective& c) : c_(c) {}

  // Receives from `peer` into buf (at most buf.capacity bytes; buf.size is set on arrival), then runs
  // on_arrival.
  void receive(uint32_t peer, uint32_t step, PayloadBuffer& buf, std::function<void()> on_arrival);
  void send(uint32_t peer, uint32_t step, const PayloadBuffer& buf) { c_.send(peer, step, buf.data, buf.size); }
  // Queues local work, in order; urgent work goes ahead of everything queued (the latest first). Work
  // that only feeds this rank's result must not be urgent while work others wait for is queued.
  void then(std::function<void()> work, bool urgent = false);

  // Runs until every receive was handled and no work is left, then waits for the last sends.
  comm::Task run();

 private:
  bool dispatch_completed();

  comm::Collective& c_;
  std::deque<std::function<void()>> work_;
  std::vector<std::function<void()>> handlers_;  // by message id; empty for sends
  std::vector<PayloadBuffer*> targets_;
  uint64_t receives_ = 0;
  uint64_t handled_ = 0;
};

}  // namespace gw::coll
