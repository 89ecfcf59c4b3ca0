// Multi-process tests of the communicator: every case starts `gradwire run -n N -- mp_rank CASE` over
// UCX shared memory, over TCP, and routed (shared memory inside nodes of 2, TCP between), and checks each rank's exit status and what it printed. The ranks
// compare their results with a serial reference and with each other (bit-identical) themselves.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sched.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace {

struct Outcome {
  int code = -1;
  std::string output;
};

Outcome shell(const std::string& command) {
  Outcome o;
  FILE* p = popen((command + " 2>&1").c_str(), "r");
  if (p == nullptr) return o;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), p)) > 0) o.output.append(buf, n);
  const int status = pclose(p);
  o.code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return o;
}

// `gradwire run -n N [flags] -- mp_rank ARGS` with UCX_TLS=tls and extra environment.
// tls "routed": nodes of 2 ranks (GW_NODE_ID) whose ranks talk over [transport] intra = "ucx_shm" and
// reach the other nodes over UCX TCP (docs/two-level.md), every collective through the routing.
Outcome run(const std::string& tls, int n, const std::string& args, const std::string& env = "",
            const std::string& flags = "") {
  const bool routed = tls == "routed";
  return shell("env UCX_TLS=" + std::string(routed ? "tcp GRADWIRE_TRANSPORT_INTRA=ucx_shm" : tls) +
               " MP_TIMEOUT_S=30 " + env + " " + GW_CLI + " run -n " + std::to_string(n) + " " +
               (routed ? "--ranks-per-node 2 " : "") + flags + " -- " + MP_RANK + " " + args);
}

int count_of(const std::string& text, const std::string& what) {
  int c = 0;
  for (size_t pos = text.find(what); pos != std::string::npos; pos = text.find(what, pos + 1)) ++c;
  return c;
}

void expect_all_ok(const Outcome& o, int n) {
  EXPECT_EQ(o.code, 0) << o.output;
  EXPECT_EQ(count_of(o.output, "OK rank"), n) << o.output;
  EXPECT_EQ(count_of(o.output, "FAIL"), 0) << o.output;
}

// Everything rank r printed from its "EXPECTED-ERROR <status>" line on (a message may span lines).
std::string error_text(const std::string& output, int r, const std::string& status) {
  const std::string prefix = "[" + std::to_string(r) + "] ";
  std::string text;
  bool started = false;
  size_t pos = 0;
  while (pos < output.size()) {
    size_t end = output.find('\n', pos);
    if (end == std::string::npos) end = output.size();
    const std::string line = output.substr(pos, end - pos);
    pos = end + 1;
    if (line.rfind(prefix, 0) != 0) continue;
    if (!started && line.rfind(prefix + "EXPECTED-ERROR " + status + " ", 0) == 0) started = true;
    if (started) text += line.substr(prefix.size()) + "\n";
  }
  return text;
}

// Every listed rank printed "EXPECTED-ERROR <status> ..." with `detail` in the message.
void expect_error_on(const Outcome& o, const std::vector<int>& ranks, const std::string& status, const std::string& detail) {
  for (int r : ranks) {
    const std::string text = error_text(o.output, r, status);
    ASSERT_FALSE(text.empty()) << "rank " << r << " did not report " << status << ":\n" << o.output;
    EXPECT_NE(text.find(detail), std::string::npos) << "rank " << r << "'s message lacks '" << detail << "': " << text;
  }
  EXPECT_EQ(count_of(o.output, "FAIL"), 0) << o.output;
}

std::vector<int> all_ranks(int n) {
  std::vector<int> r;
  for (int i = 0; i < n; ++i) r.push_back(i);
  return r;
}

// A free port below the ephemeral range, as `gradwire run` picks it.
int free_port() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  for (int port = 20000 + int(getpid() % 10000);; ++port) {
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_ANY);
    a.sin_port = htons(uint16_t(port));
    if (bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0) {
      close(fd);
      return port;
    }
  }
}

class Comm : public ::testing::TestWithParam<std::string> {};

TEST_P(Comm, EveryOpAndDtypeSmallSizes) {
  for (int n = 2; n <= 5; ++n) {
    SCOPED_TRACE("ranks " + std::to_string(n));
    expect_all_ok(run(GetParam(), n, "collectives 0,1,7,1000"), n);
  }
}

