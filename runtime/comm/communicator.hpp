// A communicator: a group of ranks over one transport, the collectives started on it (each with its
// sequence number), the application's point-to-point requests, and the failure state they share.
//
// Progress happens inside gw_request_test/wait (and the blocking calls): every call drives every active
// request of the communicator. A collective that fails (mismatch, timeout, dead peer) fails the whole
// communicator — its collective sequence is broken — and sends a failure notice to every other rank, so
// ranks that were waiting on someone else end with the same error instead of a timeout. A collective
// whose wait passes [runtime] timeout_s first sends every other rank a stuck notice (its collective
// number and signature) and waits a short grace period for theirs: a rank stuck in the same collective
// with another signature (count, dtype, ... that chose another algorithm, so no header ever arrived)
// turns the timeout into GW_ERR_MISMATCH naming the difference.
#pragma once

#include <gradwire/types.h>

#include <atomic>
#include <functional>
#include <list>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "group/collective.hpp"
#include "group/p2p.hpp"
#include "group/topology.hpp"

namespace gw::comm {
class Communicator;
}

// The application's handle for one nonblocking operation.
struct gw_request {
  gw::comm::Communicator* comm = nullptr;
  std::unique_ptr<gw::comm::Collective> collective;  // a collective in flight
  gw::comm::PointToPoint::Op* op = nullptr;          // an application send/recv in flight
  uint32_t peer = 0;
  uint64_t expected_bytes = 0;
  bool is_recv = false;
  bool stuck_notified = false;  // the collective passed its deadline and told the other ranks
  gw_status status = GW_IN_PROGRESS;
  std::string error;
};

namespace gw::comm {

// Notices between the communicators of the ranks (failure, stuck, acknowledgement), little-endian:
// [code : i32][collective number : u32][body]. decode_notice is false for fewer than kNoticeHeadBytes.
constexpr uint64_t kNoticeHeadBytes = 8;
std::vector<unsigned char> encode_notice(int32_t code, uint32_t seq, const std::string& body);
bool decode_notice(const unsigned char* data, uint64_t size, int32_t* code, uint32_t* seq, std::string* body);
// A stuck notice's body: the call the sender is stuck in (20 bytes); decode is false for another size.
std::string encode_signature(const Signature& s);
bool decode_signature(const unsigned char* p, uint64_t size, Signature* s);

struct CommSettings {
  double timeout_s = 300;                     // [runtime] timeout_s or gw_comm_options.timeout_s
  std::string timeout_source = "[runtime] timeout_s";  // which of the two, for the error messages
  uint64_t ring_threshold_bytes = 64 * 1024;  // allreduce: recursive doubling below, ring from here
  uint64_t pipeline_chunk_bytes = 1 << 20;    // compressed allreduce: f32 bytes per pipelined piece
  uint64_t wait_spin_us = 50;                 // [runtime] wait_spin_us, "auto" resolved at creation
  uint64_t wait_sleep_us = 0;                 // [runtime] wait_sleep_us (0: yield), "auto" resolved at creation
  std::string two_level = "auto";             // [collectives] two_level: auto, on, off
  std::string two_level_cross = "auto";       // [collectives] two_level_cross: auto, gather, scatter
  uint32_t ranks_here = 1;                    // ranks of this communicator on this host
  uint32_t cpus = 1;                          // CPUs this process may use
};

class Communicator {
 public:
  Communicator(std::unique_ptr<PointToPoint> p2p, CommSettings settings);
  ~Communicator();
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;

  uint32_t rank() const { return p2p_->rank(); }
  uint32_t size() const { return p2p_->size(); }
  const CommSettings& settings() const { return settings_; }
  PointToPoint& p2p() { return *p2p_; }
  // The transport for device tensors ([transport] device), or nullptr: native collectives on CUDA memory
  // go to it (comm/native.hpp). Set at creation.
  PointToPoint* device_transport() { return device_.get(); }
  void set_device_transport(std::unique_ptr<PointToPoint> t) { device_ = std::move(t); }
  // Which ranks share a node (gathered at creation); the two-level collectives read it.
  const Topology& topology() const { return topology_; }
  void set_topology(Topology t) { topology_ = std::move(t); }

