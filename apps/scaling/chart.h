// loom-scaling's chart: speedup against GPU count drawn as an RGB image (axes, ticks, grid,
// title, legend, a built-in 5x7 bitmap font) and encoded as PNG, with no plotting library.
#pragma once

#include <loom/loom.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace loom::scaling {

struct ChartSeries {
  std::string label;                              // legend text
  std::vector<std::pair<double, double>> points;  // (x = GPU count, y = speedup), in draw order
  uint8_t r = 0, g = 0, b = 0;
  bool line = true;     // join the points, 2 px wide
  bool dashed = false;  // dashes of kDashOn px, gaps of kDashOff px (the "ideal" line)
  bool markers = true;  // a filled square, circle, triangle, diamond by series index (mod 4)
};

struct ChartSpec {
  std::string title;  // e.g. "seed_cnn, batch 32 per GPU: speedup against GPU count"
  std::string x_label = "GPUs", y_label = "speedup";
  std::vector<ChartSeries> series;
  bool log2_axes = false;  // both axes log2 (1..1024 GPU simulations), else linear from 0
  int width = 900, height = 600;
};

constexpr int kDashOn = 10, kDashOff = 7;
constexpr int kMinChartSide = 200, kMaxChartSide = 8000;

// Where data lands. Linear axes: x spans [0, x_max] and y [0, y_max], over every series' points
// (the ideal line's too); the tick step is the smallest 1, 2 or 5 x 10^k (at least 1 when all
// values on the axis are integers) that covers the largest value in at most 8 steps, and
// the range ends on a tick. A negative value extends the range below 0 the same way. Log2
// axes: each spans [2^floor(log2 min), 2^ceil(log2 max)] (at least a factor 2), ticks at powers
// of 2 (every 2nd, 3rd... power past 11 ticks). With t = identity or log2:
//   column(x) = left + (t(x) - t(x_min)) / (t(x_max) - t(x_min)) * (right - left)
//   row(y)    = bottom - (t(y) - t(y_min)) / (t(y_max) - t(y_min)) * (bottom - top)
// Pixel (column c, row r) covers [c, c + 1) x [r, r + 1); left..right and top..bottom are the
// plot frame's pixel columns and rows.
struct ChartLayout {
  int width = 0, height = 0;
  int left = 0, top = 0, right = 0, bottom = 0;
  double x_min = 0, x_max = 1, y_min = 0, y_max = 1;
  bool log2_axes = false;
  std::vector<double> x_ticks, y_ticks;
  int text_scale = 1;  // image pixels per font pixel: min(width, height) / 300, 1..8

  double column(double x) const;
  double row(double y) const;
};

// Checks the spec (throws loom::Error naming the bad series and value) and lays it out.
ChartLayout chart_layout(const ChartSpec& spec);
// uint8 [height, width, 3] RGB on the CPU: white background, grey grid at the ticks, the frame
// with outward ticks and their labels, every series' line and then its markers, a legend in the
// plot corner the data leave most free, the title (shrunk, then cut with "..." to fit the
// width) and the axis labels, the y label reading bottom to top.
Tensor render_chart(const ChartSpec& spec);
// render_chart encoded as PNG.
std::vector<uint8_t> chart_png(const ChartSpec& spec);

}  // namespace loom::scaling