// With the ring threshold at 0 every size takes the ring (reduce-scatter + allgather) path.
TEST_P(Comm, EveryOpAndDtypeRingEverywhere) {
  for (int n : {2, 3, 5}) {
    SCOPED_TRACE("ranks " + std::to_string(n));
    expect_all_ok(run(GetParam(), n, "collectives 1,7,1000", "MP_RING_THRESHOLD=0"), n);
  }
}

TEST_P(Comm, EveryDtypeOneMebiPlusThree) {
  for (int n = 2; n <= 5; ++n) {
    SCOPED_TRACE("ranks " + std::to_string(n));
    expect_all_ok(run(GetParam(), n, "collectives-sum-max 1048579"), n);
  }
}

TEST_P(Comm, SixtyFourMebibytes) { expect_all_ok(run(GetParam(), 3, "large 67108864"), 3); }

TEST_P(Comm, ManyOutstandingRequests) {
  expect_all_ok(run(GetParam(), 4, "many"), 4);
  expect_all_ok(run(GetParam(), 3, "many"), 3);
}

// A second communicator while the first lives and a third right after one was destroyed, from the one
// root port `gradwire run` gives.
TEST_P(Comm, SeveralCommunicatorsFromOneLauncher) {
  expect_all_ok(run(GetParam(), 3, "communicators"), 3);
  expect_all_ok(run(GetParam(), 2, "communicators"), 2);
}

TEST_P(Comm, MismatchedCountIsAnErrorOnEveryRank) {
  expect_error_on(run(GetParam(), 3, "mismatch-count"), all_ranks(3), "GW_ERR_MISMATCH", "count: ");
}
TEST_P(Comm, MismatchedDtypeIsAnErrorOnEveryRank) {
  expect_error_on(run(GetParam(), 3, "mismatch-dtype"), all_ranks(3), "GW_ERR_MISMATCH", "dtype: ");
}
TEST_P(Comm, MismatchedOpIsAnErrorOnEveryRank) {
  expect_error_on(run(GetParam(), 4, "mismatch-op"), all_ranks(4), "GW_ERR_MISMATCH", "op: ");
}
// reduce_scatter on one rank, allgather on the others: the same ring pattern, different headers.
TEST_P(Comm, MismatchedCollectiveIsAnErrorOnEveryRank) {
  expect_error_on(run(GetParam(), 3, "mismatch-collective"), all_ranks(3), "GW_ERR_MISMATCH", "collective: ");
}
// Inside gw_sync_step: the last rank's buckets go dense ([codec] none), the others' through int8, at the
// same collective numbers. Every rank returns the mismatch naming both calls; in elastic mode too.
TEST_P(Comm, SynchronizersCallingDifferentCollectivesGetAMismatchOnEveryRank) {
  expect_error_on(run(GetParam(), 3, "mismatch-sync"), all_ranks(3), "GW_ERR_MISMATCH", "ranks disagree");
}
TEST_P(Comm, SynchronizersCallingDifferentCollectivesGetAMismatchInElasticModeToo) {
  expect_error_on(run(GetParam(), 3, "mismatch-sync-elastic"), all_ranks(3), "GW_ERR_MISMATCH", "ranks disagree");
}
TEST_P(Comm, MismatchedCountOnTheRingIsAnErrorOnEveryRank) {
  expect_error_on(run(GetParam(), 5, "mismatch-count", "MP_RING_THRESHOLD=0"), all_ranks(5), "GW_ERR_MISMATCH", "count: ");
}

