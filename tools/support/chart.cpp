// line_chart_svg (plot.hpp): the general chart of `gradwire simulate`, drawn like train's panels and
// reusing their tick choice.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iterator>
#include <limits>
#include <sstream>

#include "support/plot.hpp"

namespace gwtrain {
namespace {

constexpr double kW = 560, kH = 340, kLeft = 80, kLegendW = 300, kBottom = 60;
const char* const kColors[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd",
                               "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};

std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.6g", v);
  return buf;
}

std::string text(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '<') out += "&lt;";
    else if (c == '>') out += "&gt;";
    else if (c == '&') out += "&amp;";
    else if (c == '\'') out += "&apos;";
    else out += c;
  }
  return out;
}

struct Axis {
  double lo = std::numeric_limits<double>::infinity(), hi = -std::numeric_limits<double>::infinity();
  bool log = false;
  std::vector<double> ticks;
  void add(double v) {
    if (log && !(v > 0)) return;
    if (!std::isfinite(v)) return;
    lo = std::min(lo, v), hi = std::max(hi, v);
  }
  void settle() {
    if (!(lo <= hi)) lo = log ? 1 : 0, hi = log ? 10 : 1;
    if (log) {
      lo = std::pow(10.0, std::floor(std::log10(lo)));
      hi = std::pow(10.0, std::ceil(std::log10(hi)));
      if (hi <= lo) hi = lo * 10;
      const double decades = std::log10(hi / lo);
      for (double d = lo; d <= hi * 1.0001; d *= 10)
        for (double m : {1.0, 2.0, 5.0})
          if (d * m <= hi * 1.0001 && (m == 1 || decades <= 3)) ticks.push_back(d * m);
    } else {
      if (hi - lo < 1e-12) hi = lo + (lo == 0 ? 1 : std::abs(lo) * 0.1);
      lo = std::min(lo, 0.0);
      ticks = nice_ticks(lo, hi);
      hi = std::max(hi, ticks.back());
    }
  }
  double frac(double v) const {
    return log ? (std::log10(v) - std::log10(lo)) / (std::log10(hi) - std::log10(lo)) : (v - lo) / (hi - lo);
  }
};

// Notes wrapped at spaces to lines of at most `width` characters.
std::vector<std::string> wrap(const std::vector<std::string>& notes, size_t width) {
  std::vector<std::string> out;
  for (std::string rest : notes) {
    while (rest.size() > width) {
      size_t cut = rest.rfind(' ', width);
      if (cut == std::string::npos || cut == 0) cut = width;
      out.push_back(rest.substr(0, cut));
      rest = "    " + rest.substr(rest[cut] == ' ' ? cut + 1 : cut);
    }
    out.push_back(rest);
  }
  return out;
}

}  // namespace

std::string line_chart_svg(const std::vector<Line>& lines, const ChartSpec& chart) {
  ChartSpec spec = chart;
  spec.notes = wrap(chart.notes, 140);
  Axis x, y;
  x.log = spec.log_x, y.log = spec.log_y;
  for (const Line& l : lines)
    for (size_t i = 0; i < l.x.size() && i < l.y.size(); ++i) x.add(l.x[i]), y.add(l.y[i]);
  x.settle(), y.settle();
  const double top = 40 + 16 * double(spec.notes.size()) + 10;
  const double width = kLeft + kW + kLegendW, height = top + kH + kBottom;
  auto px = [&](double v) { return kLeft + x.frac(v) * kW; };
  auto py = [&](double v) { return top + kH - y.frac(v) * kH; };
  std::ostringstream svg;
  svg << "<svg xmlns='http://www.w3.org/2000/svg' width='" << width << "' height='" << height
      << "' font-family='sans-serif' font-size='12'>\n<rect width='100%' height='100%' fill='white'/>\n";
  svg << "<text x='" << kLeft << "' y='22' font-size='15'>" << text(spec.title) << "</text>\n";
  for (size_t i = 0; i < spec.notes.size(); ++i)
    svg << "<text x='" << kLeft << "' y='" << 42 + 16 * double(i) << "' fill='#444'>" << text(spec.notes[i]) << "</text>\n";
  svg << "<rect x='" << kLeft << "' y='" << top << "' width='" << kW << "' height='" << kH
      << "' fill='none' stroke='#333'/>\n";
  for (double t : x.ticks)
    svg << "<line x1='" << num(px(t)) << "' y1='" << top << "' x2='" << num(px(t)) << "' y2='" << top + kH
        << "' stroke='#ddd'/>\n<text x='" << num(px(t)) << "' y='" << top + kH + 18 << "' text-anchor='middle'>"
        << num(t) << "</text>\n";
  for (double t : y.ticks)
    svg << "<line x1='" << kLeft << "' y1='" << num(py(t)) << "' x2='" << kLeft + kW << "' y2='" << num(py(t))
        << "' stroke='#ddd'/>\n<text x='" << kLeft - 6 << "' y='" << num(py(t) + 4) << "' text-anchor='end'>"
        << num(t) << "</text>\n";
  svg << "<text x='" << kLeft + kW / 2 << "' y='" << top + kH + 42 << "' text-anchor='middle'>" << text(spec.x_label)
      << "</text>\n<text transform='translate(" << kLeft - 58 << "," << top + kH / 2
      << ") rotate(-90)' text-anchor='middle'>" << text(spec.y_label) << "</text>\n";
  for (size_t i = 0; i < lines.size(); ++i) {
    const Line& l = lines[i];
    const char* color = kColors[i % std::size(kColors)];
    svg << "<polyline fill='none' stroke-width='2' stroke='" << color << "'"
        << (l.dashed ? " stroke-dasharray='6,4'" : "") << " points='";
    for (size_t j = 0; j < l.x.size() && j < l.y.size(); ++j)
      if ((!x.log || l.x[j] > 0) && (!y.log || l.y[j] > 0) && std::isfinite(l.y[j]))
        svg << num(px(l.x[j])) << "," << num(py(std::clamp(l.y[j], y.lo, y.hi))) << " ";
    svg << "'/>\n";
    const double lx = kLeft + kW + 20, ly = top + 10 + 20 * double(i);
    svg << "<line x1='" << lx << "' y1='" << ly << "' x2='" << lx + 24 << "' y2='" << ly << "' stroke-width='2' stroke='"
        << color << "'" << (l.dashed ? " stroke-dasharray='6,4'" : "") << "/>\n<text x='" << lx + 30 << "' y='"
        << ly + 4 << "'>" << text(l.name) << "</text>\n";
  }
  svg << "</svg>\n";
  return svg.str();
}

}  // namespace gwtrain
