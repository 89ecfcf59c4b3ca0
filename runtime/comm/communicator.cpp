#include "comm/communicator.hpp"

#include <sched.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <thread>

#include "core/bytes.hpp"
#include "core/error.hpp"
#include "core/strings.hpp"

namespace gw::comm {
namespace {

constexpr uint64_t kNoticeBytes = 4096;
// How long a rank that failed waits for the other ranks to acknowledge its failure notices (a peer that
// is gone is not waited for), and how long gw_comm_destroy waits for what is still unacknowledged.
constexpr double kNoticeFlushSeconds = 2.0;
// How long a rank whose collective passed its deadline waits for the other ranks' stuck notices (at
// most timeout_s) before it reports the timeout.
constexpr double kStuckGraceSeconds = 2.0;
// How long a rank that sees a transport error (a peer that exited or crashed) keeps receiving before it
// reports it: a peer that failed first sent a notice saying why, and its exit may overtake the notice.
constexpr double kTransportGraceSeconds = 1.0;

// A notice is [code : i32][collective number : u32][body], little-endian. code < 0: a failure with that
// gw_status, the body its message; kStuckNotice: the sender's collective of that number passed its
// deadline, the body its Signature (kSignatureBytes, below), not a failure; kAckNotice: the sender
// received this rank's failure notice (empty body).
constexpr int32_t kStuckNotice = 1;
constexpr int32_t kAckNotice = 2;
constexpr size_t kSignatureBytes = 20;

}  // namespace

std::vector<unsigned char> encode_notice(int32_t code, uint32_t seq, const std::string& body) {
  bytes::ByteWriter w;
  w.i32(code);
  w.u32(seq);
  w.raw(body.data(), body.size());
  return w.take();
}

bool decode_notice(const unsigned char* data, uint64_t size, int32_t* code, uint32_t* seq, std::string* body) {
  if (size < kNoticeHeadBytes) return false;
  *code = int32_t(uint32_t(bytes::get_le(data, 4)));
  *seq = uint32_t(bytes::get_le(data + 4, 4));
  body->assign(reinterpret_cast<const char*>(data) + kNoticeHeadBytes, size - kNoticeHeadBytes);
  return true;
}

// [kind : u8][op : u8][dtype : u8][reserved : u8][root : u32][codec id : u32][count : u64]
std::string encode_signature(const Signature& s) {
  std::string out(kSignatureBytes, '\0');
  auto* p = reinterpret_cast<unsigned char*>(out.data());
  p[0] = uint8_t(s.kind);
  p[1] = uint8_t(s.op);
  p[2] = uint8_t(s.dtype);
  bytes::put_le(p + 4, s.root, 4);
  bytes::put_le(p + 8, s.codec_id, 4);
  bytes::put_le(p + 12, s.count, 8);
  return out;
}

bool decode_signature(const unsigned char* p, uint64_t size, Signature* s) {
  if (size != kSignatureBytes) return false;
  s->kind = CollectiveKind(p[0]);
  s->op = gw_reduce_op(p[1]);
  s->dtype = gw_dtype(p[2]);
  s->root = uint32_t(bytes::get_le(p + 4, 4));
  s->codec_id = uint32_t(bytes::get_le(p + 8, 4));
  s->count = bytes::get_le(p + 12, 8);
  return true;
}

namespace {

using Clock = std::chrono::steady_clock;

}  // namespace

Communicator::Communicator(std::unique_ptr<PointToPoint> p2p, CommSettings settings)
    : p2p_(std::move(p2p)), settings_(settings) {
  incoming_notices_.resize(size());
  awaiting_ack_.assign(size(), false);
  peer_gone_.assign(size(), false);
  for (uint32_t peer = 0; peer < size(); ++peer)
    if (peer != rank()) post_notice_receive(peer);
}

Communicator::~Communicator() {
  for (gw_request* r : live_) {
    r->collective.reset();
    p2p_->free(r->op);
    delete r;
  }
  live_.clear();
  active_.clear();  // a notice arriving during the flush below must find no request to end
  // Failure notices not acknowledged yet: give them a moment, so the other ranks learn why this one
  // stopped. Then release what is still in flight.
  flush_notices(kNoticeFlushSeconds);
  for (Notice& n : outgoing_notices_) p2p_->free(n.op);
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
  r->collective = std::make_unique<Collective>(*p2p_, seq, signature, settings_.timeout_s, settings_.timeout_source);
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
      // A peer that passed its deadline in this collective with another call: a mismatch, whether or not
      // this rank's own deadline has passed (it may have started later).
      compare_with_stuck_peers(*r->collective);
      if (!r->collective->poll()) {
        if (r->collective->overdue()) handle_overdue(*r);
        return false;
      }
    } catch (const Error& e) {
      gw_status status = e.status();
      std::string message = e.what();
      if (status != GW_ERR_MISMATCH) {
        // A peer that gave up (and whose exit now fails the transport) may have told us first why.
        try {
          compare_with_stuck_peers(*r->collective);
        } catch (const Error& m) {
          status = m.status();
          message = m.what();
        }
      }
      if (status == GW_ERR_TRANSPORT && await_failure_notice(kTransportGraceSeconds) && r->status != GW_IN_PROGRESS)
        return true;  // a peer's failure notice ended this collective with the root cause
      fail_all(status, message, true, r->collective->seq());
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

void Communicator::post_notice_receive(uint32_t peer) {
  Notice& n = incoming_notices_[peer];
  n.peer = peer;
  n.buffer.resize(kNoticeBytes);
  try {
    n.op = p2p_->recv(peer, tags::kControl, n.buffer.data(), n.buffer.size());
  } catch (const Error&) {
    n.op = nullptr;  // the transport failed; operations involving that peer fail on their own
    mark_gone(peer);
  }
}

void Communicator::mark_gone(uint32_t peer) {
  peer_gone_[peer] = true;
  awaiting_ack_[peer] = false;
}

void Communicator::poll_notices() {
  // Notices this rank sent that have left: release them.
  std::erase_if(outgoing_notices_, [this](Notice& n) {
    bool done = true;
    try {
      done = p2p_->test(n.op, nullptr);
    } catch (const Error&) {
      mark_gone(n.peer);  // nothing more to send it
    }
    if (done) p2p_->free(n.op);
    return done;
  });
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
      mark_gone(peer);
      continue;
    }
    if (!arrived) continue;
    p2p_->free(n.op);
    n.op = nullptr;
    int32_t code = GW_ERR_INTERNAL;
    uint32_t seq = 0;
    std::string text;
    if (!decode_notice(n.buffer.data(), bytes, &code, &seq, &text)) {
      code = GW_ERR_CORRUPT;
      text = "(a " + std::to_string(bytes) + "-byte notice, shorter than its header)";
    }
    // Listen on before acting: the same peer may send an acknowledgement or more notices.
    post_notice_receive(peer);
    if (code == kAckNotice) {
      awaiting_ack_[peer] = false;
      continue;
    }
    if (code == kStuckNotice) {
      // Not a failure: remember where that peer is stuck (handle_overdue compares).
      Signature theirs;
      if (decode_signature(reinterpret_cast<const unsigned char*>(text.data()), text.size(), &theirs))
        stuck_peers_[seq][peer] = theirs;
      continue;
    }
    if (code >= 0) code = GW_ERR_INTERNAL;  // an unknown kind of notice from a newer peer: still a failure
    // Tell the peer its notice arrived, so it can stop waiting and exit.
    send_notice(peer, kAckNotice, seq, "");
    if (text.empty()) text = "(no message)";
    fail_all(gw_status(code), "rank " + std::to_string(peer) + " failed and reported: " + text, false, seq);
  }
}