// Rank 0 on the ring path (a count above ring_threshold_bytes), the others on recursive doubling: no
// message of one algorithm matches a message of the other, so no header shows the difference. After
// timeout_s (3 s) every rank sends the others a stuck notice with its call; a rank that receives one for
// the same collective with another call reports GW_ERR_MISMATCH naming both counts, within the grace
// period (2 s), instead of GW_ERR_TIMEOUT.
TEST_P(Comm, MismatchedCountAcrossAlgorithmsIsAMismatchNotATimeout) {
  for (int n : {2, 4}) {
    SCOPED_TRACE("ranks " + std::to_string(n));
    const auto started = std::chrono::steady_clock::now();
    const Outcome o = run(GetParam(), n, "mismatch-algorithm", "MP_TIMEOUT_S=3");
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    EXPECT_EQ(o.code, 0) << o.output;
    for (int r = 0; r < n; ++r) {
      const std::string text = error_text(o.output, r, "GW_ERR_MISMATCH");
      ASSERT_FALSE(text.empty()) << "rank " << r << " did not report GW_ERR_MISMATCH:\n" << o.output;
      EXPECT_TRUE(text.find("count: 32768 vs 1000") != std::string::npos ||
                  text.find("count: 1000 vs 32768") != std::string::npos)
          << "rank " << r << "'s message does not name both counts: " << text;
    }
    EXPECT_EQ(count_of(o.output, "FAIL"), 0) << o.output;
    EXPECT_EQ(count_of(o.output, "GW_ERR_TIMEOUT"), 0) << o.output;
    // timeout_s + the grace period + start-up and shutdown; a rank that waited for a second timeout
    // (or forever) would take longer.
    EXPECT_LT(seconds, 15.0) << o.output;
  }
}

// gw_comm_destroy and gw_runtime_destroy after a failed collective succeed on every rank (a rendezvous
// send the other algorithm never matched stays with UCX; destroy does not wait for it longer than 1 s).
TEST_P(Comm, DestroyAfterAFailedCollectiveSucceeds) {
  const Outcome o = run(GetParam(), 3, "mismatch-algorithm", "MP_TIMEOUT_S=3 MP_DESTROY_ON_ERROR=1");
  expect_error_on(o, all_ranks(3), "GW_ERR_MISMATCH", "count: ");
  EXPECT_EQ(count_of(o.output, "DESTROYED"), 3) << o.output;
}

// A rank that arrives late, within the grace period after the others passed their deadline and sent it
// stuck notices: the collective completes, the notices do not fail it, and it still receives the failure
// notice of the mismatch that follows (its notice receives were posted again).
TEST_P(Comm, LateRankWithinTheGracePeriodIsNotAnError) {
  // The others give up 3 s + the 2 s grace after they entered; rank 0 enters 3.4 s late, leaving 1.6 s
  // for its first messages on a loaded machine (at 4 s late, 1 s was not always enough under a load of 12
  // on 2 cores: the first exchange also wires up UCX's endpoints).
  const Outcome o = run(GetParam(), 3, "late-rank", "MP_TIMEOUT_S=3 MP_LATE_S=3.4");
  EXPECT_EQ(o.code, 0) << o.output;
  expect_error_on(o, all_ranks(3), "GW_ERR_MISMATCH", "count: ");
}

// Killed in the middle of a collective: the others end with an error (a dead peer, or the timeout on
// transports that cannot see a dead peer), not a hang. --keep-going lets them run on to report it.
TEST_P(Comm, RankKilledMidCollective) {
  const Outcome o = run(GetParam(), 3, "kill", "MP_TIMEOUT_S=10", "--keep-going");
  EXPECT_EQ(o.code, 128 + 9) << o.output;
  for (int r : {0, 2})
    EXPECT_NE(o.output.find("[" + std::to_string(r) + "] EXPECTED-ERROR GW_ERR_"), std::string::npos) << o.output;
}

INSTANTIATE_TEST_SUITE_P(Ucx, Comm, ::testing::Values("shm", "tcp", "routed"),
                         [](const ::testing::TestParamInfo<std::string>& p) { return p.param; });

