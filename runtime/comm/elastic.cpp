#include "comm/elastic.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <set>

#include "collectives/algorithms.hpp"
#include "bootstrap/launch_env.hpp"
#include "comm/allreduce_start.hpp"
#include "comm/create.hpp"
#include "core/error.hpp"
#include "instance/runtime.hpp"

namespace gw::comm {
namespace {

constexpr uint64_t kAddressBytes = 64;

struct Relay {
  bootstrap::MembershipSession* session;
  double wait_s;
};

// gw_comm_options.allgather of the rebuilt communicator: the records go through the agreement's leader.
gw_status relay_allgather(void* user, const void* in, uint64_t bytes, void* out) {
  auto* r = static_cast<Relay*>(user);
  try {
    const auto all = r->session->allgather(std::string(static_cast<const char*>(in), bytes), r->wait_s);
    for (size_t i = 0; i < all.size(); ++i) {
      if (all[i].size() != bytes) return GW_ERR_CORRUPT;
      std::memcpy(static_cast<char*>(out) + i * bytes, all[i].data(), bytes);
    }
    return GW_OK;
  } catch (const Error& e) {
    return e.status();
  }
}

// The contact belongs to the current rank 0 (the process that is rank 0 of the current membership).
// `gradwire run --elastic` holds the port for the whole job, so binding it fails only where nothing
// reserved it (GW_ELASTIC_PORT set by hand) and another socket took it: rank 0 tries again at every step
// boundary (announce_joiners) and warns once.
void hold_contact(Membership& m, const Runtime& runtime, uint32_t rank) {
  if (m.contact_port <= 0 || rank != 0) {
    m.contact.reset();
    return;
  }
  if (m.contact) return;
  try {
    m.contact = std::make_unique<bootstrap::MembershipListener>(m.contact_host, m.contact_port, true);
    if (m.contact_lost) runtime.logger().warn("elastic", "listening for joiners at " + m.contact->address() + " again");
    m.contact_lost = false;
  } catch (const Error& e) {
    if (!m.contact_lost)
      runtime.logger().warn("elastic", std::string(e.what()) +
                                           "; no process can join this job until it can (tried again at every step)");
    m.contact_lost = true;
  }
}

// GW_ELASTIC_PORT (and GW_ELASTIC_HOSTS): where this process listens for joiners while it is rank 0 (its
// own address, the one its membership listener publishes), and where a joiner asks. Every rank 0 of
// the job's life has its own address in the cluster of namespaces, or on hosts of their own, so the
// contact moves with rank 0 and a joiner tries every host a rank 0 can be on.
void read_contact(Membership& m, const std::string& root_address) {
  const char* port = std::getenv("GW_ELASTIC_PORT");
  if (!(port && *port)) return;
  m.contact_port = std::atoi(port);
  const std::string& own = m.listener->address();
  m.contact_host = own.substr(0, own.rfind(':'));
  std::vector<std::string> hosts;
  if (const char* list = std::getenv("GW_ELASTIC_HOSTS"); list && *list) {
    const std::string all = list;
    for (size_t at = 0; at <= all.size();) {
      const size_t comma = std::min(all.find(',', at), all.size());
      if (comma > at) hosts.push_back(all.substr(at, comma - at));
      at = comma + 1;
    }
  }
  if (hosts.empty()) hosts.push_back(root_address.empty() ? "127.0.0.1" : root_address);
  for (const std::string& h : hosts) {
    const std::string c = h + ":" + std::to_string(m.contact_port);
    if (std::find(m.contacts.begin(), m.contacts.end(), c) == m.contacts.end()) m.contacts.push_back(c);
  }
}

// The largest of every member's `value`: a collective that completes at no member before every member
// entered it (a broadcast tree would let the members near its root go on alone).
uint64_t allreduce_max_u64(Communicator& comm, uint64_t value, const char* what) {
  int64_t v = int64_t(value);
  gw_request* r = start_allreduce_dense(comm, &v, 1, GW_DTYPE_I64, GW_REDUCE_MAX);
  const gw_status st = comm.wait(r, -1.0);
  const std::string error = r->error;
  comm.free(r);
  if (st != GW_OK) fail(st, std::string(what) + ": " + error);
  return uint64_t(v);
}

// Builds the communicator the session's verdict names and moves the membership to it.
std::unique_ptr<Communicator> build(bootstrap::MembershipSession& session, const Runtime& runtime, Membership& m) {
  const bootstrap::Verdict& v = session.verdict();
  gw_comm_options o = GW_COMM_OPTIONS_INIT;
  o.rank = v.your_rank;
  o.world_size = int64_t(v.members.size());
  Relay relay{&session, m.timeout_s + 5.0};
  o.allgather = relay_allgather;
  o.allgather_user = &relay;
  o.timeout_s = m.timeout_s;
  auto fresh = create_communicator(runtime, o);
  m.addresses = session.allgather(m.listener->address(), m.timeout_s + 5.0);
  m.epoch = v.epoch;
  hold_contact(m, runtime, v.your_rank);
  return fresh;
}

}  // namespace

std::unique_ptr<Communicator> join_running_job(const Runtime& runtime, const gw_comm_options& options,
                                               std::shared_ptr<Membership>* membership) {
  bootstrap::LaunchOverrides overrides;
  overrides.root_address = options.root_address ? options.root_address : "";
  overrides.root_port = options.root_port;
  const bootstrap::LaunchInfo launch = bootstrap::detect_launch(overrides);
  auto m = std::make_shared<Membership>();
  m->min_ranks = uint32_t(runtime.config().get_int("elastic", "min_ranks"));
  m->timeout_s = options.timeout_s > 0 ? options.timeout_s : runtime.config().get_float("runtime", "timeout_s");
  m->listener = std::make_unique<bootstrap::MembershipListener>(launch.root_address, launch.root_port);
  read_contact(*m, launch.root_address);
  if (m->contact_port <= 0)
    fail(GW_ERR_CONFIG, "elastic: GW_ELASTIC_JOIN is set but GW_ELASTIC_PORT is not: a joiner needs the job's join "
                        "contact (`gradwire run --elastic` sets both)");
  bootstrap::Proposal proposal;
  proposal.join = true;
  proposal.address = m->listener->address();
  auto session = bootstrap::MembershipSession::join(m->contacts, proposal, m->timeout_s + 10.0);
  const bootstrap::Verdict& v = session->verdict();
  if (v.status != 0) fail(gw_status(v.status), "elastic: joining was refused: " + v.message);
  auto fresh = build(*session, runtime, *m);
  m->joined = true;
  m->joined_steps = v.steps;
  runtime.logger().warn("elastic", "joined the job at membership epoch " + std::to_string(v.epoch) + " as rank " +
                                       std::to_string(v.your_rank) + " of " + std::to_string(v.members.size()) +
                                       " at step " + std::to_string(v.steps));
  *membership = m;
  return fresh;
}

uint64_t announce_joiners(gw_comm& handle, const Runtime& runtime, bool step_exchanges,
                          std::vector<bootstrap::Joiner>* joiners) {
  Membership& m = *handle.elastic;
  if (m.contact_port <= 0 && step_exchanges) return 0;
  Communicator& comm = *handle.impl;
  if (m.contact_port > 0) {
    hold_contact(m, runtime, comm.rank());  // again, where it failed before
    if (comm.rank() == 0 && m.contact) *joiners = bootstrap::accept_joiners(*m.contact);
  }
  return allreduce_max_u64(comm, joiners->size(), "elastic: the step's message to every member (joiners waiting)");
}

bool elastic_enabled(const Runtime& runtime) { return runtime.config().get_bool("elastic", "enabled"); }

std::shared_ptr<Membership> open_membership(Communicator& comm, const Runtime& runtime, const std::string& root_address,
                                            int root_port) {
  auto m = std::make_shared<Membership>();
  m->min_ranks = uint32_t(runtime.config().get_int("elastic", "min_ranks"));
  m->timeout_s = comm.settings().timeout_s;
  m->timeout_source = comm.settings().timeout_source;
  m->listener = std::make_unique<bootstrap::MembershipListener>(root_address, root_port);
  read_contact(*m, root_address);
  hold_contact(*m, runtime, comm.rank());
  const uint32_t n = comm.size();
  std::string all(n * kAddressBytes, '\0');
  const std::string& mine = m->listener->address();
  std::memcpy(all.data() + comm.rank() * kAddressBytes, mine.data(), std::min<size_t>(mine.size(), kAddressBytes - 1));
  const coll::Blocks blocks = coll::blocks_of(std::vector<uint64_t>(n, kAddressBytes), 1);
  void* buf = all.data();
  const Signature s{CollectiveKind::Allgather, GW_REDUCE_SUM, GW_DTYPE_U8, kAddressBytes, 0, 0};
  gw_request* r = comm.start_collective(s, [=](Collective& c) { return coll::allgatherv_ring(c, buf, blocks); });
  const gw_status st = comm.wait(r, -1.0);
  const std::string error = r->error;
  comm.free(r);
  if (st != GW_OK) fail(st, "elastic: gathering the membership listeners' addresses failed: " + error);
  for (uint32_t i = 0; i < n; ++i) m->addresses.emplace_back(all.c_str() + i * kAddressBytes);
  return m;
}

Agreed agree(gw_comm& handle, const Runtime& runtime, uint64_t completed_steps, gw_status status,
             const std::string& message, std::vector<bootstrap::Joiner> joiners) {
  Membership& m = *handle.elastic;
  Communicator& old = *handle.impl;
  const uint32_t me = old.rank(), n = old.size();
  // Who is gone: the ranks whose membership listener refuses connections (their process exited). What
  // the failed communicator says of its peers is no guide: after a failure it may have given up on live
  // ones too, and survivors would then disagree on the leader.
  std::set<uint32_t> dead;
  for (uint32_t r = 0; r < n; ++r)
    if (r != me && r < m.addresses.size() && bootstrap::listener_gone(m.addresses[r])) dead.insert(r);
  bootstrap::Proposal proposal;
  proposal.epoch = m.epoch;
  proposal.old_rank = me;
  proposal.completed_steps = completed_steps;
  std::unique_ptr<bootstrap::MembershipSession> session;
  std::string unreachable;
  while (!session) {
    uint32_t leader = 0;
    while (dead.count(leader)) ++leader;
    proposal.dead.assign(dead.begin(), dead.end());
    if (leader == me) {
      // Survivors that learn of the failure through their own timeout come up to the stuck-notice grace and
      // the notice flush (2 s each) after the first: the leader waits timeout_s + 5 s for them.
      session = bootstrap::MembershipSession::lead(*m.listener, n, proposal, m.min_ranks, m.timeout_s + 5.0, m.addresses,
                                                   std::move(joiners));
      break;
    }
    try {
      // The leader waits up to timeout_s + 5 s for the others; a little more here.
      session = bootstrap::MembershipSession::follow(m.addresses[leader], proposal, m.timeout_s + 10.0);
    } catch (const Error& e) {
      runtime.logger().warn("elastic", std::string(e.what()) + "; taking rank " + std::to_string(leader) + " as dead");
      unreachable += std::string(unreachable.empty() ? "" : "; ") + e.what();
      dead.insert(leader);
    }
  }
  const bootstrap::Verdict& v = session->verdict();
  if (v.status == GW_ERR_STATE) {  // refused: this rank was declared dead earlier (it led, or followed)
    m.contact.reset();  // a rank 0 declared dead gives the join contact up to the members' rank 0
    fail(GW_ERR_STATE, "elastic: " + v.message + " (this rank's failure: " + message + ")");
  }
  if (v.status != 0) fail(status, message + "; " + v.message);
  const uint32_t new_rank = v.your_rank;

  std::unique_ptr<Communicator> fresh;
  try {
    fresh = build(*session, runtime, m);
  } catch (const Error& e) {
    fail(status, message + "; elastic: the survivors' new communicator could not be built: " + e.what());
  }
  std::string members;
  uint32_t admitted = 0;
  for (uint32_t r : v.members) {
    if (r >= n) {
      ++admitted;
      continue;
    }
    members += (members.empty() ? "" : ", ") + std::to_string(r);
  }
  runtime.logger().warn("elastic", "membership epoch " + std::to_string(v.epoch) + ": ranks " + members +
                                       " of the last membership continue as 0.." +
                                       std::to_string(v.members.size() - admitted - 1) +
                                       (admitted ? ", " + std::to_string(admitted) + " joiner(s) after them" : "") +
                                       " from step " + std::to_string(v.steps) + " (this rank: " + std::to_string(me) +
                                       " -> " + std::to_string(new_rank) + "); cause: " + message);
  handle.impl = std::move(fresh);  // the old communicator is destroyed here
  return Agreed{v.steps, admitted};
}

}  // namespace gw::comm
