// Drives tests/ps/ps_rank through `gradwire run -n N`: a case passes when every rank that should finish
// printed "OK rank r", and, for a failure case, every surviving rank reported the expected error.
#include <gtest/gtest.h>

#include <string>

#include "gw_test.hpp"

namespace {

gwtest::CommandResult run(int ranks, const std::string& args) {
  return gwtest::run_command(gwtest::launch_command(ranks, GW_PS_RANK, args));
}

void expect_ok(int ranks, const std::string& args) { gwtest::expect_every_rank_ok(run(ranks, args), ranks); }

}  // namespace

// Synchronous: the same trajectory as allreduce training with the same SGD with momentum.
TEST(ParameterServer, SyncEqualsAllreduceTraining) {
  expect_ok(3, "sync-equals-allreduce 1 none");  // one server, two workers
  expect_ok(5, "sync-equals-allreduce 2 none");  // two servers (two shards), three workers
}
// Synchronous through int8 with error feedback on the workers: close to the uncompressed trajectory.
TEST(ParameterServer, SyncThroughACodecWithErrorFeedback) { expect_ok(3, "sync-equals-allreduce 1 int8"); }
// Asynchronous: a push older than the staleness bound is dropped; versions count per shard.
TEST(ParameterServer, AsyncDropsPushesOverTheStalenessBound) { expect_ok(4, "async-staleness"); }
// Asynchronous: a worker that dies does not stop the others; the server counts it dead and finishes.
TEST(ParameterServer, AsyncSurvivesADeadWorker) { expect_ok(4, "dead-worker"); }
// A server that dies is an error naming it on every worker and on the other server.
TEST(ParameterServer, DeadServerIsAnErrorNamingIt) {
  const auto r = run(4, "dead-server");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  for (int rank : {0, 2, 3}) {
    const std::string prefix = "[" + std::to_string(rank) + "] EXPECTED-ERROR";
    const size_t at = r.output.find(prefix);
    ASSERT_NE(at, std::string::npos) << "rank " << rank << " did not report the dead server:\n" << r.output;
    const std::string line = r.output.substr(at, r.output.find('\n', at) - at);
    EXPECT_NE(line.find("parameter server rank 1"), std::string::npos) << line;
  }
}
// Bad arguments are refused with a message.
TEST(ParameterServer, BadArgumentsAreRefused) { expect_ok(2, "errors"); }