// [runtime] wait_spin_us = -1 (the default): ranks that each have a CPU spin 1 ms, then yield between
// polls; ranks that outnumber the CPUs they may use spin 5 us, then yield. wait_sleep_us = -1 makes the
// crowded ones sleep between polls (up to 100 us) instead, so that a waiting rank hands its core to the
// rank it waits for; a rank with a CPU of its own still yields. Pinned to one CPU, 1 rank has a CPU of its
// own and 3 ranks do not.
TEST(CommCreate, WaitsSpinBrieflyAndSleepOnlyWhenAskedAndRanksOutnumberTheirCpus) {
  cpu_set_t allowed;
  ASSERT_EQ(sched_getaffinity(0, sizeof allowed, &allowed), 0);
  int first = 0;
  while (first < CPU_SETSIZE && !CPU_ISSET(first, &allowed)) ++first;
  ASSERT_LT(first, CPU_SETSIZE);
  const std::string pin = "GRADWIRE_RUNTIME_LOG_LEVEL=info taskset -c " + std::to_string(first);
  const Outcome alone = run("shm", 1, "collectives 7", "GRADWIRE_RUNTIME_WAIT_SLEEP_US=-1 " + pin);
  expect_all_ok(alone, 1);
  EXPECT_EQ(count_of(alone.output, "1 ranks on this host, 1 CPUs usable: waits spin 1000 us before yielding"), 1)
      << alone.output;
  const Outcome sleeping = run("shm", 3, "collectives 7", "GRADWIRE_RUNTIME_WAIT_SLEEP_US=-1 " + pin);
  expect_all_ok(sleeping, 3);
  EXPECT_EQ(count_of(sleeping.output, "3 ranks on this host, 1 CPUs usable: waits spin 5 us before sleeping up to "
                                      "100 us between polls"),
            3)
      << sleeping.output;
  const Outcome yielding = run("shm", 3, "collectives 7", pin);
  expect_all_ok(yielding, 3);
  EXPECT_EQ(count_of(yielding.output, "3 ranks on this host, 1 CPUs usable: waits spin 5 us before yielding"), 3)
      << yielding.output;
}

// [transport.ucx] tcp_rx_segment: UCX's TCP transport receives into 512 KiB segments unless the
// configuration or UCX_TCP_RX_SEG_SIZE says otherwise; a value that is not a size is a configuration
// error on every rank (UCP itself would only warn and ignore it).
TEST(CommCreate, TcpReceiveSegmentsDefaultTo512KAndABadSizeIsAConfigError) {
  const std::string info = "GRADWIRE_RUNTIME_LOG_LEVEL=info";
  const Outcome plain = run("tcp", 2, "collectives 7", info);
  expect_all_ok(plain, 2);
  EXPECT_EQ(count_of(plain.output, "TCP receive segments of 512K ([transport.ucx] tcp_rx_segment)"), 2)
      << plain.output;
  const Outcome configured = run("tcp", 2, "collectives 7", info + " GRADWIRE_TRANSPORT_UCX_TCP_RX_SEGMENT=1m");
  expect_all_ok(configured, 2);
  EXPECT_EQ(count_of(configured.output, "TCP receive segments of 1m "), 2) << configured.output;
  const Outcome from_ucx = run("tcp", 2, "collectives 7", info + " UCX_TCP_RX_SEG_SIZE=64K");
  expect_all_ok(from_ucx, 2);
  EXPECT_EQ(count_of(from_ucx.output, "TCP receive segments"), 0) << from_ucx.output;
  expect_error_on(run("tcp", 2, "config-error", "GRADWIRE_TRANSPORT_UCX_TCP_RX_SEGMENT=banana"), all_ranks(2),
                  "GW_ERR_CONFIG", "tcp_rx_segment = \"banana\" is not a size");
}

TEST(CommCreate, DifferentConfigIsAnErrorOnEveryRankNamingTheKey) {
  expect_error_on(run("tcp", 3, "mismatch-config"), all_ranks(3), "GW_ERR_MISMATCH", "collectives.ring_threshold_bytes");
}

TEST(CommCreate, DifferentPluginVersionIsAnErrorOnEveryRank) {
  const Outcome o = run("tcp", 3, std::string("mismatch-version ") + MP_PROBE_DIR);
  expect_error_on(o, all_ranks(3), "GW_ERR_MISMATCH", "'mp_version_probe': 2.0.0 vs 1.0.0");
}

TEST(CommCreate, RankThatNeverStartsIsNamedOnTheOthers) {
  const Outcome o = run("tcp", 3, "missing-rank", "MP_TIMEOUT_S=3");
  EXPECT_EQ(o.code, 0) << o.output;
  expect_error_on(o, {0, 1}, "GW_ERR_TIMEOUT", "rank 2 did not arrive");
  EXPECT_NE(o.output.find("[runtime] timeout_s"), std::string::npos) << o.output;
}

