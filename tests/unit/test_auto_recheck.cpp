// The auto codec's re-decision rule (runtime/sync/auto_codec.hpp): a re-measurement confirms the earlier
// choice only when it picks the same codec with about the same prediction.
#include <gtest/gtest.h>

#include "sync/auto_codec.hpp"

using gw::sync::AutoChoice;
using gw::sync::remeasure_confirms;

TEST(AutoRecheck, TheSameCodecWithinTheDriftFactorConfirms) {
  EXPECT_TRUE(remeasure_confirms("int8", 2.7e-3, AutoChoice{"int8", "", 3.4e-3}, 2.0));
  EXPECT_TRUE(remeasure_confirms("int8", 3.4e-3, AutoChoice{"int8", "", 2.7e-3}, 2.0));
  EXPECT_TRUE(remeasure_confirms("none", 1e-3, AutoChoice{"none", "", 2e-3}, 2.0));  // the factor itself
}

TEST(AutoRecheck, APredictionThatMovedPastTheFactorDoesNot) {
  // The link changed: the new prediction is the one to expect.
  EXPECT_FALSE(remeasure_confirms("int8", 1e-3, AutoChoice{"int8", "", 2.5e-3}, 2.0));
  EXPECT_FALSE(remeasure_confirms("int8", 2.5e-3, AutoChoice{"int8", "", 1e-3}, 2.0));
}

TEST(AutoRecheck, AnotherCodecOrNoEarlierPredictionDoesNot) {
  EXPECT_FALSE(remeasure_confirms("int8", 3e-3, AutoChoice{"topk", "", 3e-3}, 2.0));
  EXPECT_FALSE(remeasure_confirms("int8", 0, AutoChoice{"int8", "", 3e-3}, 2.0));  // from a checkpoint
  EXPECT_FALSE(remeasure_confirms("int8", 3e-3, AutoChoice{"int8", "", 0}, 2.0));
}

using gw::sync::AutoCandidate;
using gw::sync::choice_under_drift;

// Behind a slow link top-k wins by far: its exchange running 3x faster (or slower) than predicted
// cannot make another codec faster, whether the gap is the link's or the work's.
TEST(AutoRecheck, ADriftThatCannotChangeTheChoiceKeepsIt) {
  const std::vector<AutoCandidate> slow_link = {
      {"none", 0.937, 0.002}, {"int8", 0.234, 0.004}, {"topk", 0.020, 0.005}};
  EXPECT_EQ(choice_under_drift(slow_link, "topk", 0.0074, 0.05), "topk");
  EXPECT_EQ(choice_under_drift(slow_link, "topk", 0.075, 0.05), "topk");
}

// On a fast link int8 wins narrowly: if the gap is the work's (codecs slower in place), uncompressed
// would win, so the drift may change the choice and the link is measured again.
TEST(AutoRecheck, ADriftThatMayChangeTheChoiceMeasuresAgain) {
  const std::vector<AutoCandidate> fast_link = {{"none", 0.0047, 0.0003}, {"int8", 0.0012, 0.0018}};
  EXPECT_EQ(choice_under_drift(fast_link, "int8", 0.007, 0.05), "");
  // A file that claimed a far slower link than this one: measured hundreds of times faster.
  const std::vector<AutoCandidate> claimed = {{"none", 7.5, 0.002}, {"topk", 0.16, 0.005}};
  EXPECT_EQ(choice_under_drift(claimed, "topk", 0.004, 0.05), "");
  // No candidate under that name (a checkpoint's codec): measure.
  EXPECT_EQ(choice_under_drift(fast_link, "topk", 0.007, 0.05), "");
}

// Uncompressed stays while no codec beats it by the margin after rescaling; a link twice as slow as
// predicted would make fp16 pay, so that drift measures again.
TEST(AutoRecheck, UncompressedKeptOnlyWhileNoCodecBeatsItByTheMargin) {
  const std::vector<AutoCandidate> lan = {{"none", 0.002, 0.0001}, {"fp16", 0.001, 0.0012}};
  EXPECT_EQ(choice_under_drift(lan, "none", 0.0025, 0.05), "none");
  EXPECT_EQ(choice_under_drift(lan, "none", 0.0042, 0.05), "");
}
