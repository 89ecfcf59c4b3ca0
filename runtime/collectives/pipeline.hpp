// The event loop of a pipelined compressed algorithm. Local work (encoding a piece, summing decoded
// contributions) waits in a queue; each message that arrives runs its handler (decode, forward, queue
// the next encoding). run() alternates one unit of local work with a non-blocking look at the
// transport, so while a piece is being encoded the previous pieces travel and arriving ones are
// decoded: encoding, transfer and decoding of successive pieces overlap on one thread.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <vector>

#include "comm/collective.hpp"
#include "comm/task.hpp"

namespace gw::coll {

// A payload buffer left uninitialised (it is always written before it is read).
struct PayloadBuffer {
  std::unique_ptr<unsigned char[]> data;
  uint64_t capacity = 0;
  uint64_t size = 0;

  void reserve(uint64_t bytes) {
    if (capacity < bytes) {
      data = std::make_unique_for_overwrite<unsigned char[]>(bytes);
      capacity = bytes;
    }
  }
};

class Pipeline {
 public:
  explicit Pipeline(comm::Collective& c) : c_(c) {}

  // Receives from `peer` into buf (at most buf.capacity bytes; buf.size is set on arrival), then runs
  // on_arrival.
  void receive(uint32_t peer, uint32_t step, PayloadBuffer& buf, std::function<void()> on_arrival);
  void send(uint32_t peer, uint32_t step, const PayloadBuffer& buf) { c_.send(peer, step, buf.data.get(), buf.size); }
  // Queues local work; urgent work (what other ranks wait for) goes first.
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
