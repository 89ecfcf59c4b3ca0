// Drives shards_rank (the compressed reduce-scatter and allgather, gw_reduce_scatter_compressed and
// gw_allgather_compressed) through `gradwire run -n N` over UCX: each case passes when every rank printed
// "OK rank r" (or, for an error case, the expected error with the expected words) and the launcher
// exited 0. The ranks check the bits themselves (shards_rank.cpp).
#include <gtest/gtest.h>

#include <string>

#include "gw_test.hpp"

namespace {

std::string launch(int ranks, const std::string& args) {
  return std::string(GW_CLI) + " run -n " + std::to_string(ranks) + " -- " + GW_SHARDS_RANK + " " + args;
}

void expect_ok(int ranks, const std::string& args) {
  const auto r = gwtest::run_command("MP_TIMEOUT_S=60 " + launch(ranks, args));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  for (int rank = 0; rank < ranks; ++rank)
    EXPECT_NE(r.output.find("OK rank " + std::to_string(rank)), std::string::npos)
        << "rank " << rank << " did not finish:\n"
        << r.output;
}

// Every rank reports `status` with a message containing `words`.
void expect_error(int ranks, const std::string& args, const std::string& status, const std::string& words) {
  const auto r = gwtest::run_command("MP_TIMEOUT_S=20 " + launch(ranks, args));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  for (int rank = 0; rank < ranks; ++rank) {
    const std::string prefix = "[" + std::to_string(rank) + "] EXPECTED-ERROR " + status;
    const size_t at = r.output.find(prefix);
    ASSERT_NE(at, std::string::npos) << "rank " << rank << " did not report " << status << ":\n" << r.output;
    const std::string line = r.output.substr(at, r.output.find('\n', at) - at);
    EXPECT_NE(line.find(words), std::string::npos) << line;
  }
}

}  // namespace

TEST(CompressedShards, EveryCodecOnTwoRanks) { expect_ok(2, "all"); }
TEST(CompressedShards, EveryCodecOnFourRanks) { expect_ok(4, "all"); }
TEST(CompressedShards, EveryCodecOnThreeRanks) {
  for (const char* codec : {"none", "int8", "topk"}) expect_ok(3, codec);
}
TEST(CompressedShards, Bf16TensorsAreStagedThroughF32) {
  expect_ok(2, "bf16");
  expect_ok(4, "bf16");
}
TEST(CompressedShards, ErrorFeedbackKeepsTheSumWithinACallsError) {
  expect_ok(2, "ef");
  expect_ok(4, "ef");
}
TEST(CompressedShards, BadArgumentsAreRefused) {
  expect_ok(2, "errors");
  expect_ok(3, "errors");
}
TEST(CompressedShards, RanksWithDifferentCodecsGetAMismatch) {
  expect_error(2, "mismatch-codec", "GW_ERR_MISMATCH", "codec id");
  expect_error(4, "mismatch-codec", "GW_ERR_MISMATCH", "codec id");
}
TEST(CompressedShards, RanksWithDifferentCountsGetAMismatch) {
  expect_error(4, "mismatch-count", "GW_ERR_MISMATCH", "count: ");
  expect_error(4, "mismatch-allgather", "GW_ERR_MISMATCH", "count: ");
}
