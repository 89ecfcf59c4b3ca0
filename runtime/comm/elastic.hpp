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
  // Joining (GW_ELASTIC_PORT, set by `gradwire run --elastic`): the contact joiners connect to, at the
  // root address and that port, held by the current rank 0; absent without it.
  std::string contact_host;
  int contact_port = -1;
  std::unique_ptr<bootstrap::MembershipListener> contact;
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

// At a step boundary of every member: rank 0 takes the join requests waiting at the contact and tells
// the others how many (a broadcast); with some, the members and the joiners agree on the new membership
// (joiners take the ranks after the members') and build the new communicator. Returns the number
// admitted; 0 leaves everything as it was.
uint32_t admit_joiners(gw_comm& handle, const Runtime& runtime, uint64_t completed_steps);

// After creation, in elastic mode: opens this rank's listener and gathers every member's address over
// the communicator (collective).
std::shared_ptr<Membership> open_membership(Communicator& comm, const Runtime& runtime, const std::string& root_address,
                                            int root_port);

struct Rebuilt {
  uint64_t steps = 0;  // the step every member continues from
};

// The communicator of `handle` failed with (status, message): agrees with the survivors on the new
// membership (the step to continue from is the least of the members' completed_steps), replaces
// handle.impl by a new communicator among them, and returns the agreed step. The old communicator must
// have no live request. When the quorum is lost (or no leader answers), throws `status` with `message`
// and the verdict appended; handle.impl is then the failed communicator, as without elastic mode.
Rebuilt rebuild(gw_comm& handle, const Runtime& runtime, uint64_t completed_steps, gw_status status,
                const std::string& message);

}  // namespace gw::comm
