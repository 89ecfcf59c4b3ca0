// Elastic membership (docs/elastic.md): what an elastic communicator keeps to survive a failure (its
// membership listener, every member's listener address, the epoch) and the rebuild among the survivors.
#pragma once

#include <gradwire/gradwire.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "bootstrap/membership.hpp"
#include "comm/communicator.hpp"

namespace gw {
class Runtime;
}

namespace gw::comm {

struct Membership {
  std::unique_ptr<bootstrap::MembershipListener> listener;
  // Joining (GW_ELASTIC_PORT, set by `gradwire run --elastic`): the contact joiners connect to, held by
  // the current rank 0 at its own address (that of its membership listener) and that port; absent
  // without it. A joiner asks at every candidate: GW_ELASTIC_HOSTS (every rank's host, as the launcher
  // knows them), else the root address.
  std::string contact_host;
  int contact_port = -1;
  std::vector<std::string> contacts;  // the candidates, "ip:port"
  std::unique_ptr<bootstrap::MembershipListener> contact;
  bool contact_lost = false;  // rank 0 could not listen at the contact (warned once; tried again every step)
  bool joined = false;       // this process was admitted by joining: its synchronizer receives the state
  uint64_t joined_steps = 0; // the members' completed steps when it was admitted
  std::vector<std::string> addresses;  // every member's listener, by current rank
  uint64_t epoch = 0;
  uint32_t min_ranks = 1;
  double timeout_s = 300;
  std::string timeout_source;
};

// Whether the runtime's configuration asks for elastic mode.
bool elastic_enabled(const Runtime& runtime);

// gw_comm_create of a process that joins a running job (elastic mode, GW_ELASTIC_JOIN=1): asks at the
// join contact, waits for its admission at the members' next step boundary, and builds the new
// communicator with them.
std::unique_ptr<Communicator> join_running_job(const Runtime& runtime, const gw_comm_options& options,
                                               std::shared_ptr<Membership>* membership);

// The per-step message of elastic mode, at a step boundary of every member: rank 0 takes the join
// requests waiting at the contact (into *joiners) and tells the others how many. It is an allreduce
// (MAX of rank 0's count and 0 elsewhere), which completes at no member before every member entered it:
// so no member runs more than one step ahead of another, which the synchronizer's two snapshots cover.
// Sent at every step when a join contact exists, else only at a step that runs no collective of its own
// (`step_exchanges` false: DiLoCo's and local_sgd's inner steps, accumulate's micro-steps); a step that
// runs one holds the members together already. Returns the number of joiners.
uint64_t announce_joiners(gw_comm& handle, const Runtime& runtime, bool step_exchanges,
                          std::vector<bootstrap::Joiner>* joiners);

// After creation, in elastic mode: opens this rank's listener and gathers every member's address over
// the communicator (collective).
std::shared_ptr<Membership> open_membership(Communicator& comm, const Runtime& runtime, const std::string& root_address,
                                            int root_port);

struct Agreed {
  uint64_t steps = 0;    // the step every member continues from
  uint32_t joiners = 0;  // admitted: the ranks after the members'
};

// After a failure (`status`, `message`), or at a step boundary with joiners announced (rank 0 passes
// them): agrees with the others on the new membership (the step to continue from is the least of the
// members' completed_steps), replaces handle.impl by a new communicator among the members and the
// joiners, and returns what was agreed. The old communicator must have no live request. When the quorum
// is lost (or no leader answers), throws `status` with `message` and the verdict appended; handle.impl is
// then the old communicator, as without elastic mode. A rank declared dead earlier gets GW_ERR_STATE.
Agreed agree(gw_comm& handle, const Runtime& runtime, uint64_t completed_steps, gw_status status,
             const std::string& message, std::vector<bootstrap::Joiner> joiners = {});

}  // namespace gw::comm