  // Starts a collective: `algorithm` builds the coroutine over the Collective the communicator creates.
  gw_request* start_collective(const Signature& signature, const std::function<Task(Collective&)>& algorithm);
  // Collectives whose start order may differ between ranks (the synchronizer's buckets, started as each
  // becomes ready): reserve `n` sequence numbers at a point every rank passes in the same order, then
  // start each collective at its own number base + i.
  uint32_t reserve_sequence(uint32_t n);
  gw_request* start_collective_at(uint32_t seq, const Signature& signature,
                                  const std::function<Task(Collective&)>& algorithm);
  gw_request* start_send(uint32_t peer, uint32_t tag, const void* data, uint64_t bytes);
  gw_request* start_recv(uint32_t peer, uint32_t tag, void* data, uint64_t bytes);

  // Drives every active request once. Returns true when any of them completed.
  bool progress();
  gw_status test(gw_request* request);
  // Waits up to timeout_s (< 0: until the request ends; its own deadlines still apply).
  gw_status wait(gw_request* request, double timeout_s);
  void free(gw_request* request);
  // Fails every pending and future operation with GW_ERR_ABORTED. thread: any.
  void abort() noexcept;

  // Live requests; destroy refuses while there are any.
  size_t live_requests() const { return live_.size(); }

 private:
  void check_usable() const;
  gw_request* track(std::unique_ptr<gw_request> r);
  void complete(gw_request* r, gw_status status, const std::string& error);
  bool poll(gw_request* r);
  void poll_notices();
  // A collective whose wait passed timeout_s: sends the stuck notices (once), compares the other ranks'
  // stuck notices for the same collective (GW_ERR_MISMATCH on a difference), and after the grace period
  // throws GW_ERR_TIMEOUT saying which ranks were stuck where.
  void handle_overdue(gw_request& r);
  // GW_ERR_MISMATCH when a peer's stuck notice for c's collective number names another call; else how
  // many peers said they are stuck in it.
  size_t compare_with_stuck_peers(const Collective& c) const;
  std::string stuck_report(const Collective& c) const;
  // Sends [code][seq][body] to `peer` on the control tag; an unreachable peer is skipped.
  void send_notice(uint32_t peer, int32_t code, uint32_t seq, const std::string& body);
  void post_notice_receive(uint32_t peer);
  // A peer whose notices cannot be sent or received any more: nothing is awaited from it.
  void mark_gone(uint32_t peer);
  // Drives the transport until every failure notice this rank sent was acknowledged by its peer (or the
  // peer is gone), at most `seconds`. True when nothing is left unacknowledged.
  bool flush_notices(double seconds);
  // After a transport error: receives for at most `seconds` until a peer's failure notice fails the
  // communicator. True when one did.
  bool await_failure_notice(double seconds);
  // Drives the transport and the notices until done() or `seconds` passed (or the transport failed);
  // returns done().
  bool progress_notices_until(double seconds, const std::function<bool()>& done);
  // Marks the communicator failed (no new operations), ends the active collectives numbered `from_seq`
  // and later and every point-to-point request with (status, message), and with notify tells every
  // other rank. Earlier collectives run on: the other ranks may have completed them already.
  void fail_all(gw_status status, const std::string& message, bool notify, uint32_t from_seq = 0);

  std::unique_ptr<PointToPoint> p2p_;
  std::unique_ptr<PointToPoint> device_;
  CommSettings settings_;
  Topology topology_;
  uint32_t next_seq_ = 0;
  std::set<gw_request*> live_;
  std::list<gw_request*> active_;
  std::atomic<bool> aborted_{false};
  gw_status failed_status_ = GW_OK;
  std::string failed_message_;

  struct Notice {
    uint32_t peer = 0;
    PointToPoint::Op* op = nullptr;
    std::vector<unsigned char> buffer;
  };
  std::vector<Notice> incoming_notices_;  // one posted receive per peer
  std::vector<Notice> outgoing_notices_;
  std::vector<bool> awaiting_ack_;  // by peer: a failure notice sent, its acknowledgement not yet here
  std::vector<bool> peer_gone_;     // by peer: its notices cannot be sent or received any more
  bool flushing_ = false;
  // The stuck notices received: collective number -> peer -> that peer's signature.
  std::map<uint32_t, std::map<uint32_t, Signature>> stuck_peers_;
};

}  // namespace gw::comm

// The C ABI's handle (runtime/capi/comm.cpp); the synchronizer reaches the communicator through it.
namespace gw::comm {
struct Membership;
}
struct gw_comm {
  std::unique_ptr<gw::comm::Communicator> impl;
  // Elastic mode ([elastic] enabled): the membership listener and epoch (comm/elastic.hpp); null otherwise.
  std::shared_ptr<gw::comm::Membership> elastic;
};
