#include <gtest/gtest.h>

#include "support/plot.hpp"

namespace {

TEST(Plot, NiceTicksAreRoundAndCoverTheRange) {
  EXPECT_EQ(gwtrain::nice_ticks(0, 10), (std::vector<double>{0, 2, 4, 6, 8, 10}));
  const auto t = gwtrain::nice_ticks(0.8, 0.9);
  EXPECT_LE(t.front(), 0.8 + 1e-12);
  EXPECT_GE(t.back(), 0.9 - 1e-12);
  EXPECT_NEAR(t[1] - t[0], 0.02, 1e-12);
  EXPECT_EQ(gwtrain::nice_ticks(3, 3), (std::vector<double>{3}));
}

TEST(Plot, OnePolylinePerSeriesPerPanelAndALegend) {
  std::vector<gwtrain::Series> s{{"none", {0, 1e6, 2e6}, {0, 1, 2}, {0.5, 0.8, 0.86}},
                                 {"a<b", {0, 1e5}, {0, 1.5}, {0.5, 0.84}}};
  const std::string svg = gwtrain::accuracy_svg(s, 0.8833, "reference");
  size_t polylines = 0;
  for (size_t at = 0; (at = svg.find("<polyline", at)) != std::string::npos; ++at) ++polylines;
  EXPECT_EQ(polylines, 4u);
  EXPECT_NE(svg.find(">none<"), std::string::npos);
  EXPECT_NE(svg.find(">a&lt;b<"), std::string::npos);  // names are escaped
  EXPECT_NE(svg.find("bytes sent per rank (MB)"), std::string::npos);
  EXPECT_NE(svg.find("training time (s)"), std::string::npos);
  EXPECT_NE(svg.find("stroke-dasharray"), std::string::npos);  // the reference line
  EXPECT_EQ(svg.rfind("</svg>"), svg.size() - 7);
}

}  // namespace
