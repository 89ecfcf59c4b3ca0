// Drives the rank programs of tests/sync through `gradwire run -n N`: each case passes when every rank
// printed "OK rank r" (or, for an error case, the expected error with the expected words) and the
// launcher exited 0.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "gw_test.hpp"

namespace {

// Runs `program args` on `ranks` ranks and expects every rank to finish with "OK rank r".
void expect_ok(int ranks, const std::string& program, const std::string& args) {
  gwtest::expect_every_rank_ok(gwtest::run_command(gwtest::launch_command(ranks, program, args)), ranks);
}

// Expects every rank to report `status` with a message containing `words` (`flags`: more options of
// `gradwire run`, such as --ranks-per-node 2).
void expect_error(int ranks, const std::string& program, const std::string& args, const std::string& status,
                  const std::string& words, const std::string& flags = "") {
  // Nodes reach each other over TCP (their ranks over shared memory: the programs' [transport] intra).
  const std::string env = flags.empty() ? "" : "UCX_TLS=tcp ";
  const auto r = gwtest::run_command(env + gwtest::launch_command(ranks, program, args, flags, 20));
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

// ---- compressed allreduce ---------------------------------------------------------------------

TEST(CompressedAllreduce, EveryCodecOnTwoRanks) { expect_ok(2, GW_COMPRESSED_RANK, "all"); }
TEST(CompressedAllreduce, EveryCodecOnThreeRanks) { expect_ok(3, GW_COMPRESSED_RANK, "all"); }
TEST(CompressedAllreduce, DenseAndSparseCodecsOnFiveRanks) {
  for (const char* codec : {"fp16", "int8", "topk", "randomk", "sparseq"}) expect_ok(5, GW_COMPRESSED_RANK, codec);
}
TEST(CompressedAllreduce, OnebitAndNoneOnFourRanks) {
  for (const char* codec : {"none", "onebit", "bf16"}) expect_ok(4, GW_COMPRESSED_RANK, codec);
}
TEST(CompressedAllreduce, HalfPrecisionTensorsAreStagedThroughF32) { expect_ok(3, GW_COMPRESSED_RANK, "half"); }
TEST(CompressedAllreduce, ErrorFeedbackInsideTheCollectiveKeepsTheSumWithinAStepsError) {
  expect_ok(3, GW_COMPRESSED_RANK, "ef");
}
TEST(CompressedAllreduce, BadArgumentsAreRefused) { expect_ok(2, GW_COMPRESSED_RANK, "errors"); }
TEST(CompressedAllreduce, RanksWithDifferentCodecsGetAMismatch) {
  expect_error(3, GW_COMPRESSED_RANK, "mismatch", "GW_ERR_MISMATCH", "codec id");
}

// ---- compressed reduce-scatter and allgather (shards_rank) -------------------------------------

TEST(CompressedShards, EveryCodecOnTwoRanks) { expect_ok(2, GW_SHARDS_RANK, "all"); }
TEST(CompressedShards, EveryCodecOnFourRanks) { expect_ok(4, GW_SHARDS_RANK, "all"); }
TEST(CompressedShards, EveryCodecOnThreeRanks) {
  for (const char* codec : {"none", "int8", "topk"}) expect_ok(3, GW_SHARDS_RANK, codec);
}
// 4 and 6 ranks as nodes of 2: shared memory inside a node, TCP between, every message routed; the flat
// algorithms ("routed": [collectives] two_level = "off") and the two-level ones.
TEST(CompressedShards, EveryCodecOverNodesFlatAndTwoLevel) {
  for (const char* ranks : {"4", "6"})
    for (const char* mode : {"routed", "two-level"}) {
      SCOPED_TRACE(std::string(ranks) + " ranks " + mode);
      const auto r = gwtest::run_command(
          "UCX_TLS=tcp " + gwtest::launch_command(std::atoi(ranks), GW_SHARDS_RANK, std::string("all ") + mode,
                                                  "--ranks-per-node 2"));
      gwtest::expect_every_rank_ok(r, std::atoi(ranks));
    }
}
TEST(CompressedShards, ErrorFeedbackOverTwoLevelNodes) {
  gwtest::expect_every_rank_ok(
      gwtest::run_command("UCX_TLS=tcp " +
                          gwtest::launch_command(4, GW_SHARDS_RANK, "ef two-level", "--ranks-per-node 2")),
      4);
}
TEST(CompressedShards, Bf16TensorsAreStagedThroughF32) {
  expect_ok(2, GW_SHARDS_RANK, "bf16");
  expect_ok(4, GW_SHARDS_RANK, "bf16");
}
TEST(CompressedShards, ErrorFeedbackKeepsTheSumWithinACallsError) {
  expect_ok(2, GW_SHARDS_RANK, "ef");
  expect_ok(4, GW_SHARDS_RANK, "ef");
}
TEST(CompressedShards, BadArgumentsAreRefused) {
  expect_ok(2, GW_SHARDS_RANK, "errors");
  expect_ok(3, GW_SHARDS_RANK, "errors");
}
TEST(CompressedShards, RanksWithDifferentCodecsGetAMismatch) {
  expect_error(2, GW_SHARDS_RANK, "mismatch-codec", "GW_ERR_MISMATCH", "codec id");
  expect_error(4, GW_SHARDS_RANK, "mismatch-codec", "GW_ERR_MISMATCH", "codec id");
}
TEST(CompressedShards, RanksWithDifferentCountsGetAMismatch) {
  expect_error(4, GW_SHARDS_RANK, "mismatch-count", "GW_ERR_MISMATCH", "count: ");
  expect_error(4, GW_SHARDS_RANK, "mismatch-allgather", "GW_ERR_MISMATCH", "count: ");
}
TEST(CompressedShards, MismatchesOverTwoLevelNodes) {
  const std::string nodes = "--ranks-per-node 2";
  expect_error(4, GW_SHARDS_RANK, "mismatch-codec two-level", "GW_ERR_MISMATCH", "codec id", nodes);
  expect_error(4, GW_SHARDS_RANK, "mismatch-count two-level", "GW_ERR_MISMATCH", "count: ", nodes);
  expect_error(4, GW_SHARDS_RANK, "mismatch-allgather two-level", "GW_ERR_MISMATCH", "count: ", nodes);
}

// ---- synchronizer ------------------------------------------------------------------------------

TEST(Sync, BucketsFollowSizeCodecAndRules) {
  expect_ok(2, GW_SYNC_RANK, "buckets");
  expect_ok(3, GW_SYNC_RANK, "buckets");
}
TEST(Sync, BucketsCompleteOutOfOrder) { expect_ok(3, GW_SYNC_RANK, "out-of-order"); }
TEST(Sync, EveryStepContract) { expect_ok(3, GW_SYNC_RANK, "schedule every_step"); }
TEST(Sync, AccumulateContract) { expect_ok(3, GW_SYNC_RANK, "schedule accumulate"); }
TEST(Sync, LocalSgdContract) { expect_ok(3, GW_SYNC_RANK, "schedule local_sgd"); }
TEST(Sync, AsyncStalenessIsExactlyS) { expect_ok(2, GW_SYNC_RANK, "schedule async"); }
TEST(Sync, SkippedStepLeavesNoTrace) { expect_ok(2, GW_SYNC_RANK, "skip"); }
TEST(Sync, AnExchangeInFlightMovesWhileTheApplicationMakesNoCall) {
  // Rank 0 stays out of gw_sync after starting the exchange until rank 1 has finished it (sync_rank.cpp).
  for (const char* schedule : {"async", "diloco"}) {
    gwtest::TempDir dir;
    expect_ok(2, GW_SYNC_RANK, std::string("background-progress ") + schedule + " " + (dir.path / "finished").string());
  }
}
TEST(Sync, ErrorFeedbackKeptOnlyForTheListedCodecs) { expect_ok(2, GW_SYNC_RANK, "error-feedback-codecs"); }
TEST(Sync, SaveRestoreContinuesExactly) {
  expect_ok(2, GW_SYNC_RANK, "save-restore async int8");
  expect_ok(2, GW_SYNC_RANK, "save-restore accumulate topk");
  expect_ok(3, GW_SYNC_RANK, "save-restore every_step onebit");
  expect_ok(2, GW_SYNC_RANK, "save-restore async fp16");
  expect_ok(2, GW_SYNC_RANK, "save-restore every_step onebit 0.9");
  expect_ok(2, GW_SYNC_RANK, "save-restore local_sgd int8");
}
TEST(Sync, MomentumInTheSynchronizerIsMomentumOnTheAverage) { expect_ok(3, GW_SYNC_RANK, "momentum"); }
TEST(Sync, LocalSgdAveragesParametersThroughACodec) {
  expect_ok(3, GW_SYNC_RANK, "local-sgd-codec int8");
  expect_ok(2, GW_SYNC_RANK, "local-sgd-codec onebit");
}
TEST(Sync, BadCallsAreRefused) { expect_ok(2, GW_SYNC_RANK, "errors"); }
TEST(Sync, DifferentRegistrationsAreAMismatch) {
  expect_error(3, GW_SYNC_RANK, "mismatch", "GW_ERR_MISMATCH", "Tensor #1: rank 0 registered 'b'");
}

// ---- the outer loop (schedule diloco) ------------------------------------------------------------

// Against a reference outer optimizer computed in the test: Nesterov and heavy ball, one fragment and
// streamed fragments with a delayed outer update.
TEST(Diloco, OuterStepsFollowTheReferenceOptimizer) {
  expect_ok(2, GW_DILOCO_RANK, "reference none 1 0");
  expect_ok(2, GW_DILOCO_RANK, "reference none 1 0 heavy");
  expect_ok(3, GW_DILOCO_RANK, "reference none 3 2");
}
TEST(Diloco, RanksEndBitIdenticalThroughLossyCodecs) {
  expect_ok(2, GW_DILOCO_RANK, "identical int8 1 0");
  expect_ok(4, GW_DILOCO_RANK, "identical int8 1 0");
  expect_ok(2, GW_DILOCO_RANK, "identical topk 2 0");
  expect_ok(4, GW_DILOCO_RANK, "identical onebit 3 2");
  expect_ok(2, GW_DILOCO_RANK, "identical sparseq 1 0");  // SparseLoCo's pseudo-gradient codec
}
TEST(Diloco, SaveRestoreEqualsAnUninterruptedRun) {
  expect_ok(2, GW_DILOCO_RANK, "save-restore int8 1 0");
  expect_ok(2, GW_DILOCO_RANK, "save-restore topk 3 2");  // saved with an exchange in flight
  expect_ok(2, GW_DILOCO_RANK, "save-restore sparseq 3 2");
}
TEST(Diloco, BadInputFailsOnEveryRank) {
  expect_error(2, GW_DILOCO_RANK, "bad no-parameter", "GW_ERR_STATE", "registered without one");
  expect_error(2, GW_DILOCO_RANK, "bad fragments", "GW_ERR_INVALID_ARGUMENT", "at most 3 fragments");
  expect_error(2, GW_DILOCO_RANK, "bad delay", "GW_ERR_INVALID_ARGUMENT", "delay = 4 is not less than inner_steps");
  expect_error(2, GW_DILOCO_RANK, "bad inner-steps", "GW_ERR_CONFIG", "inner_steps");
  expect_error(3, GW_DILOCO_RANK, "bad ranks-disagree", "GW_ERR_MISMATCH", "configured schedule 'diloco' differently");
}

// ---- convergence on real data -----------------------------------------------------------------

TEST(Sync, EveryCodecAndScheduleConvergesLikeUncompressed) {
  expect_ok(2, GW_CONVERGENCE_RANK, "");
  expect_ok(4, GW_CONVERGENCE_RANK, "");
}

// The same on 4 ranks as 2 nodes of 2: [collectives] two_level = "auto" runs every compressed bucket
// through the two-level allreduce (docs/two-level.md).
TEST(Sync, EveryCodecAndScheduleConvergesOverTwoLevelNodes) {
  gwtest::expect_every_rank_ok(
      gwtest::run_command(gwtest::launch_command(4, GW_CONVERGENCE_RANK, "", "--ranks-per-node 2")), 4);
}

// Mixed precision: bf16 gradients through gw_sync end within 0.5 accuracy points of f32 gradients.
TEST(Sync, Bf16GradientsTrainLikeF32) { expect_ok(2, GW_CONVERGENCE_RANK, "mixed"); }

// ---- benchmark P6 smoke run (figures are not asserted: timing belongs to `gradwire bench`) ----------

TEST(BenchP6, QuickRunReportsEveryCodecWithItsCompressionRatio) {
  const auto r = gwtest::run_command(std::string(GW_CLI) + " bench --suite P6 --quick --repetitions 1 --json");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  for (const char* codec : {"\"case\":\"int8 ", "\"case\":\"fp16 ", "\"case\":\"onebit "})
    EXPECT_NE(r.output.find(codec), std::string::npos) << codec << " missing:\n" << r.output;
  size_t lines = 0;
  for (size_t at = 0; (at = r.output.find("\"compression_ratio\":", at)) != std::string::npos; ++at) ++lines;
  EXPECT_EQ(lines, 3u) << r.output;
}

// ---- powersgd: a codec of rounds (ABI 1.4) ------------------------------------------------------

TEST(PowerSgd, EveryRankBitIdenticalAndRankOneSumsExact) {
  expect_ok(2, GW_POWERSGD_RANK, "identical");
  expect_ok(3, GW_POWERSGD_RANK, "identical");
}
TEST(PowerSgd, OneRank) { expect_ok(1, GW_POWERSGD_RANK, "identical"); }
TEST(PowerSgd, AverageDividesOnce) { expect_ok(3, GW_POWERSGD_RANK, "avg"); }
TEST(PowerSgd, Int8FactorsStayIdenticalAndClose) {
  expect_ok(3, GW_POWERSGD_RANK, "int8");
  expect_ok(2, GW_POWERSGD_RANK, "int8-noef");
}
TEST(PowerSgd, ErrorFeedbackSendsWhatWasDropped) {
  expect_ok(2, GW_POWERSGD_RANK, "ef");
  expect_ok(2, GW_POWERSGD_RANK, "no-ef");
}
TEST(PowerSgd, WarmStartAndResidualsCheckpoint) { expect_ok(2, GW_POWERSGD_RANK, "checkpoint"); }
TEST(PowerSgd, SyncShapesReachTheCodecAndCheckpoint) { expect_ok(2, GW_POWERSGD_RANK, "sync"); }
// [bucket] rounds_batch: the buckets' rounds in one collective per round, bit-identical to one bucket at a
// time (all buckets in one batch, and batches of two), while each rank marks the buckets ready in its own
// order (ranks configured with another rounds_batch are refused by gw_comm_create's configuration check).
TEST(PowerSgd, BatchedRoundsEqualOneBucketAtATime) {
  expect_ok(2, GW_POWERSGD_RANK, "batched");
  expect_ok(3, GW_POWERSGD_RANK, "batched");
  expect_ok(4, GW_POWERSGD_RANK, "batched 2");
}
// gw_allreduce_compressed_batch (ABI 1.6, what the PyTorch hook batches through) == one call per buffer.
TEST(PowerSgd, BatchCallEqualsOneCallPerBuffer) {
  expect_ok(2, GW_POWERSGD_RANK, "batch-api");
  expect_ok(4, GW_POWERSGD_RANK, "batch-api");
}
TEST(PowerSgd, BadInputIsRefusedOnEveryRank) {
  expect_error(2, GW_POWERSGD_RANK, "bad-shape", "GW_ERR_INVALID_ARGUMENT", "does not fit in the buffer");
  expect_error(2, GW_POWERSGD_RANK, "bad-product", "GW_ERR_INVALID_ARGUMENT", "holds 105 elements but the tensor has 100");
  expect_error(2, GW_POWERSGD_RANK, "with-ef", "GW_ERR_UNSUPPORTED", "keeps its own error feedback");
}