void Communicator::send_notice(uint32_t peer, int32_t code, uint32_t seq, const std::string& body) {
  Notice n;
  n.peer = peer;
  n.buffer = encode_notice(code, seq, body);
  try {
    n.op = p2p_->send(peer, tags::kControl, n.buffer.data(), n.buffer.size());
  } catch (const Error&) {
    mark_gone(peer);  // unreachable peer: it will learn from its own failures
    return;
  }
  outgoing_notices_.push_back(std::move(n));
}

bool Communicator::progress_notices_until(double seconds, const std::function<bool()>& done) {
  const auto deadline = Clock::now() + std::chrono::duration<double>(seconds);
  while (!done() && Clock::now() < deadline) {
    try {
      p2p_->progress();
    } catch (const Error&) {
      break;  // the transport itself failed: nothing more can move
    }
    poll_notices();
    if (!done()) sched_yield();
  }
  return done();
}

bool Communicator::flush_notices(double seconds) {
  return progress_notices_until(
      seconds, [this] { return std::find(awaiting_ack_.begin(), awaiting_ack_.end(), true) == awaiting_ack_.end(); });
}

bool Communicator::await_failure_notice(double seconds) {
  return progress_notices_until(seconds, [this] { return failed_status_ != GW_OK; });
}

size_t Communicator::compare_with_stuck_peers(const Collective& c) const {
  const auto it = stuck_peers_.find(c.seq());
  if (it == stuck_peers_.end()) return 0;
  for (const auto& [peer, theirs] : it->second) {
    const std::vector<std::string> diffs = signature_differences(theirs, c.signature());
    if (!diffs.empty())
      fail(GW_ERR_MISMATCH, mismatch_message(c.seq(), peer, theirs, rank(), c.signature(), diffs) +
                                " (Found through stuck notices: rank " + std::to_string(peer) +
                                " waited its timeout (" + settings_.timeout_source + ") in this collective because the calls exchange "
                                "different messages, e.g. one on the ring algorithm and the other on recursive "
                                "doubling.)");
  }
  return it->second.size();
}

