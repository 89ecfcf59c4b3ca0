#include "support/plot.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <sstream>

namespace gwtrain {
namespace {

constexpr double kPanelW = 420, kPanelH = 300, kLeft = 70, kTop = 40, kGap = 90, kBottom = 60, kLegendW = 270;
const char* const kColors[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd",
                               "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};

std::string fmt(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.6g", v);
  return buf;
}

std::string escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '&': out += "&amp;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

struct Range {
  double lo = std::numeric_limits<double>::infinity();
  double hi = -std::numeric_limits<double>::infinity();
  void add(double v) {
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  }
  void settle() {  // an empty or single-valued range still gets a width
    if (!(lo <= hi)) lo = 0, hi = 1;
    if (hi - lo < 1e-12) hi = lo + (lo == 0 ? 1 : std::abs(lo) * 0.1);
  }
};

// One panel: x from `pick` of each series, y the accuracy, with the reference line.
void panel(std::ostringstream& svg, double ox, const std::vector<Series>& series,
           std::vector<double> Series::*pick, double x_scale, const std::string& x_label, Range y,
           double reference) {
  Range x;
  x.add(0);
  for (const auto& s : series)
    for (double v : s.*pick) x.add(v / x_scale);
  x.settle();
  const std::vector<double> xt = nice_ticks(x.lo, x.hi), yt = nice_ticks(y.lo, y.hi);
  x.hi = std::max(x.hi, xt.back());
  auto px = [&](double v) { return ox + (v - x.lo) / (x.hi - x.lo) * kPanelW; };
  auto py = [&](double v) { return kTop + kPanelH - (v - y.lo) / (y.hi - y.lo) * kPanelH; };

  svg << "<rect x='" << ox << "' y='" << kTop << "' width='" << kPanelW << "' height='" << kPanelH
      << "' fill='none' stroke='#333'/>\n";
  for (double t : xt) {
    if (t < x.lo - 1e-9 || t > x.hi + 1e-9) continue;
    svg << "<line x1='" << fmt(px(t)) << "' y1='" << kTop << "' x2='" << fmt(px(t)) << "' y2='" << kTop + kPanelH
        << "' stroke='#ddd'/>\n<text x='" << fmt(px(t)) << "' y='" << kTop + kPanelH + 18
        << "' text-anchor='middle'>" << fmt(t) << "</text>\n";
  }
  for (double t : yt) {
    if (t < y.lo - 1e-9 || t > y.hi + 1e-9) continue;
    svg << "<line x1='" << ox << "' y1='" << fmt(py(t)) << "' x2='" << ox + kPanelW << "' y2='" << fmt(py(t))
        << "' stroke='#ddd'/>\n<text x='" << ox - 6 << "' y='" << fmt(py(t) + 4) << "' text-anchor='end'>" << fmt(t)
        << "</text>\n";
  }
  svg << "<text x='" << ox + kPanelW / 2 << "' y='" << kTop + kPanelH + 42 << "' text-anchor='middle'>"
      << escape(x_label) << "</text>\n";
  svg << "<text transform='translate(" << ox - 50 << "," << kTop + kPanelH / 2
      << ") rotate(-90)' text-anchor='middle'>test accuracy</text>\n";
  if (reference > y.lo && reference < y.hi)
    svg << "<line x1='" << ox << "' y1='" << fmt(py(reference)) << "' x2='" << ox + kPanelW << "' y2='"
        << fmt(py(reference)) << "' stroke='#000' stroke-dasharray='6,4'/>\n";
  for (size_t i = 0; i < series.size(); ++i) {
    const auto& s = series[i];
    const auto& xs = s.*pick;
    svg << "<polyline fill='none' stroke-width='2' stroke='" << kColors[i % std::size(kColors)] << "' points='";
    for (size_t j = 0; j < xs.size() && j < s.accuracy.size(); ++j)
      svg << fmt(px(xs[j] / x_scale)) << "," << fmt(py(std::clamp(s.accuracy[j], y.lo, y.hi))) << " ";
    svg << "'/>\n";
  }
}

}  // namespace

std::vector<double> nice_ticks(double lo, double hi, int target) {
  if (!(hi > lo)) return {lo};
  const double raw = (hi - lo) / std::max(1, target - 1);
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  double step = mag;
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (m * mag >= raw) {
      step = m * mag;
      break;
    }
  std::vector<double> ticks;
  for (double t = std::floor(lo / step) * step; t <= hi + step * 0.5; t += step)
    ticks.push_back(std::abs(t) < step * 1e-9 ? 0.0 : t);
  return ticks;
}

std::string accuracy_svg(const std::vector<Series>& series, double reference, const std::string& reference_label) {
  Range y;
  y.add(reference);
  for (const auto& s : series)
    for (double a : s.accuracy) y.add(a);
  y.settle();
  y.lo = std::floor(y.lo * 50) / 50;  // whole 2-point steps keep the axis readable
  y.hi = std::min(1.0, std::ceil(y.hi * 50) / 50 + 0.01);

  double max_bytes = 0;
  for (const auto& s : series)
    for (double b : s.bytes) max_bytes = std::max(max_bytes, b);
  const bool gb = max_bytes >= 1e9;

  const double width = kLeft + 2 * kPanelW + kGap + kLegendW, height = kTop + kPanelH + kBottom + 10;
  std::ostringstream svg;
  svg << "<svg xmlns='http://www.w3.org/2000/svg' width='" << width << "' height='" << height
      << "' font-family='sans-serif' font-size='12'>\n<rect width='100%' height='100%' fill='white'/>\n";
  svg << "<text x='" << kLeft << "' y='22' font-size='15'>gradwire train: Fashion-MNIST test accuracy</text>\n";
  panel(svg, kLeft, series, &Series::bytes, gb ? 1e9 : 1e6,
        gb ? "bytes sent per rank (GB)" : "bytes sent per rank (MB)", y, reference);
  panel(svg, kLeft + kPanelW + kGap, series, &Series::seconds, 1, "training time (s)", y, reference);
  const double lx = kLeft + 2 * kPanelW + kGap + 20;
  for (size_t i = 0; i < series.size(); ++i) {
    const double ly = kTop + 10 + 20 * double(i);
    svg << "<line x1='" << lx << "' y1='" << ly << "' x2='" << lx + 24 << "' y2='" << ly << "' stroke-width='2' stroke='"
        << kColors[i % std::size(kColors)] << "'/>\n<text x='" << lx + 30 << "' y='" << ly + 4 << "'>"
        << escape(series[i].name) << "</text>\n";
  }
  const double ry = kTop + 10 + 20 * double(series.size());
  svg << "<line x1='" << lx << "' y1='" << ry << "' x2='" << lx + 24 << "' y2='" << ry
      << "' stroke='#000' stroke-dasharray='6,4'/>\n<text x='" << lx + 30 << "' y='" << ry + 4 << "'>"
      << escape(reference_label) << "</text>\n</svg>\n";
  return svg.str();
}

}  // namespace gwtrain
