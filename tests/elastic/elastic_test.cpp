// Elastic membership in real processes (docs/elastic.md): 4 ranks in a gw_sync_step loop (int8 with error
// feedback) under `gradwire run -n 4 --keep-going`, over UCX shared memory and TCP. A rank SIGKILLed
// mid-step (rank 2, or the root, rank 0): the 3 survivors get GW_MEMBERSHIP_CHANGED, continue among
// themselves and end with bit-identical parameters. Two ranks killed with min_ranks 3: the quorum is
// lost and every survivor returns the failure as an error naming it. A rank stopped past the timeout and
// continued after the others moved on is refused with GW_ERR_STATE ("declared dead"), the root (which
// then leads an agreement of its old epoch alone) too. A killed rank, or root, started again by `gradwire
// run --elastic` joins. ElasticCluster.* do the root's cases in the emulated cluster of namespaces
// (`--link 1gbit`: every rank at an address of its own, so the join contact moves with rank 0; root
// needed, skipped otherwise). The time bounds only tell an answer from a hang on a loaded machine;
// "figure:" lines print the seconds measured.
#include <gtest/gtest.h>

#include <time.h>
#include <unistd.h>

#include <cstdio>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "../support/job.hpp"

namespace {

using gwjob::Action;
using gwjob::Job;
using gwjob::lines_of;
using gwjob::processes_with;
using gwjob::run_job;

constexpr double kTimeoutS = 5;  // [runtime] timeout_s of the ranks

double wall_now() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return double(ts.tv_sec) + double(ts.tv_nsec) * 1e-9;
}

struct Rank {
  bool faulted = false;
  double fault_at = 0;
  int changes = 0;
  int epoch = -1, new_rank = -1, size = -1;
  double changed_at = 0;
  bool errored = false;
  std::string status, message;
  bool joined = false;
  int joined_rank = -1;
  double joined_at = 0;
  bool done = false;
  int done_size = -1;
  int done_epoch = -1;
  unsigned long long steps = 0;
  std::string hash;
  bool destroyed = false;
  bool failed = false;
};

std::map<int, Rank> parse(const std::string& output) {
  std::map<int, Rank> ranks;
  for (const std::string& line : lines_of(output)) {
    int r = -1, used = 0;
    if (std::sscanf(line.c_str(), "[%d] %n", &r, &used) != 1 || used == 0) continue;
    const std::string text = line.substr(size_t(used));
    Rank& rep = ranks[r];
    char word[64] = {0}, hash[64] = {0};
    double t = 0;
    int a = 0, b = 0, c = 0;
    unsigned long long s = 0;
    if (std::sscanf(text.c_str(), "FAULT %63s pid %d at %lf", word, &a, &t) == 3) {
      rep.faulted = true;
      rep.fault_at = t;
    } else if (std::sscanf(text.c_str(), "CHANGED epoch %d rank %d size %d steps %llu at %lf", &a, &b, &c, &s, &t) == 5) {
      ++rep.changes;
      rep.epoch = a;
      rep.new_rank = b;
      rep.size = c;
      if (rep.changed_at == 0) rep.changed_at = t;
    } else if (std::sscanf(text.c_str(), "JOINED epoch %d rank %d size %d steps %llu at %lf", &a, &b, &c, &s, &t) == 5) {
      rep.joined = true;
      rep.joined_rank = b;
      rep.joined_at = t;
    } else if (std::sscanf(text.c_str(), "EXPECTED-ERROR %63s at %lf", word, &t) == 2) {
      rep.errored = true;
      rep.status = word;
      const size_t colon = text.find(": ");
      rep.message = colon == std::string::npos ? text : text.substr(colon + 2);
    } else if (std::sscanf(text.c_str(), "DONE steps %llu rank %d size %d epoch %d hash %63s", &s, &b, &c, &a, hash) == 5) {
      rep.done = true;
      rep.steps = s;
      rep.done_size = c;
      rep.done_epoch = a;
      rep.hash = hash;
    } else if (text.rfind("DESTROYED GW_OK", 0) == 0) {
      rep.destroyed = true;
    } else if (text.rfind("FAIL", 0) == 0) {
      rep.failed = true;
    }
  }
  return ranks;
}

std::string new_tag() {
  static int counter = 0;
  return "elastic-tag-" + std::to_string(getpid()) + "-" + std::to_string(++counter);
}

struct Result {
  Job job;
  std::map<int, Rank> ranks;
  std::vector<int> leftovers;
};

