#include "comm/communicator.hpp"

#include <sched.h>

#include <chrono>
#include <cstring>

#include "core/error.hpp"

namespace gw::comm {
namespace {

constexpr uint64_t kNoticeBytes = 4096;
constexpr double kNoticeFlushSeconds = 2.0;

using Clock = std::chrono::steady_clock;

}  // namespace

Communicator::Communicator(std::unique_ptr<PointToPoint> p2p, CommSettings settings)
    : p2p_(std::move(p2p)), settings_(settings) {
  incoming_notices_.resize(size());
  for (uint32_t peer = 0; peer < size(); ++peer) {
    if (peer == rank()) continue;
    Notice& n = incoming_notices_[peer];
    n.buffer.resize(kNoticeBytes);
    n.op = p2p_->recv(peer, tags::kControl, n.buffer.data(), n.buffer.size());
  }
}

Communicator::~Communicator() {
  for (gw_request* r : live_) {
    r->collective.reset();
    p2p_->free(r->op);
    delete r;
  }
  // Give failure notices a moment to leave, so the other ranks learn why this one stopped.
  const auto deadline = Clock::now() + std::chrono::duration<double>(kNoticeFlushSeconds);
  for (Notice& n : outgoing_notices_) {
    try {
      while (n.op != nullptr && !p2p_->test(n.op, nullptr) && Clock::now() < deadline) p2p_->progress();
    } catch (const Error&) {
      // The peer is gone; nothing to tell it.
    }
    p2p_->free(n.op);
  }
  for (Notice& n : incoming_notices_) p2p_->free(n.op);
}

void Communicator::check_usable() const {
  if (aborted_.load()) fail(GW_ERR_ABORTED, "the communicator was aborted (gw_comm_abort)");
  // The failure's own status, so that every rank reports the cause (a mismatch, a dead peer).
  if (failed_status_ != GW_OK)
    fail(failed_status_, "the communicator failed and cannot start new operations (destroy it): " + failed_message_);
}

gw_request* Communicator::track(std::unique_ptr<gw_request> r) {
  r->comm = this;
  gw_request* raw = r.release();
  live_.insert(raw);
  active_.push_back(raw);
  return raw;
}

gw_request* Communicator::start_collective(const Signature& signature,
                                           const std::function<Task(Collective&)>& algorithm) {
  return start_collective_at(next_seq_++, signature, algorithm);
}

uint32_t Communicator::reserve_sequence(uint32_t n) {
  const uint32_t base = next_seq_;
  next_seq_ += n;
  return base;
}

gw_request* Communicator::start_collective_at(uint32_t seq, const Signature& signature,
                                              const std::function<Task(Collective&)>& algorithm) {
  check_usable();
  auto r = std::make_unique<gw_request>();
  r->collective = std::make_unique<Collective>(*p2p_, seq, signature, settings_.timeout_s);
  r->collective->start(algorithm(*r->collective));
  gw_request* raw = track(std::move(r));
  poll(raw);  // run up to the first wait: sends leave now
  return raw;
}

gw_request* Communicator::start_send(uint32_t peer, uint32_t tag, const void* data, uint64_t bytes) {
  check_usable();
  auto r = std::make_unique<gw_request>();
  r->peer = peer;
  r->expected_bytes = bytes;
  r->op = p2p_->send(peer, tags::kUser | tag, data, bytes);
  return track(std::move(r));
}

gw_request* Communicator::start_recv(uint32_t peer, uint32_t tag, void* data, uint64_t bytes) {
  check_usable();
  auto r = std::make_unique<gw_request>();
  r->peer = peer;
  r->is_recv = true;
  r->expected_bytes = bytes;
  r->op = p2p_->recv(peer, tags::kUser | tag, data, bytes);
  return track(std::move(r));
}

void Communicator::complete(gw_request* r, gw_status status, const std::string& error) {
  r->status = status;
  r->error = error;
  r->collective.reset();
  p2p_->free(r->op);
  r->op = nullptr;
  active_.remove(r);
}

// Returns true when the request ended.
bool Communicator::poll(gw_request* r) {
  if (r->status != GW_IN_PROGRESS) return true;
  if (r->collective) {
    try {
      if (!r->collective->poll()) return false;
    } catch (const Error& e) {
      fail_all(e.status(), e.what(), true, r->collective->seq());
      return true;
    }
    complete(r, GW_OK, "");
    return true;
  }
  try {
    uint64_t bytes = 0;
    if (!p2p_->test(r->op, &bytes)) return false;
    if (r->is_recv && bytes != r->expected_bytes)
      fail(GW_ERR_MISMATCH, "received " + std::to_string(bytes) + " bytes from rank " + std::to_string(r->peer) +
                                " into a receive of " + std::to_string(r->expected_bytes) +
                                " bytes; send and receive must have the same size and dtype");
  } catch (const Error& e) {
    complete(r, e.status(), e.what());
    return true;
  }
  complete(r, GW_OK, "");
  return true;
}

void Communicator::poll_notices() {
  for (uint32_t peer = 0; peer < incoming_notices_.size(); ++peer) {
    Notice& n = incoming_notices_[peer];
    if (n.op == nullptr) continue;
    uint64_t bytes = 0;
    bool arrived = false;
    try {
      arrived = p2p_->test(n.op, &bytes);
    } catch (const Error&) {
      // That peer is gone (or left normally); operations involving it fail on their own.
      p2p_->free(n.op);
      n.op = nullptr;
      continue;
    }
    if (!arrived) continue;
    p2p_->free(n.op);
    n.op = nullptr;
    // [status : i32][collective number : u32][text]
    int32_t status = GW_ERR_INTERNAL;
    uint32_t seq = 0;
    std::string text = "(no message)";
    if (bytes >= sizeof(status) + sizeof(seq)) {
      std::memcpy(&status, n.buffer.data(), sizeof(status));
      std::memcpy(&seq, n.buffer.data() + sizeof(status), sizeof(seq));
      text.assign(reinterpret_cast<const char*>(n.buffer.data()) + sizeof(status) + sizeof(seq),
                  bytes - sizeof(status) - sizeof(seq));
    }
    if (status >= 0) status = GW_ERR_INTERNAL;
    fail_all(gw_status(status), "rank " + std::to_string(peer) + " failed and reported: " + text, false, seq);
  }
}

void Communicator::fail_all(gw_status status, const std::string& message, bool notify, uint32_t from_seq) {
  if (failed_status_ == GW_OK) {
    failed_status_ = status;
    failed_message_ = message;
    if (notify && status != GW_ERR_ABORTED) {
      const int32_t code = status;
      const std::string text = message.substr(0, kNoticeBytes - sizeof(code) - sizeof(from_seq));
      for (uint32_t peer = 0; peer < size(); ++peer) {
        if (peer == rank()) continue;
        Notice n;
        n.buffer.resize(sizeof(code) + sizeof(from_seq) + text.size());
        std::memcpy(n.buffer.data(), &code, sizeof(code));
        std::memcpy(n.buffer.data() + sizeof(code), &from_seq, sizeof(from_seq));
        std::memcpy(n.buffer.data() + sizeof(code) + sizeof(from_seq), text.data(), text.size());
        try {
          n.op = p2p_->send(peer, tags::kControl, n.buffer.data(), n.buffer.size());
        } catch (const Error&) {
          continue;  // unreachable peer: it will learn from its own failures
        }
        outgoing_notices_.push_back(std::move(n));
      }
    }
  }
  const std::vector<gw_request*> active(active_.begin(), active_.end());
  for (gw_request* r : active)
    if (!r->collective || r->collective->seq() >= from_seq) complete(r, status, message);
}

bool Communicator::progress() {
  p2p_->progress();
  poll_notices();
  if (aborted_.load() && !active_.empty())
    fail_all(GW_ERR_ABORTED, "the communicator was aborted (gw_comm_abort)", false);
  bool any = false;
  const std::vector<gw_request*> active(active_.begin(), active_.end());
  for (gw_request* r : active)
    if (r->status == GW_IN_PROGRESS && poll(r)) any = true;  // fail_all may have ended some already
  return any;
}

gw_status Communicator::test(gw_request* r) {
  if (r->status == GW_IN_PROGRESS) progress();
  return r->status;
}

gw_status Communicator::wait(gw_request* r, double timeout_s) {
  const auto start = Clock::now();
  auto last_progress = start;
  while (r->status == GW_IN_PROGRESS) {
    if (progress()) {
      last_progress = Clock::now();
      continue;
    }
    if (r->status != GW_IN_PROGRESS) break;
    const auto now = Clock::now();
    if (timeout_s >= 0 && std::chrono::duration<double>(now - start).count() > timeout_s) return GW_ERR_TIMEOUT;
    // Spin a little (a message is usually microseconds away), then let other ranks on this core run.
    if (now - last_progress > std::chrono::microseconds(50)) sched_yield();
  }
  return r->status;
}

void Communicator::free(gw_request* r) {
  if (r->status == GW_IN_PROGRESS && r->collective) {
    // The other ranks are inside this collective; abandoning it breaks the sequence for everyone.
    fail_all(GW_ERR_STATE, "rank " + std::to_string(rank()) + " freed collective #" +
                               std::to_string(r->collective->seq()) + " before it completed",
             true, r->collective->seq());
  }
  if (r->status == GW_IN_PROGRESS) complete(r, GW_ERR_ABORTED, "freed before completion");
  live_.erase(r);
  delete r;
}

void Communicator::abort() noexcept {
  aborted_.store(true);
  p2p_->abort();
}

}  // namespace gw::comm
