// The membership agreement of elastic mode (runtime/bootstrap/membership.hpp) in one process: a leader and
// its followers on threads, over localhost listeners. The quorum rule (min_ranks and a strict majority of
// the last membership), new ranks in the old order, the least completed step, ranks whose listener is
// closed counted as gone, a proposal of an older epoch refused, a leader of an older epoch refused by the
// members that moved on, a proposal that arrives before the leader's own step failed kept for its
// agreement, joiners placed after the members, found at whichever contact candidate listens, and a
// joiner dropped by a failed step asking again.
#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "bootstrap/membership.hpp"
#include "core/error.hpp"

namespace {

using gw::bootstrap::MembershipListener;
using gw::bootstrap::MembershipSession;
using gw::bootstrap::Proposal;
using gw::bootstrap::Verdict;

Proposal proposal(uint32_t rank, uint64_t steps, uint64_t epoch = 0) {
  Proposal p;
  p.epoch = epoch;
  p.old_rank = rank;
  p.completed_steps = steps;
  return p;
}

struct Group {
  std::vector<std::unique_ptr<MembershipListener>> listeners;
  std::vector<std::string> addresses;
  explicit Group(int n) {
    for (int i = 0; i < n; ++i) {
      listeners.push_back(std::make_unique<MembershipListener>("127.0.0.1", 9));
      addresses.push_back(listeners.back()->address());
    }
  }
};

// The join requests waiting at `contact`, asked every 20 ms for up to 5 s until there are some.
std::vector<gw::bootstrap::Joiner> waiting_joiners(MembershipListener& contact) {
  std::vector<gw::bootstrap::Joiner> waiting;
  for (int i = 0; i < 250 && waiting.empty(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    waiting = gw::bootstrap::accept_joiners(contact);
  }
  return waiting;
}

// The leader (rank `leader`) and the followers `followers` agree; returns each one's verdict by old rank.
std::map<uint32_t, Verdict> agree(Group& g, uint32_t leader, const std::vector<uint32_t>& followers,
                                  const std::vector<uint64_t>& steps, uint32_t min_ranks) {
  const uint32_t n = uint32_t(g.addresses.size());
  auto lead = std::async(std::launch::async, [&] {
    return MembershipSession::lead(*g.listeners[leader], n, proposal(leader, steps[leader]), min_ranks, 5.0,
                                   g.addresses)->verdict();
  });
  std::vector<std::future<Verdict>> follow;
  for (uint32_t r : followers)
    follow.push_back(std::async(std::launch::async, [&, r] {
      return MembershipSession::follow(g.addresses[leader], proposal(r, steps[r]), 10.0)->verdict();
    }));
  std::map<uint32_t, Verdict> out;
  out[leader] = lead.get();
  for (size_t i = 0; i < followers.size(); ++i) out[followers[i]] = follow[i].get();
  return out;
}

TEST(Membership, SurvivorsOfAClosedListenerContinueInOrderFromTheLeastStep) {
  Group g(4);
  g.listeners[2].reset();  // rank 2's process is gone: its port refuses
  const auto v = agree(g, 0, {1, 3}, {5, 4, 0, 5}, 1);
  for (uint32_t r : {0u, 1u, 3u}) {
    EXPECT_EQ(v.at(r).status, 0) << v.at(r).message;
    EXPECT_EQ(v.at(r).members, (std::vector<uint32_t>{0, 1, 3}));
    EXPECT_EQ(v.at(r).steps, 4u);
    EXPECT_EQ(v.at(r).epoch, 1u);
  }
  EXPECT_EQ(v.at(0).your_rank, 0u);
  EXPECT_EQ(v.at(1).your_rank, 1u);
  EXPECT_EQ(v.at(3).your_rank, 2u);
}

TEST(Membership, HalfOfTheMembershipIsNoQuorum) {
  Group g(4);
  g.listeners[1].reset();
  g.listeners[2].reset();
  const auto v = agree(g, 0, {3}, {3, 0, 0, 3}, 1);
  for (uint32_t r : {0u, 3u}) {
    EXPECT_NE(v.at(r).status, 0);
    EXPECT_NE(v.at(r).message.find("quorum is lost"), std::string::npos) << v.at(r).message;
    EXPECT_NE(v.at(r).message.find("gone: 1, 2"), std::string::npos) << v.at(r).message;
  }
}

TEST(Membership, MinRanksAboveTheSurvivorsIsNoQuorum) {
  Group g(5);
  g.listeners[4].reset();
  const auto v = agree(g, 0, {1, 2, 3}, {1, 1, 1, 1, 1}, 5);
  EXPECT_NE(v.at(0).status, 0);
  EXPECT_NE(v.at(0).message.find("min_ranks = 5"), std::string::npos) << v.at(0).message;
}

TEST(Membership, AProposalOfAnEarlierEpochIsRefused) {
  Group g(3);
  auto stale = std::async(std::launch::async, [&] {
    return MembershipSession::follow(g.addresses[0], proposal(2, 7, 0), 10.0)->verdict();
  });
  // The members are at epoch 1: between agreements they refuse what waits on their listener.
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  g.listeners[0]->refuse_waiting(1);
  const Verdict v = stale.get();
  EXPECT_EQ(v.status, GW_ERR_STATE);
  EXPECT_NE(v.message.find("declared dead"), std::string::npos) << v.message;
}

TEST(Membership, JoinersComeAfterTheMembers) {
  Group g(2);
  MembershipListener contact("127.0.0.1", 0, true);  // port 0: any free one, for the test
  Proposal join;
  join.join = true;
  join.address = "127.0.0.1:1";
  auto joiner = std::async(std::launch::async, [&] {
    return MembershipSession::join({contact.address()}, join, 10.0)->verdict();
  });
  std::vector<gw::bootstrap::Joiner> waiting = waiting_joiners(contact);
  ASSERT_EQ(waiting.size(), 1u);
  auto lead = std::async(std::launch::async, [&] {
    return MembershipSession::lead(*g.listeners[0], 2, proposal(0, 9), 1, 5.0, g.addresses, std::move(waiting))->verdict();
  });
  const Verdict f = MembershipSession::follow(g.addresses[0], proposal(1, 9), 10.0)->verdict();
  const Verdict l = lead.get();
  const Verdict j = joiner.get();
  EXPECT_EQ(l.status, 0);
  EXPECT_EQ(l.members, (std::vector<uint32_t>{0, 1, 2}));
  EXPECT_EQ(f.your_rank, 1u);
  EXPECT_EQ(j.your_rank, 2u);
  EXPECT_EQ(j.steps, 9u);
}

// A leader that was stopped and declared dead leads an agreement of its old epoch when it continues: the
// members, at epoch 1 since, refuse its probe at their next step, and it ends with that refusal (and not
// with a lost quorum after waiting for them).
TEST(Membership, ALeaderOfAnEarlierEpochIsRefusedByTheMembers) {
  Group g(4);
  auto lead = std::async(std::launch::async, [&] {
    return MembershipSession::lead(*g.listeners[0], 4, proposal(0, 7, 0), 1, 30.0, g.addresses)->verdict();
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  for (int r = 1; r < 4; ++r) g.listeners[r]->refuse_waiting(1);  // the members' next step
  ASSERT_EQ(lead.wait_for(std::chrono::seconds(10)), std::future_status::ready) << "the stale leader was not told";
  const Verdict v = lead.get();
  EXPECT_EQ(v.status, GW_ERR_STATE);
  EXPECT_NE(v.message.find("rank 0 of membership epoch 0 was declared dead"), std::string::npos) << v.message;
}

// The probes of a leader of the members' own epoch are not refused: members still at that epoch (on
// their way to the agreement) close them and follow.
TEST(Membership, ALeadersProbeOfTheCurrentEpochIsNotRefused) {
  Group g(3);
  auto lead = std::async(std::launch::async, [&] {
    return MembershipSession::lead(*g.listeners[0], 3, proposal(0, 4, 2), 1, 10.0, g.addresses)->verdict();
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  g.listeners[1]->refuse_waiting(2);
  g.listeners[2]->refuse_waiting(2);
  auto f1 = std::async(std::launch::async, [&] {
    return MembershipSession::follow(g.addresses[0], proposal(1, 4, 2), 10.0)->verdict();
  });
  const Verdict f2 = MembershipSession::follow(g.addresses[0], proposal(2, 3, 2), 10.0)->verdict();
  const Verdict l = lead.get();
  EXPECT_EQ(l.status, 0) << l.message;
  EXPECT_EQ(l.members, (std::vector<uint32_t>{0, 1, 2}));
  EXPECT_EQ(l.epoch, 3u);
  EXPECT_EQ(l.steps, 3u);
  EXPECT_EQ(f1.get().status, 0);
  EXPECT_EQ(f2.status, 0);
}

// A member whose step failed first may reach the leader while the leader is between two steps (it
// completed the failed step): the leader keeps that proposal of its own epoch for the agreement it leads
// once its own step fails, rather than refusing a live member.
TEST(Membership, AProposalOfTheCurrentEpochWaitsForTheLeadersAgreement) {
  Group g(3);
  auto early = std::async(std::launch::async, [&] {
    return MembershipSession::follow(g.addresses[0], proposal(1, 5, 0), 10.0)->verdict();
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  g.listeners[0]->refuse_waiting(0);  // the leader's next step begins
  g.listeners[2].reset();             // rank 2's process is gone
  const Verdict l = MembershipSession::lead(*g.listeners[0], 3, proposal(0, 6, 0), 1, 10.0, g.addresses)->verdict();
  const Verdict f = early.get();
  EXPECT_EQ(l.status, 0) << l.message;
  EXPECT_EQ(f.status, 0) << f.message;
  EXPECT_EQ(f.members, (std::vector<uint32_t>{0, 1}));
  EXPECT_EQ(f.steps, 5u);
  EXPECT_EQ(f.your_rank, 1u);
}

// The join contact moves with rank 0: a joiner given every candidate finds the one where the rank 0 of
// the moment listens, past candidates where nobody listens.
TEST(Membership, AJoinerFindsTheContactAmongTheCandidates) {
  MembershipListener contact("127.0.0.1", 0, true);
  std::string closed;
  {
    MembershipListener gone("127.0.0.1", 0, true);
    closed = gone.address();
  }
  Proposal join;
  join.join = true;
  join.address = "127.0.0.1:1";
  auto joiner = std::async(std::launch::async, [&] {
    return MembershipSession::join({closed, contact.address()}, join, 10.0)->verdict();
  });
  std::vector<gw::bootstrap::Joiner> waiting = waiting_joiners(contact);
  ASSERT_EQ(waiting.size(), 1u);
  Group g(1);
  const Verdict l =
      MembershipSession::lead(*g.listeners[0], 1, proposal(0, 3), 1, 5.0, g.addresses, std::move(waiting))->verdict();
  const Verdict j = joiner.get();
  EXPECT_EQ(l.members, (std::vector<uint32_t>{0, 1}));
  EXPECT_EQ(j.your_rank, 1u);
  EXPECT_EQ(j.steps, 3u);
}

// Rank 0 accepts a joiner at a step boundary and the step then fails (a member died): the joiners it
// held go with the failed step. Their connections close, so the joiner asks again and the agreement
// after the recovery admits it (a descriptor left open made the joiner wait, unanswered, to its deadline).
TEST(Membership, AJoinerDroppedByAFailedStepAsksAgainAndIsAdmitted) {
  MembershipListener contact("127.0.0.1", 0, true);
  Proposal join;
  join.join = true;
  join.address = "127.0.0.1:1";
  auto joiner = std::async(std::launch::async, [&] {
    return MembershipSession::join({contact.address()}, join, 10.0)->verdict();
  });
  ASSERT_EQ(waiting_joiners(contact).size(), 1u);  // accepted, then dropped with the failed step
  std::vector<gw::bootstrap::Joiner> again = waiting_joiners(contact);
  ASSERT_EQ(again.size(), 1u) << "the joiner did not ask again after its connection was dropped";
  Group g(1);
  const Verdict l =
      MembershipSession::lead(*g.listeners[0], 1, proposal(0, 7), 1, 5.0, g.addresses, std::move(again))->verdict();
  const Verdict j = joiner.get();
  EXPECT_EQ(l.members, (std::vector<uint32_t>{0, 1}));
  EXPECT_EQ(j.your_rank, 1u);
  EXPECT_EQ(j.steps, 7u);
}

// No candidate answers: a clear error naming the contacts tried, after the wait.
TEST(Membership, AJoinerNobodyAdmitsFailsNamingTheContacts) {
  std::string closed;
  {
    MembershipListener gone("127.0.0.1", 0, true);
    closed = gone.address();
  }
  Proposal join;
  join.join = true;
  try {
    MembershipSession::join({closed}, join, 0.6);
    FAIL() << "joining with no contact succeeded";
  } catch (const gw::Error& e) {
    EXPECT_EQ(e.status(), GW_ERR_TIMEOUT);
    EXPECT_NE(std::string(e.what()).find(closed), std::string::npos) << e.what();
  }
}

}  // namespace