// Runs elastic_rank on 4 ranks. A stopped victim is continued once every other rank changed membership
// (or reported an error), or after a bound.
Result run(const std::string& tls, const std::string& fault, const std::string& victims, int steps,
           const std::string& env = "", const std::string& flags = "--keep-going") {
  const std::string tag = new_tag();
  char timeout[32];
  std::snprintf(timeout, sizeof timeout, "%g", kTimeoutS);
  const std::string command = std::string("env UCX_TLS=") + tls + " FAULT_TIMEOUT_S=" + timeout + " " + env + " " +
                              GW_CLI + " run -n 4 " + flags + " -- " + ELASTIC_RANK + " " + std::to_string(steps) + " " +
                              fault + " " + victims + " " + tag;
  pid_t stopped = 0;
  double stopped_at = 0;
  bool continued = false;
  std::set<int> moved_on;
  auto on_line = [&](const std::string& line) -> Action {
    int r = -1, pid = 0;
    if (std::sscanf(line.c_str(), "[%d] FAULT stop pid %d", &r, &pid) == 2) {
      stopped = pid;
      stopped_at = wall_now();
      return {pid, 0};
    }
    // (sscanf's count says nothing of the literal text after %d: look for it.)
    if (std::sscanf(line.c_str(), "[%d]", &r) == 1 &&
        (line.find("] CHANGED ") != std::string::npos || line.find("] EXPECTED-ERROR ") != std::string::npos))
      moved_on.insert(r);
    return {};
  };
  auto on_tick = [&]() -> Action {
    if (stopped == 0 || continued) return {};
    if (moved_on.size() >= 3 || wall_now() - stopped_at > 4 * kTimeoutS + 20) {
      continued = true;
      return {stopped, SIGCONT};
    }
    return {};
  };
  Result res;
  res.job = run_job(command, 240, on_line, on_tick);
  res.ranks = parse(res.job.output);
  res.leftovers = processes_with(tag);
  return res;
}

// The survivors (old ranks `survivors`) changed membership once to `size` ranks, finished `steps` steps
// among themselves with the same parameters, and destroyed cleanly.
void expect_continued(const Result& res, const std::vector<int>& survivors, int victim, int steps, const char* what) {
  ASSERT_FALSE(res.job.timed_out) << what << ": the job did not end within its limit:\n" << res.job.output;
  EXPECT_TRUE(res.leftovers.empty()) << what << ": " << res.leftovers.size() << " rank processes remain";
  const auto v = res.ranks.find(victim);
  ASSERT_TRUE(v != res.ranks.end() && v->second.faulted) << what << ": the victim never faulted:\n" << res.job.output;
  std::set<std::string> hashes;
  std::set<int> new_ranks;
  std::string figure;
  for (int r : survivors) {
    const auto it = res.ranks.find(r);
    ASSERT_TRUE(it != res.ranks.end()) << what << ": rank " << r << " printed nothing:\n" << res.job.output;
    const Rank& rep = it->second;
    EXPECT_FALSE(rep.failed) << res.job.output;
    EXPECT_FALSE(rep.errored) << what << ": rank " << r << ": " << rep.status << " " << rep.message << "\n"
                              << res.job.output;
    EXPECT_EQ(rep.changes, 1) << what << ": rank " << r << "\n" << res.job.output;
    EXPECT_EQ(rep.epoch, 1) << what << ": rank " << r;
    EXPECT_EQ(rep.size, int(survivors.size())) << what << ": rank " << r;
    new_ranks.insert(rep.new_rank);
    ASSERT_TRUE(rep.done) << what << ": rank " << r << " did not finish its steps:\n" << res.job.output;
    EXPECT_EQ(rep.steps, (unsigned long long)steps);
    EXPECT_EQ(rep.done_size, int(survivors.size()));
    hashes.insert(rep.hash);
    EXPECT_TRUE(rep.destroyed) << what << ": rank " << r << " did not destroy cleanly:\n" << res.job.output;
    char one[96];
    std::snprintf(one, sizeof one, " rank %d %.2f s", r, rep.changed_at - v->second.fault_at);
    figure += one;
  }
  // Survivors keep their relative order: new ranks 0..n-1 in the order of the old ones.
  int expected = 0;
  for (int r : survivors) EXPECT_EQ(res.ranks.at(r).new_rank, expected++) << what << ": rank " << r;
  EXPECT_EQ(hashes.size(), 1u) << what << ": the survivors' parameters differ:\n" << res.job.output;
  std::printf("figure: %s: fault to GW_MEMBERSHIP_CHANGED:%s\n", what, figure.c_str());
}

