#include "comm/routed_p2p.hpp"

#include "core/error.hpp"

namespace gw::comm {

struct RoutedP2P::Routed {
  PointToPoint* via = nullptr;
  Op* op = nullptr;
};

namespace {
RoutedP2P::Op* as_op(void* routed) { return reinterpret_cast<PointToPoint::Op*>(routed); }
}  // namespace

RoutedP2P::RoutedP2P(std::unique_ptr<TransportP2P> inter, std::unique_ptr<TransportP2P> intra,
                     std::vector<uint32_t> node)
    : inter_(std::move(inter)), intra_(std::move(intra)), local_index_(inter_->size(), -1) {
  if (intra_->size() != node.size())
    fail(GW_ERR_INTERNAL, "intra-node transport of " + std::to_string(intra_->size()) + " ranks for a node of " +
                              std::to_string(node.size()));
  for (size_t i = 0; i < node.size(); ++i) local_index_.at(node[i]) = int64_t(i);
}

RoutedP2P::~RoutedP2P() {
  for (Routed* r : spare_) delete r;
}

PointToPoint& RoutedP2P::route(uint32_t peer, uint32_t* index) {
  if (peer < local_index_.size() && local_index_[peer] >= 0) {
    *index = uint32_t(local_index_[peer]);
    return *intra_;
  }
  *index = peer;
  return *inter_;
}

PointToPoint::Op* RoutedP2P::wrap(PointToPoint& via, Op* op) {
  Routed* r = nullptr;
  if (spare_.empty()) {
    try {
      r = new Routed;
    } catch (...) {
      via.free(op);
      throw;
    }
  } else {
    r = spare_.back();
    spare_.pop_back();
  }
  r->via = &via;
  r->op = op;
  return as_op(r);
}

PointToPoint::Op* RoutedP2P::send(uint32_t peer, uint64_t tag, const void* data, uint64_t bytes) {
  uint32_t index = 0;
  PointToPoint& via = route(peer, &index);
  return wrap(via, via.send(index, tag, data, bytes));
}

PointToPoint::Op* RoutedP2P::recv(uint32_t peer, uint64_t tag, void* data, uint64_t bytes) {
  uint32_t index = 0;
  PointToPoint& via = route(peer, &index);
  return wrap(via, via.recv(index, tag, data, bytes));
}

bool RoutedP2P::test(Op* op, uint64_t* bytes) {
  Routed* r = reinterpret_cast<Routed*>(op);
  return r->via->test(r->op, bytes);
}

void RoutedP2P::free(Op* op) noexcept {
  if (op == nullptr) return;
  Routed* r = reinterpret_cast<Routed*>(op);
  r->via->free(r->op);
  r->op = nullptr;
  try {
    spare_.push_back(r);
  } catch (...) {
    delete r;
  }
}

void RoutedP2P::progress() {
  intra_->progress();
  inter_->progress();
}

void RoutedP2P::abort() noexcept {
  intra_->abort();
  inter_->abort();
}

}  // namespace gw::comm