// A member that is not scheduled while the root gives up (stopped here from 2.5 s to 7.5 s after its
// start, across the root's 5 s deadline) still reads the root's verdict when it runs again: the root
// keeps the endpoint open until the member has acknowledged its reply, rather than closing it under the
// unread reply. The 2.5 s before the stop leave a loaded machine time to start both ranks and deliver
// rank 1's record; the root may start up to 2.5 s late and still give up while rank 1 is stopped.
TEST(CommCreate, MemberStalledAcrossTheRootsDeadlineStillGetsTheVerdict) {
  const Outcome o = run("tcp", 3, "missing-rank-stalled", "MP_TIMEOUT_S=5 MP_STALL_AT_S=2.5 MP_STALL_S=5");
  EXPECT_EQ(o.code, 0) << o.output;
  expect_error_on(o, {0, 1}, "GW_ERR_TIMEOUT", "rank 2 did not arrive");
}

// A timeout that came from gw_comm_options.timeout_s is named as such, not as [runtime] timeout_s.
TEST(CommCreate, TimeoutMessagesNameWhereTheLimitCameFrom) {
  const Outcome o = run("tcp", 3, "missing-rank", "MP_TIMEOUT_S=60 MP_OPTIONS_TIMEOUT_S=3");
  expect_error_on(o, {0, 1}, "GW_ERR_TIMEOUT", "gw_comm_options.timeout_s");
  EXPECT_EQ(o.output.find("[runtime] timeout_s"), std::string::npos) << o.output;
}

// `mp_rank allgather-callback DIR r n ARGS` for every rank r, started here without a launcher: no GW_*
// variables, rank and size in gw_comm_options, the rendezvous through the application's allgather
// callback (files in DIR). Each rank's output lines are prefixed "[r] " as `gradwire run` does, and end
// with "[r] exit STATUS".
Outcome run_with_allgather_callback(const std::string& tls, int n, const std::string& args, const std::string& timeout_s) {
  char dir_template[] = "/tmp/gw-mp-allgather-XXXXXX";
  const char* dir = mkdtemp(dir_template);
  if (dir == nullptr) return Outcome{};
  std::string command = "(";
  for (int r = 0; r < n; ++r) {
    const std::string rank = std::to_string(r);
    command += "(env -u GW_RANK -u GW_WORLD_SIZE -u GW_LOCAL_RANK -u GW_ROOT_ADDR -u GW_ROOT_PORT UCX_TLS=" + tls +
               " MP_TIMEOUT_S=" + timeout_s + " " + MP_RANK + " allgather-callback " + dir + " " + rank + " " +
               std::to_string(n) + " " + args + " 2>&1; echo \"exit $?\") | sed -u 's/^/[" + rank + "] /' & ";
  }
  Outcome o = shell(command + "wait)");
  shell(std::string("rm -rf ") + dir);
  return o;
}

TEST(CommCreate, AllgatherCallbackInsteadOfTheRendezvous) {
  for (const std::string tls : {"shm", "tcp"}) {
    for (int n : {1, 3}) {
      SCOPED_TRACE(tls + ", ranks " + std::to_string(n));
      const Outcome o = run_with_allgather_callback(tls, n, "", "30");
      for (int r = 0; r < n; ++r) {
        EXPECT_NE(o.output.find("[" + std::to_string(r) + "] OK rank " + std::to_string(r)), std::string::npos) << o.output;
        EXPECT_NE(o.output.find("[" + std::to_string(r) + "] exit 0"), std::string::npos) << o.output;
      }
      EXPECT_EQ(count_of(o.output, "FAIL"), 0) << o.output;
    }
  }
}

// Rank 1's callback returns GW_ERR_TRANSPORT in its first call (the record sizes), then in its second
// (the records): its gw_comm_create fails with that status, saying the callback returned it. The
// others' callbacks give up after their own timeout (3 s) naming the rank they missed, and their
// gw_comm_create fails with GW_ERR_TIMEOUT; nobody hangs.
TEST(CommCreate, AllgatherCallbackErrorFailsThatRankAndTheOthersTimeOut) {
  for (const std::string call : {"1", "2"}) {
    SCOPED_TRACE("failing call " + call);
    const auto started = std::chrono::steady_clock::now();
    const Outcome o = run_with_allgather_callback("tcp", 3, "1:" + call, "3");
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    for (int r = 0; r < 3; ++r) EXPECT_NE(o.output.find("[" + std::to_string(r) + "] exit 0"), std::string::npos) << o.output;
    expect_error_on(o, {1}, "GW_ERR_TRANSPORT", "allgather callback (gw_comm_options.allgather) returned GW_ERR_TRANSPORT on rank 1 of 3, in its " +
                                                    std::string(call == "1" ? "first" : "second") + " call");
    for (int r : {0, 2}) {
      expect_error_on(o, {r}, "GW_ERR_TIMEOUT", "returned GW_ERR_TIMEOUT on rank " + std::to_string(r) + " of 3");
      EXPECT_NE(o.output.find("[" + std::to_string(r) + "] allgather-callback: call " + call + ": no record from rank 1 within 3 s"),
                std::string::npos) << o.output;
    }
    EXPECT_LT(seconds, 15.0) << o.output;
  }
}

