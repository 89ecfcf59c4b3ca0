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
