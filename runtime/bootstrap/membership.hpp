// The membership agreement of elastic mode (docs/elastic.md), over plain TCP: no transport of the failed
// communicator is used. Every rank of an elastic communicator holds a listener from its creation; after
// a failure the survivors connect to the leader (the lowest old rank none of them knows dead), send a
// proposal, and receive the verdict: the new members, the step to continue from, or the lost quorum.
// Over the same connections the leader then relays the records of the new communicator (allgather).
// The leader also sends every rank it waits for a probe of its own epoch: a member that moved on to a
// later epoch answers it with the refusal, so a leader that was itself declared dead learns it.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace gw::bootstrap {

// A TCP listener on every interface, port chosen by the kernel; address() is "ip:port" with the ip this
// host uses on its route to `route_host` (the job's root address).
class MembershipListener {
 public:
  MembershipListener(const std::string& route_host, int route_port);
  // The join contact: a listener at exactly host:port (SO_REUSEADDR), held by the current rank 0.
  MembershipListener(const std::string& host, int port, bool fixed);
  ~MembershipListener();
  MembershipListener(const MembershipListener&) = delete;
  MembershipListener& operator=(const MembershipListener&) = delete;
  const std::string& address() const { return address_; }
  int fd() const { return fd_; }
  // Between agreements (this rank at membership epoch `epoch`): answers every proposal or probe of an
  // earlier epoch waiting on the listener (a rank that was declared dead and came back) with a refusal
  // naming `epoch`. A proposal of `epoch` itself (a member whose step failed before this rank's did) is
  // kept for the agreement this rank will lead; a probe of `epoch` is closed. Nonblocking when none waits.
  void refuse_waiting(uint64_t epoch);

 private:
  friend class MembershipSession;
  int fd_ = -1;
  std::string address_;
  std::vector<std::pair<int, std::string>> pending_;  // kept proposals: connection, message
};

// True when nothing listens at a membership listener's `address` any more (connections are refused): its
// process is gone. A live, stopped or unreachable process is not.
bool listener_gone(const std::string& address);

struct Proposal {
  bool join = false;             // a new process asking to join (epoch, old_rank, steps unused)
  bool probe = false;            // a leader asking whether the members moved on past `epoch` (steps unused)
  std::string address;           // join: the joiner's own membership listener
  uint64_t epoch = 0;            // the membership epoch the sender leaves
  uint32_t old_rank = 0;         // its rank in that membership
  uint64_t completed_steps = 0;  // steps it completed
  std::vector<uint32_t> dead;    // old ranks it knows dead
};

struct Verdict {
  int32_t status = 0;             // 0: continue; else the quorum is lost (or the sender was refused)
  std::string message;            // why, when status != 0
  uint64_t epoch = 0;             // the new epoch
  uint64_t steps = 0;             // the step every member continues from
  std::vector<uint32_t> members;  // old ranks, increasing, then joiners (old_size + j): index = new rank
  uint32_t your_rank = 0;         // the recipient's new rank
};

// A join request read from the join contact, waiting for the next step boundary.
// A joiner's connection owns its descriptor: a joiner accepted by a step that then failed (its
// connection dropped with the step's state) sees the connection close and asks again, instead of
// waiting for an answer from a descriptor nobody holds any more.
struct Joiner {
  int fd = -1;
  Proposal proposal;
  Joiner() = default;
  Joiner(Joiner&& other) noexcept;
  Joiner& operator=(Joiner&& other) noexcept;
  Joiner(const Joiner&) = delete;
  Joiner& operator=(const Joiner&) = delete;
  ~Joiner();
  int release() noexcept;  // the descriptor, no longer closed by this Joiner
};
// Accepts every connection waiting on the join contact and reads its request (nonblocking when none).
std::vector<Joiner> accept_joiners(MembershipListener& contact);

class MembershipSession {
 public:
  // The leader: waits on `listener` until every old rank arrived or was reported dead, or until
  // `wait_s` passed, decides and tells everyone. old_size: ranks of the last membership; addresses: their
  // listeners, probed meanwhile: a rank whose listener refuses connections has no process any more, and a
  // rank that answers the leader's probe with a refusal has moved on to a later epoch without it. Then the
  // verdict is that refusal (status GW_ERR_STATE), for the leader and whoever followed it.
  // `joiners` (their connections taken over) are admitted after the members.
  static std::unique_ptr<MembershipSession> lead(MembershipListener& listener, uint32_t old_size,
                                                 const Proposal& mine, uint32_t min_ranks, double wait_s,
                                                 const std::vector<std::string>& addresses,
                                                 std::vector<Joiner> joiners = {});
  // A member: connects to the leader at `address` and waits at most `wait_s` for the verdict. Throws
  // gw::Error GW_ERR_TRANSPORT when the leader cannot be reached or does not answer (take it as dead).
  static std::unique_ptr<MembershipSession> follow(const std::string& address, const Proposal& mine, double wait_s);
  // A joiner: asks at every candidate of the join contact ("ip:port"; only the current rank 0 listens at
  // its own), retrying those where nobody listens yet, and waits for its admission at the members' next
  // step boundary, at most wait_s. The first verdict that comes back is the answer.
  static std::unique_ptr<MembershipSession> join(const std::vector<std::string>& contacts, const Proposal& mine,
                                                 double wait_s);
  ~MembershipSession();

  const Verdict& verdict() const { return verdict_; }
  // Every member's blob, by new rank (every member calls it, in the same order, with `bytes` each).
  std::vector<std::string> allgather(const std::string& mine, double wait_s);

 private:
  MembershipSession() = default;
  bool leader_ = false;
  uint32_t my_index_ = 0;
  std::vector<int> fds_;  // leader: by new rank (-1 at its own index); member: one, to the leader
  Verdict verdict_;
};

}  // namespace gw::bootstrap