class Elastic : public ::testing::TestWithParam<std::string> {};

TEST_P(Elastic, SurvivorsOfAKilledRankContinueBitIdentical) {
  const Result res = run(GetParam(), "kill", "2", 12);
  EXPECT_EQ(res.job.code, 128 + 9) << res.job.output;
  expect_continued(res, {0, 1, 3}, 2, 12, ("kill rank 2 of 4 over " + GetParam()).c_str());
}

TEST_P(Elastic, SurvivorsOfAKilledRootContinue) {
  const Result res = run(GetParam(), "kill", "0", 12);
  EXPECT_EQ(res.job.code, 128 + 9) << res.job.output;
  expect_continued(res, {1, 2, 3}, 0, 12, ("kill rank 0 of 4 over " + GetParam()).c_str());
}

// Two of four killed with min_ranks 3: no quorum. Each survivor returns a GW_ERR_* naming the cause and
// the lost quorum, as without elastic mode.
TEST_P(Elastic, TwoKilledOfFourLoseTheQuorum) {
  const Result res = run(GetParam(), "kill", "1,2", 12, "ELASTIC_MIN_RANKS=3");
  ASSERT_FALSE(res.job.timed_out) << res.job.output;
  EXPECT_TRUE(res.leftovers.empty());
  for (int r : {0, 3}) {
    const auto it = res.ranks.find(r);
    ASSERT_TRUE(it != res.ranks.end() && it->second.errored) << "rank " << r << " reported no error:\n" << res.job.output;
    const Rank& rep = it->second;
    EXPECT_EQ(rep.status.rfind("GW_ERR_", 0), 0u) << rep.status;
    EXPECT_NE(rep.message.find("quorum is lost"), std::string::npos) << rep.message;
    EXPECT_TRUE(rep.message.find("rank 1") != std::string::npos || rep.message.find("rank 2") != std::string::npos)
        << "rank " << r << "'s error names neither dead rank: " << rep.message;
    EXPECT_EQ(rep.changes, 0);
    EXPECT_FALSE(rep.done);
    EXPECT_TRUE(rep.destroyed) << res.job.output;
  }
}

// A rank stopped past the timeout is declared dead; the others continue. Continued, it asks to take part
// again with its old state and is refused: GW_ERR_STATE saying it was declared dead and removed.
void expect_refused(const Result& res, int victim, const std::vector<int>& survivors, const std::string& what) {
  expect_continued(res, survivors, victim, 400, what.c_str());
  const auto it = res.ranks.find(victim);
  ASSERT_TRUE(it != res.ranks.end() && it->second.errored) << "the stopped rank reported no error:\n" << res.job.output;
  EXPECT_EQ(it->second.status, "GW_ERR_STATE") << it->second.message;
  EXPECT_NE(it->second.message.find("declared dead"), std::string::npos) << it->second.message;
  EXPECT_NE(it->second.message.find("rank " + std::to_string(victim) + " of membership epoch 0 "), std::string::npos)
      << it->second.message;
  EXPECT_EQ(it->second.changes, 0);
  EXPECT_FALSE(it->second.done);
}

TEST_P(Elastic, StoppedRankDeclaredDeadIsRefused) {
  const Result res = run(GetParam(), "stop", "1", 400, "ELASTIC_STEP_SLEEP_MS=25");
  expect_refused(res, 1, {0, 2, 3}, "stop rank 1 of 4 over " + GetParam());
}

// The root stopped: continued, it is the lowest rank of its old membership and leads an agreement of
// that epoch alone; the members, at epoch 1 since, answer its probe with the refusal at their next step.
TEST_P(Elastic, StoppedRootDeclaredDeadIsRefused) {
  const Result res = run(GetParam(), "stop", "0", 400, "ELASTIC_STEP_SLEEP_MS=25");
  expect_refused(res, 0, {1, 2, 3}, "stop rank 0 of 4 over " + GetParam());
}

