// The string helpers of the runtime's messages.
#include <gtest/gtest.h>

#include "core/strings.hpp"

TEST(Strings, RankListNamesOneOrSeveral) {
  EXPECT_EQ(gw::rank_list({3}), "rank 3");
  EXPECT_EQ(gw::rank_list({1, 2}), "ranks 1 and 2");
  EXPECT_EQ(gw::rank_list({1, 2, 5}), "ranks 1, 2 and 5");
}

TEST(Strings, RankListCapsWhatItNames) {
  std::vector<uint32_t> many;
  for (uint32_t r = 0; r < 40; ++r) many.push_back(r);
  const std::string text = gw::rank_list(many, 4);
  EXPECT_EQ(text, "ranks 0, 1, 2, 3 and 36 more");
  EXPECT_NE(gw::rank_list(many).find("and 24 more"), std::string::npos) << gw::rank_list(many);
}