// A callback that does not return the bytes in rank order would connect ranks to the wrong addresses:
// every rank whose own record is not at its index refuses, naming the rule.
TEST(CommCreate, AllgatherCallbackOutOfRankOrderIsRefused) {
  const Outcome o = run_with_allgather_callback("tcp", 2, "reverse", "30");
  for (int r = 0; r < 2; ++r) EXPECT_NE(o.output.find("[" + std::to_string(r) + "] exit 0"), std::string::npos) << o.output;
  expect_error_on(o, all_ranks(2), "GW_ERR_INVALID_ARGUMENT", "out must hold every rank's bytes in rank order");
}

// The launcher conventions: torchrun's, Open MPI's and Slurm's variables instead of GW_*.
TEST(CommCreate, TorchrunOpenMpiAndSlurmVariables) {
  const std::string prog = std::string(MP_RANK) + " collectives 7";
  for (const std::string name : {"torchrun", "Open MPI", "Slurm"}) {
    SCOPED_TRACE(name);
    const std::string port = std::to_string(free_port());
    const std::string root = " GW_ROOT_ADDR=127.0.0.1 GW_ROOT_PORT=" + port;
    std::string vars[2];
    for (int r = 0; r < 2; ++r) {
      const std::string rank = std::to_string(r);
      if (name == "torchrun")
        vars[r] = "RANK=" + rank + " WORLD_SIZE=2 LOCAL_RANK=" + rank + " MASTER_ADDR=127.0.0.1 MASTER_PORT=" + port;
      else if (name == "Open MPI")
        vars[r] = "OMPI_COMM_WORLD_RANK=" + rank + " OMPI_COMM_WORLD_SIZE=2" + root;
      else
        vars[r] = "SLURM_PROCID=" + rank + " SLURM_NTASKS=2" + root;
    }
    // Rank 1 starts first: it must wait for the root to come up.
    const Outcome o = shell("(env UCX_TLS=tcp MP_TIMEOUT_S=20 " + vars[1] + " " + prog +
                            " & sleep 0.2; env UCX_TLS=tcp MP_TIMEOUT_S=20 " + vars[0] + " " + prog + "; wait)");
    EXPECT_EQ(count_of(o.output, "OK rank"), 2) << o.output;
  }
}

// Under torchrun the launcher's store (and torch.distributed's) already listens on MASTER_PORT on the
// root's host: gradwire's rendezvous must not need that port, and several communicators must still
// meet. The test holds MASTER_PORT with a listening socket of its own, as torch's store would.
TEST(CommCreate, SeveralCommunicatorsUnderTorchrunVariablesBesideTorchsStore) {
  const int store = socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(store, 0);
  int port = 0;
  for (int attempt = 0; attempt < 100 && port == 0; ++attempt) {
    const int candidate = free_port() + 2 * attempt;
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_ANY);
    a.sin_port = htons(uint16_t(candidate));
    if (bind(store, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0 && listen(store, 8) == 0) port = candidate;
  }
  ASSERT_NE(port, 0) << "no free port for the emulated store";
  std::string cmd = "(";
  for (int r = 2; r >= 0; --r)
    cmd += "env UCX_TLS=tcp MP_TIMEOUT_S=20 RANK=" + std::to_string(r) + " WORLD_SIZE=3 LOCAL_RANK=" + std::to_string(r) +
           " MASTER_ADDR=127.0.0.1 MASTER_PORT=" + std::to_string(port) + " " + MP_RANK + " communicators" +
           (r > 0 ? " & " : "; wait)");
  const Outcome o = shell(cmd);
  close(store);
  EXPECT_EQ(count_of(o.output, "OK rank"), 3) << o.output;
  EXPECT_EQ(count_of(o.output, "FAIL"), 0) << o.output;
}

