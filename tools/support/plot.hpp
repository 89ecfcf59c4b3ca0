// The picture `gradwire train` writes: test accuracy against cumulative bytes on the wire (left) and
// against training time (right), one polyline per configuration, axes with ticks, a legend and the
// data set's reference accuracy as a dashed line. Plain SVG text, no library.
#pragma once

#include <string>
#include <vector>

namespace gwtrain {

struct Series {
  std::string name;
  std::vector<double> bytes;     // cumulative bytes sent per rank at each point
  std::vector<double> seconds;   // training time at each point
  std::vector<double> accuracy;  // test accuracy at each point
};

// Up to ~`target` round tick values (1, 2 or 5 times a power of ten) covering [lo, hi].
std::vector<double> nice_ticks(double lo, double hi, int target = 6);

std::string accuracy_svg(const std::vector<Series>& series, double reference, const std::string& reference_label);

}  // namespace gwtrain

namespace gwtrain {

// A general line chart in the same style (chart.cpp), used by `gradwire simulate`: one polyline per
// line, linear or logarithmic axes (log: ticks at 1, 2, 5 times powers of ten), a legend and notes
// under the title.
struct Line {
  std::string name;
  std::vector<double> x, y;
  bool dashed = false;
};
struct ChartSpec {
  std::string title, x_label, y_label;
  bool log_x = false, log_y = false;
  std::vector<std::string> notes;
};
std::string line_chart_svg(const std::vector<Line>& lines, const ChartSpec& spec);

}  // namespace gwtrain
