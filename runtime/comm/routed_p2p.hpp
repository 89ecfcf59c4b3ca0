// Two transports behind one PointToPoint: the ranks of this rank's node are reached over the node's own
// transport ([transport] intra: shared memory, NVLink), every other rank over the communicator's
// transport ([transport] inter). Collectives keep addressing world ranks and never see the split.
#pragma once

#include <memory>
#include <vector>

#include "comm/transport_p2p.hpp"

namespace gw::comm {

class RoutedP2P final : public PointToPoint {
 public:
  // `node` holds this node's world ranks, ascending; `intra`'s rank i is node[i].
  RoutedP2P(std::unique_ptr<TransportP2P> inter, std::unique_ptr<TransportP2P> intra, std::vector<uint32_t> node);
  ~RoutedP2P() override;

  TransportP2P& inter() { return *inter_; }
  TransportP2P& intra() { return *intra_; }

  uint32_t rank() const override { return inter_->rank(); }
  uint32_t size() const override { return inter_->size(); }
  Op* send(uint32_t peer, uint64_t tag, const void* data, uint64_t bytes) override;
  Op* recv(uint32_t peer, uint64_t tag, void* data, uint64_t bytes) override;
  bool test(Op* op, uint64_t* bytes) override;
  void free(Op* op) noexcept override;
  void progress() override;
  void abort() noexcept override;

 private:
  struct Routed;  // an operation and the transport that owns it
  // The transport that reaches `peer`, and the peer's rank in it.
  PointToPoint& route(uint32_t peer, uint32_t* index);
  Op* wrap(PointToPoint& via, Op* op);

  std::unique_ptr<TransportP2P> inter_;
  std::unique_ptr<TransportP2P> intra_;
  std::vector<int64_t> local_index_;  // by world rank: its index in the node, or -1 for another node
  std::vector<Routed*> spare_;        // freed wrappers, reused (operations start and end in the hot path)
};

}  // namespace gw::comm