TEST(Run, StopsTheOtherRanksWhenOneFailsAndExitsWithItsStatus) {
  const Outcome o = run("tcp", 3, "fail-rank");
  EXPECT_EQ(o.code, 3) << o.output;
  EXPECT_NE(o.output.find("gradwire run: rank 1 exited with status 3; stopping the other 2 ranks"), std::string::npos)
      << o.output;
  EXPECT_EQ(count_of(o.output, "OK rank"), 0) << o.output;
}

TEST(Run, PrefixesEveryLineWithTheRank) {
  const Outcome o = shell(std::string(GW_CLI) + " run -n 3 -- sh -c 'echo one; echo two >&2; printf three'");
  EXPECT_EQ(o.code, 0) << o.output;
  for (int r = 0; r < 3; ++r)
    for (const char* word : {"one", "two", "three"})
      EXPECT_NE(o.output.find("[" + std::to_string(r) + "] " + word + "\n"), std::string::npos) << o.output;
}

// Every rank's program gets exactly the words from PROG on: a "--" of its own, options that look like
// run's (-n, --link, --keep-going, --grace), with or without a "--" before PROG. The options before PROG
// are still run's (two ranks, --keep-going, --grace).
TEST(Run, PassesTheProgramsArgumentsThroughUnchanged) {
  const std::string prog = std::string(MP_RANK) + " print-argv";
  struct Case {
    std::string run_args;  // between `gradwire run` and the program's own words
    std::string prog_args;
    int ranks;
    std::string expected;  // what the program prints
  };
  const Case cases[] = {
      {"-n 1", "a -- -z", 1, "argv: [a] [--] [-z]"},
      {"-n 2 --", "-x --y z", 2, "argv: [-x] [--y] [z]"},
      {"-n 2", "-n 5 --link 1gbit --keep-going --grace 0", 2, "argv: [-n] [5] [--link] [1gbit] [--keep-going] [--grace] [0]"},
      {"-n 1 --", "-n 5 --link=1gbit -- --", 1, "argv: [-n] [5] [--link=1gbit] [--] [--]"},
      {"--keep-going -n 2 --grace 1 --", "run -n 3", 2, "argv: [run] [-n] [3]"},
      {"--ranks=3", "--help --version", 3, "argv: [--help] [--version]"},
      {"-n 1", "", 1, "argv:"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE("gradwire run " + c.run_args + " PROG " + c.prog_args);
    const Outcome o = shell(std::string(GW_CLI) + " run " + c.run_args + " " + prog + " " + c.prog_args);
    EXPECT_EQ(o.code, 0) << o.output;
    for (int r = 0; r < c.ranks; ++r)
      EXPECT_NE(o.output.find("[" + std::to_string(r) + "] " + c.expected + "\n"), std::string::npos) << o.output;
    EXPECT_EQ(count_of(o.output, "argv:"), c.ranks) << o.output;
  }
}

// An unknown option before PROG is an error of run's (not taken for the program), and so is no PROG.
TEST(Run, RefusesAnUnknownOptionBeforeTheProgramAndAMissingProgram) {
  Outcome o = shell(std::string(GW_CLI) + " run -n 1 --bogus " + MP_RANK + " print-argv");
  EXPECT_NE(o.code, 0) << o.output;
  EXPECT_NE(o.output.find("--bogus"), std::string::npos) << o.output;
  EXPECT_EQ(count_of(o.output, "argv:"), 0) << o.output;
  o = shell(std::string(GW_CLI) + " run -n 1 --");
  EXPECT_NE(o.code, 0) << o.output;
  EXPECT_NE(o.output.find("give the program to start"), std::string::npos) << o.output;
}

TEST(Run, ReportsAProgramThatCannotStart) {
  const Outcome o = shell(std::string(GW_CLI) + " run -n 2 -- /nonexistent/program");
  EXPECT_EQ(o.code, 127) << o.output;
  EXPECT_NE(o.output.find("cannot start '/nonexistent/program'"), std::string::npos) << o.output;
}

}  // namespace