// `gradwire run --elastic=1`: the killed rank is started again, asks to join, and is admitted at the
// members' next step boundary (the last rank of the new membership); it receives the parameters and the
// synchronizer's state from rank 0, and all 4 end with the same parameters.
void expect_rejoined(const Result& res, int victim, int steps) {
  ASSERT_FALSE(res.job.timed_out) << res.job.output;
  EXPECT_EQ(res.job.code, 0) << res.job.output;
  EXPECT_TRUE(res.leftovers.empty());
  ASSERT_TRUE(res.ranks.count(victim) && res.ranks.at(victim).faulted) << res.job.output;
  const Rank& joiner = res.ranks.at(victim);
  ASSERT_TRUE(joiner.joined) << "the restarted rank never joined:\n" << res.job.output;
  EXPECT_EQ(joiner.joined_rank, 3);
  std::set<std::string> hashes;
  for (int r = 0; r < 4; ++r) {
    ASSERT_TRUE(res.ranks.count(r)) << res.job.output;
    const Rank& rep = res.ranks.at(r);
    EXPECT_FALSE(rep.failed) << res.job.output;
    EXPECT_FALSE(rep.errored) << "rank " << r << ": " << rep.message << "\n" << res.job.output;
    ASSERT_TRUE(rep.done) << "rank " << r << " did not finish:\n" << res.job.output;
    EXPECT_EQ(rep.steps, (unsigned long long)steps);
    EXPECT_EQ(rep.done_size, 4) << "rank " << r;
    // One change for the loss and one for the join, or one for both (a joiner that arrives before the
    // members noticed the loss is admitted by the same agreement).
    EXPECT_EQ(rep.done_epoch, res.ranks.at(0).done_epoch) << "rank " << r;
    if (r != victim) {
      EXPECT_GE(rep.changes, 1) << "rank " << r;
      EXPECT_LE(rep.changes, 2) << "rank " << r;
      EXPECT_EQ(rep.changes, rep.done_epoch) << "rank " << r;
    }
    hashes.insert(rep.hash);
    EXPECT_TRUE(rep.destroyed) << "rank " << r;
  }
  EXPECT_EQ(hashes.size(), 1u) << "the 4 ranks' parameters differ:\n" << res.job.output;
}

TEST_P(Elastic, RestartedRankJoinsAndEndsBitIdentical) {
  const Result res = run(GetParam(), "kill", "2", 200, "ELASTIC_STEP_SLEEP_MS=25", "--elastic=1");
  expect_rejoined(res, 2, 200);
  if (res.ranks.count(2))
    std::printf("figure: join over %s: fault to admitted %.2f s\n", GetParam().c_str(),
                res.ranks.at(2).joined_at - res.ranks.at(2).fault_at);
}

// The join contact's port is held by `gradwire run` for the whole job: another socket (here rank 3's,
// before any communicator exists, bound as another job's launcher or rendezvous root would bind a port it
// found free) cannot take it, and the restarted rank still reaches rank 0 there. A port that was only
// found free and released left that window open until rank 0 listened: the joiner then waited at a
// socket that never answered, and no rejoin happened.
TEST_P(Elastic, JoinContactPortCannotBeTakenByAnotherSocket) {
  const Result res = run(GetParam(), "kill", "2", 200, "ELASTIC_STEP_SLEEP_MS=25 ELASTIC_SQUAT_CONTACT=3", "--elastic=1");
  EXPECT_NE(res.job.output.find("[3] SQUAT refused "), std::string::npos)
      << "another socket could bind the join contact's port:\n" << res.job.output;
  expect_rejoined(res, 2, 200);
}

// The root killed and started again: rank 1 became rank 0 and holds the join contact now.
TEST_P(Elastic, RestartedRootJoinsAndEndsBitIdentical) {
  const Result res = run(GetParam(), "kill", "0", 200, "ELASTIC_STEP_SLEEP_MS=25", "--elastic=1");
  expect_rejoined(res, 0, 200);
}

// DiLoCo's and local_sgd's steps between two averagings communicate nothing of their own: elastic mode's
// per-step message (an allreduce every member contributes to) keeps the members within one step of each
// other. Rank 2 killed at step 5 (DiLoCo's outer steps and local_sgd's averagings fall at every 4th): with
// a join contact the message is sent every step, and as a broadcast tree it let ranks 0 and 1 run on to
// the next averaging while rank 3 (below rank 2) stopped; their recovery then failed with GW_ERR_STATE
// ("a member more than one step behind"), and no restarted rank could join. 400 steps: an inner step is
// short, and the restarted process must be admitted before the members finish (Limits).
TEST_P(Elastic, RestartedRankJoinsDiLoCoBetweenOuterStepsAndEndsBitIdentical) {
  const Result res = run(GetParam(), "kill", "2", 400,
                         "ELASTIC_SCHEDULE=diloco FAULT_AT=5 FAULT_DELAY_MS=0 ELASTIC_STEP_SLEEP_MS=25", "--elastic=1");
  expect_rejoined(res, 2, 400);
}

