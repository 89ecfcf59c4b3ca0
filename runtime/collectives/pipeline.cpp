#include "collectives/pipeline.hpp"

#include <algorithm>

namespace gw::coll {

void carve(comm::Collective& c, unsigned slot, uint64_t capacity, std::initializer_list<std::vector<PayloadBuffer>*> sets) {
  const uint64_t stride = (capacity + 63) / 64 * 64;
  uint64_t buffers = 0;
  for (const auto* v : sets) buffers += v->size();
  unsigned char* base = c.scratch(slot, std::max<uint64_t>(1, stride * buffers));
  for (auto* v : sets)
    for (PayloadBuffer& b : *v) {
      b.owned.reset();
      b.data = base;
      b.capacity = capacity;
      base += stride;
    }
}

void Pipeline::receive(uint32_t peer, uint32_t step, PayloadBuffer& buf, std::function<void()> on_arrival) {
  const uint32_t id = c_.recv_upto(peer, step, buf.data, buf.capacity);
  if (handlers_.size() <= id) {
    handlers_.resize(id + 1);
    targets_.resize(id + 1, nullptr);
  }
  handlers_[id] = std::move(on_arrival);
  targets_[id] = &buf;
  ++receives_;
}

void Pipeline::then(std::function<void()> work, bool urgent) {
  if (urgent) {
    work_.push_front(std::move(work));
  } else {
    work_.push_back(std::move(work));
  }
}

bool Pipeline::dispatch_completed() {
  bool any = false;
  for (uint32_t id : c_.take_completed()) {
    if (id >= handlers_.size() || !handlers_[id]) continue;  // a send
    targets_[id]->size = c_.received_bytes(id);
    auto handler = std::move(handlers_[id]);
    handlers_[id] = nullptr;
    ++handled_;
    handler();
    any = true;
  }
  return any;
}

comm::Task Pipeline::run() {
  while (handled_ < receives_ || !work_.empty()) {
    if (!work_.empty()) {
      auto work = std::move(work_.front());
      work_.pop_front();
      work();
    }
    c_.check();
    const bool handled = dispatch_completed();
    if (!handled && work_.empty() && handled_ < receives_) {
      co_await c_.any();
      dispatch_completed();
    }
  }
  co_await c_.all();
}

}  // namespace gw::coll