void Communicator::handle_overdue(gw_request& r) {
  const Collective& c = *r.collective;
  if (!r.stuck_notified) {
    r.stuck_notified = true;
    const std::string body = encode_signature(c.signature());
    for (uint32_t peer = 0; peer < size(); ++peer)
      if (peer != rank()) send_notice(peer, kStuckNotice, c.seq(), body);
  }
  const size_t answered = compare_with_stuck_peers(c);
  // Every other rank is stuck in the same call: nothing more to learn.
  const double grace = std::min(c.timeout_s(), kStuckGraceSeconds);
  if (answered + 1 >= size() || c.waited() > c.timeout_s() + grace) c.fail_timeout(stuck_report(c));
}

std::string Communicator::stuck_report(const Collective& c) const {
  std::vector<uint32_t> same, silent;
  std::string elsewhere;
  const auto here = stuck_peers_.find(c.seq());
  for (uint32_t peer = 0; peer < size(); ++peer) {
    if (peer == rank()) continue;
    if (here != stuck_peers_.end() && here->second.count(peer)) {
      same.push_back(peer);
      continue;
    }
    // The latest other collective that peer said it is stuck in.
    bool found = false;
    for (auto it = stuck_peers_.rbegin(); it != stuck_peers_.rend() && !found; ++it) {
      const auto p = it->second.find(peer);
      if (p == it->second.end()) continue;
      elsewhere += "; rank " + std::to_string(peer) + " is stuck in collective #" + std::to_string(it->first) + " " +
                   p->second.describe();
      found = true;
    }
    if (!found) silent.push_back(peer);
  }
  std::string text = ". After the timeout the ranks exchanged stuck notices";
  if (!same.empty()) text += "; " + gw::rank_list(same) + (same.size() == 1 ? " is" : " are") + " stuck in this collective too, with the same call";
  text += elsewhere;
  if (!silent.empty())
    text += "; no stuck notice from " + gw::rank_list(silent) + " within " +
            std::to_string(int(std::min(c.timeout_s(), kStuckGraceSeconds) + 0.5)) +
            " s (busy outside gradwire, not yet in this collective, or gone)";
  return text;
}

void Communicator::fail_all(gw_status status, const std::string& message, bool notify, uint32_t from_seq) {
  if (failed_status_ == GW_OK) {
    failed_status_ = status;
    failed_message_ = message;
    if (notify && status != GW_ERR_ABORTED) {
      const std::string text = message.substr(0, kNoticeBytes - kNoticeHeadBytes);
      for (uint32_t peer = 0; peer < size(); ++peer) {
        if (peer == rank() || peer_gone_[peer]) continue;
        awaiting_ack_[peer] = true;
        send_notice(peer, status, from_seq, text);
      }
    }
  }
  // The application usually exits on this error: deliver the notices first (each live peer acknowledges
  // its own), or their exit could reach the other ranks before the reason does. The failed collectives
  // are still alive meanwhile: a peer that already took one of their messages finishes moving it while
  // the buffers are valid, and a peer that acknowledged has failed too and will take no more.
  if (notify && !flushing_) {
    flushing_ = true;
    flush_notices(kNoticeFlushSeconds);
    flushing_ = false;
  }
  const std::vector<gw_request*> active(active_.begin(), active_.end());
  for (gw_request* r : active)
    if (r->status == GW_IN_PROGRESS && (!r->collective || r->collective->seq() >= from_seq))
      complete(r, status, message);
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
  const auto spin = std::chrono::microseconds(settings_.wait_spin_us);
  const auto longest_nap = std::chrono::microseconds(settings_.wait_sleep_us);
  constexpr auto kFirstNap = std::chrono::microseconds(10);
  auto nap = std::min<std::chrono::microseconds>(kFirstNap, longest_nap);
  auto last_progress = start;
  while (r->status == GW_IN_PROGRESS) {
    if (progress()) {
      last_progress = Clock::now();
      nap = std::min<std::chrono::microseconds>(kFirstNap, longest_nap);
      continue;
    }
    if (r->status != GW_IN_PROGRESS) break;
    const auto now = Clock::now();
    if (timeout_s >= 0 && std::chrono::duration<double>(now - start).count() > timeout_s) return GW_ERR_TIMEOUT;
    // Spin a little (a message is usually microseconds away), then let other ranks on this core run: by
    // yielding (the rank stays runnable and takes its turns on the core), or, with [runtime]
    // wait_sleep_us, by sleeping, 10 us and twice as long each time nothing moved, up to wait_sleep_us
    // (oversubscribed ranks: a rank that only yields keeps a share of the core the rank it waits for needs).
    if (now - last_progress <= spin) continue;
    if (longest_nap.count() == 0) {
      sched_yield();
      continue;
    }
    std::this_thread::sleep_for(nap);
    nap = std::min(nap * 2, longest_nap);
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
  if (device_) device_->abort();
}

}  // namespace gw::comm