TEST_P(Elastic, RestartedRankJoinsLocalSgdBetweenAveragingsAndEndsBitIdentical) {
  const Result res = run(GetParam(), "kill", "2", 400,
                         "ELASTIC_SCHEDULE=local_sgd FAULT_AT=5 FAULT_DELAY_MS=0 ELASTIC_STEP_SLEEP_MS=25", "--elastic=1");
  expect_rejoined(res, 2, 400);
}

// Without a join contact the message goes with the steps that communicate nothing only. Rank 2 killed
// between outer steps: the survivors stop at the step it never entered.
TEST_P(Elastic, SurvivorsOfARankKilledBetweenDiLoCoOuterStepsContinueBitIdentical) {
  const Result res = run(GetParam(), "kill", "2", 24, "ELASTIC_SCHEDULE=diloco FAULT_AT=5 FAULT_DELAY_MS=0");
  EXPECT_EQ(res.job.code, 128 + 9) << res.job.output;
  expect_continued(res, {0, 1, 3}, 2, 24, ("kill rank 2 of 4 between DiLoCo outer steps over " + GetParam()).c_str());
}

// Rank 2 killed while DiLoCo's outer exchange of step 8 runs: a survivor that completed it (the dead rank
// had sent it all it needed) goes on to step 9, whose message cannot complete without the others, so it
// is at most one step ahead of those still in the exchange, and every survivor holds the snapshot of the
// agreed step. (Whether a survivor completes the exchange depends on when the kill lands.)
TEST_P(Elastic, SurvivorsOfARankKilledInADiLoCoOuterExchangeContinueBitIdentical) {
  const Result res = run(GetParam(), "kill", "2", 24, "ELASTIC_SCHEDULE=diloco FAULT_AT=8 FAULT_DELAY_MS=1");
  EXPECT_EQ(res.job.code, 128 + 9) << res.job.output;
  expect_continued(res, {0, 1, 3}, 2, 24, ("kill rank 2 of 4 in a DiLoCo outer exchange over " + GetParam()).c_str());
}

INSTANTIATE_TEST_SUITE_P(Ucx, Elastic, ::testing::Values("shm", "tcp"));

// In the emulated cluster (`gradwire run --link`, one namespace and address per rank; UCX over TCP): the
// rank 0 of the moment listens for joiners at its own address, and a joiner asks at every rank's. The
// killed root's successor is at another address than the root was; the restarted root finds it there.
bool cluster_possible() { return geteuid() == 0; }

TEST(ElasticCluster, RestartedRootJoinsAndEndsBitIdentical) {
  if (!cluster_possible()) GTEST_SKIP() << "the emulated cluster needs root (network namespaces)";
  const Result res = run("tcp", "kill", "0", 200, "ELASTIC_STEP_SLEEP_MS=25", "--elastic=1 --link 1gbit");
  ASSERT_NE(res.job.output.find("namespaces gw"), std::string::npos) << "the job did not run in the cluster:\n"
                                                                     << res.job.output;
  expect_rejoined(res, 0, 200);
  if (res.ranks.count(0))
    std::printf("figure: root rejoin in the cluster: fault to admitted %.2f s\n",
                res.ranks.at(0).joined_at - res.ranks.at(0).fault_at);
}

TEST(ElasticCluster, RestartedRankJoinsAndEndsBitIdentical) {
  if (!cluster_possible()) GTEST_SKIP() << "the emulated cluster needs root (network namespaces)";
  const Result res = run("tcp", "kill", "2", 200, "ELASTIC_STEP_SLEEP_MS=25", "--elastic=1 --link 1gbit");
  ASSERT_NE(res.job.output.find("namespaces gw"), std::string::npos) << res.job.output;
  expect_rejoined(res, 2, 200);
}

TEST(ElasticCluster, StoppedRootDeclaredDeadIsRefused) {
  if (!cluster_possible()) GTEST_SKIP() << "the emulated cluster needs root (network namespaces)";
  const Result res = run("tcp", "stop", "0", 400, "ELASTIC_STEP_SLEEP_MS=25", "--keep-going --link 1gbit");
  ASSERT_NE(res.job.output.find("namespaces gw"), std::string::npos) << res.job.output;
  expect_refused(res, 0, {1, 2, 3}, "stop rank 0 of 4 in the cluster");
}

}  // namespace
