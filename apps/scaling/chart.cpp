// The chart renderer: a canvas with clipped 2 px Bresenham lines, filled markers and a 5x7
// bitmap font of our own, the axis arithmetic of chart.h's ChartLayout, and the PNG encoding.
#include "chart.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace loom::scaling {
namespace {

// Printable ASCII 32..126, one glyph per entry: 8 rows of 5 pixels (row 7 below the baseline,
// for descenders), the top row in bits 39..35, the leftmost pixel of a row in its highest bit.
// clang-format off
constexpr uint64_t kFont[95] = {
    0x0000000000, 0x2108420080, 0x5294000000, 0x52BEAFA940, 0x23E8E2F880, 0xC644444C60,  //  !"#$%
    0x64A88AC9A0, 0x2110000000, 0x1110841040, 0x4104211100, 0x012AEA9000, 0x0109F21000,  // &'()*+
    0x0000003088, 0x0001F00000, 0x0000003180, 0x0044444000, 0x74675CC5C0, 0x23084211C0,  // ,-./01
    0x74422223E0, 0xF88820C5C0, 0x11952F8840, 0xFC3C10C5C0, 0x3221E8C5C0, 0xF844442100,  // 234567
    0x7462E8C5C0, 0x7462F08980, 0x0318063000, 0x0018C03088, 0x1111041040, 0x003E0F8000,  // 89:;<=
    0x4104111100, 0x7442220080, 0x7442DAD5C0, 0x7463F8C620, 0xF463E8C7C0, 0x74610845C0,  // >?@ABC
    0xE4A318CB80, 0xFC21E843E0, 0xFC21E84200, 0x746178C5E0, 0x8C63F8C620, 0x71084211C0,  // DEFGHI
    0x3884214980, 0x8CA98A4A20, 0x84210843E0, 0x8EEB58C620, 0x8C7359C620, 0x746318C5C0,  // JKLMNO
    0xF463E84200, 0x74631AC9A0, 0xF463EA4A20, 0x7C20E087C0, 0xF908421080, 0x8C6318C5C0,  // PQRSTU
    0x8C6318A880, 0x8C635AD540, 0x8C54454620, 0x8C54421080, 0xF8444443E0, 0x72108421C0,  // VWXYZ[
    0x0410410400, 0x70842109C0, 0x22A2000000, 0x00000003E0, 0x4104000000, 0x001C17C5E0,  // \]^_`a
    0x842D98C7C0, 0x001D0845C0, 0x085B38C5E0, 0x001D1FC1C0, 0x3251C42100, 0x001F18BC2E,  // bcdefg
    0x842D98C620, 0x20184211C0, 0x100C210A4C, 0x84254C5240, 0x61084211C0, 0x00355AC620,  // hijklm
    0x002D98C620, 0x001D18C5C0, 0x003D18FA10, 0x001F18BC21, 0x002D984200, 0x001D0707C0,  // nopqrs
    0x42388424C0, 0x002318CDA0, 0x002318A880, 0x00231AD540, 0x0022A22A20, 0x002318BC2E,  // tuvwxy
    0x003E2223E0, 0x1108821040, 0x2108421080, 0x4108221100, 0x0011510000,                // z{|}~
};
// clang-format on
// In font pixels: a cell, the height of capitals and digits, the advance (with the gap).
constexpr int kGlyphW = 5, kGlyphH = 8, kCapH = 7, kAdvance = 6;

struct Rgb {
  uint8_t r, g, b;
};
constexpr Rgb kInk{20, 20, 20}, kGrid{228, 228, 228}, kLegendEdge{150, 150, 150};

bool glyph_pixel(char c, int col, int row) {
  const int code = static_cast<unsigned char>(c);
  if (code < 32 || code > 126) {  // outside the table: a box
    return row < kCapH && (col == 0 || col == kGlyphW - 1 || row == 0 || row == kCapH - 1);
  }
  return (kFont[code - 32] >> (39 - (row * kGlyphW + col))) & 1;
}

// One byte per glyph: each multi-byte UTF-8 sequence becomes one 0x7F, which draws as a box.
std::string to_glyphs(const std::string& s) {
  std::string out;
  for (const char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x80) {
      out += c;
    } else if (u >= 0xC0) {  // a lead byte; continuation bytes 0x80..0xBF add nothing
      out += '\x7f';
    }
  }
  return out;
}

int text_width(const std::string& s, int scale) {
  const int n = static_cast<int>(to_glyphs(s).size());
  return n == 0 ? 0 : n * kAdvance * scale - scale;
}

// Writes into a uint8 [height, width, 3] tensor; every pixel outside the image is dropped.
class Canvas {
 public:
  Canvas(int width, int height)
      : width_(width),
        height_(height),
        image_(full({height, width, 3}, 255, TensorOptions(kUInt8))),
        pixels_(image_.data_ptr<uint8_t>()) {}

  const Tensor& image() const { return image_; }

  void set(int x, int y, Rgb c) {
    if (x < 0 || y < 0 || x >= width_ || y >= height_) return;
    uint8_t* p = pixels_ + (static_cast<int64_t>(y) * width_ + x) * 3;
    p[0] = c.r, p[1] = c.g, p[2] = c.b;
  }
  void fill(int x0, int y0, int x1, int y1, Rgb c) {  // inclusive corners
    for (int y = std::max(y0, 0); y <= std::min(y1, height_ - 1); ++y)
      for (int x = std::max(x0, 0); x <= std::min(x1, width_ - 1); ++x) set(x, y, c);
  }
  void frame(int x0, int y0, int x1, int y1, Rgb c) {
    fill(x0, y0, x1, y0, c), fill(x0, y1, x1, y1, c);
    fill(x0, y0, x0, y1, c), fill(x1, y0, x1, y1, c);
  }

  // Bresenham from (x0, y0) to (x1, y1), stamping a thickness x thickness square at each step.
  // With `dash`, *dash is the path length drawn so far (carried across the segments of a
  // polyline) and a step is drawn only in the first kDashOn px of every kDashOn + kDashOff.
  void line(int x0, int y0, int x1, int y1, Rgb c, int thickness, double* dash = nullptr) {
    const int dx = std::abs(x1 - x0), dy = -std::abs(y1 - y0);
    const int sx = x0 < x1 ? 1 : -1, sy = y0 < y1 ? 1 : -1;
    const double step = std::hypot(dx, dy) / std::max({dx, -dy, 1});  // length per step
    const int o = thickness / 2;
    int err = dx + dy;
    for (;;) {
      if (!dash || std::fmod(*dash, kDashOn + kDashOff) < kDashOn) {
        fill(x0 - o, y0 - o, x0 - o + thickness - 1, y0 - o + thickness - 1, c);
      }
      if (x0 == x1 && y0 == y1) return;
      const int e2 = 2 * err;
      if (e2 >= dy) err += dy, x0 += sx;
      if (e2 <= dx) err += dx, y0 += sy;
      if (dash) *dash += step;
    }
  }

  // shape 0..3: filled square, circle, up triangle, diamond, of half-size m about (cx, cy).
  void marker(int cx, int cy, int m, int shape, Rgb c) {
    for (int dy = -m; dy <= m; ++dy) {
      for (int dx = -m; dx <= m; ++dx) {
        const int ax = std::abs(dx), ay = std::abs(dy);
        const bool in = shape == 0   ? ax < m && ay < m
                        : shape == 1 ? ax * ax + ay * ay <= m * m
                        : shape == 2 ? 2 * ax <= dy + m
                                     : ax + ay <= m;
        if (in) set(cx + dx, cy + dy, c);
      }
    }
  }

  // Text with its top-left corner at (x, y); vertical text reads bottom to top, its glyph tops
  // facing left, inside the box from (x, y) of text_height wide and text_width tall.
  void text(int x, int y, const std::string& utf8, int scale, Rgb c, bool vertical = false) {
    const std::string s = to_glyphs(utf8);
    const int length = text_width(s, scale);
    for (size_t i = 0; i < s.size(); ++i) {
      for (int row = 0; row < kGlyphH; ++row) {
        for (int col = 0; col < kGlyphW; ++col) {
          if (!glyph_pixel(s[i], col, row)) continue;
          const int u = (static_cast<int>(i) * kAdvance + col) * scale, v = row * scale;
          if (vertical) {
            fill(x + v, y + length - u - scale, x + v + scale - 1, y + length - u - 1, c);
          } else {
            fill(x + u, y + v, x + u + scale - 1, y + v + scale - 1, c);
          }
        }
      }
    }
  }

 private:
  int width_, height_;
  Tensor image_;
  uint8_t* pixels_;
};

double axis_t(double v, bool log2_axes) { return log2_axes ? std::log2(v) : v; }

// The smallest 1, 2 or 5 x 10^k step that spans [from, to] in at most kMaxIntervals steps; at
// least 1 when every value is an integer.
constexpr int kMaxIntervals = 8;
double nice_step(double from, double to, bool integral) {
  int e = static_cast<int>(std::floor(std::log10((to - from) / kMaxIntervals)));
  for (e = integral ? std::max(e, 0) : e;; ++e) {
    for (const double m : {1.0, 2.0, 5.0}) {
      const double step = m * std::pow(10.0, e);
      if (std::ceil(to / step - 1e-9) - std::floor(from / step + 1e-9) <= kMaxIntervals)
        return step;
    }
  }
}

// Fills [lo, hi] and the ticks of one axis from the data's values on it.
void axis_range(const std::vector<double>& values, bool log2_axes, double* lo, double* hi,
                std::vector<double>* ticks) {
  const auto [mn, mx] = std::minmax_element(values.begin(), values.end());
  ticks->clear();
  if (log2_axes) {
    const int e_lo = static_cast<int>(std::floor(std::log2(*mn)));
    int e_hi = std::max(static_cast<int>(std::ceil(std::log2(*mx))), e_lo + 1);
    const int stride = (e_hi - e_lo + 9) / 10;  // at most 11 ticks
    e_hi = e_lo + (e_hi - e_lo + stride - 1) / stride * stride;
    for (int e = e_lo; e <= e_hi; e += stride) ticks->push_back(std::ldexp(1.0, e));
    *lo = std::ldexp(1.0, e_lo), *hi = std::ldexp(1.0, e_hi);
    return;
  }
  const bool integral =
      std::all_of(values.begin(), values.end(), [](double v) { return v == std::floor(v); });
  const double from = std::min(*mn, 0.0), to = std::max(*mx, 0.0);
  const double step = nice_step(from, to > from ? to : from + 1, integral);
  const long first = std::lround(std::floor(from / step + 1e-9));
  const long last = std::max(std::lround(std::ceil(to / step - 1e-9)), first + 1);
  for (long i = first; i <= last; ++i) ticks->push_back(i * step);
  *lo = first * step, *hi = last * step;
}

std::string tick_label(double v, const std::vector<double>& ticks, bool log2_axes) {
  char buf[32];
  if (log2_axes || ticks.size() < 2) {
    std::snprintf(buf, sizeof buf, "%.6g", v);
  } else {
    const double step = ticks[1] - ticks[0];
    const int decimals = step >= 1 ? 0 : static_cast<int>(std::ceil(-std::log10(step) - 1e-9));
    std::snprintf(buf, sizeof buf, "%.*f", decimals, std::abs(v) < step / 2 ? 0.0 : v);
  }
  return buf;
}

// The title as drawn: at the labels' scale, smaller while it does not fit the width, and cut
// short with "..." where it does not fit at scale 1.
std::string fit_title(const ChartSpec& spec, int* scale) {
  const int room = spec.width - 20;
  while (*scale > 1 && text_width(spec.title, *scale) > room) --*scale;
  std::string title = to_glyphs(spec.title);
  if (text_width(title, *scale) <= room) return title;
  while (!title.empty() && text_width(title + "...", *scale) > room) title.pop_back();
  return title + "...";
}

void check_spec(const ChartSpec& spec) {
  LOOM_CHECK(spec.width >= kMinChartSide && spec.width <= kMaxChartSide, "render_chart: width ",
             spec.width, " outside ", kMinChartSide, "..", kMaxChartSide);
  LOOM_CHECK(spec.height >= kMinChartSide && spec.height <= kMaxChartSide, "render_chart: height ",
             spec.height, " outside ", kMinChartSide, "..", kMaxChartSide);
  LOOM_CHECK(!spec.series.empty(), "render_chart: no series to draw");
  for (const ChartSeries& s : spec.series) {
    LOOM_CHECK(!s.points.empty(), "render_chart: series '", s.label, "' has no points");
    for (size_t i = 0; i < s.points.size(); ++i) {
      const auto [x, y] = s.points[i];
      LOOM_CHECK(std::isfinite(x) && std::isfinite(y), "render_chart: series '", s.label,
                 "' point ", i, " is (", x, ", ", y, "): not finite");
      LOOM_CHECK(!spec.log2_axes || (x > 0 && y > 0), "render_chart: series '", s.label, "' point ",
                 i, " is (", x, ", ", y, "): log2 axes need x > 0 and y > 0");
    }
  }
}

int marker_size(int text_scale) { return 2 * text_scale + 1; }

struct Box {
  int x0, y0, x1, y1;  // inclusive
};

// How many of 65 samples along each segment of every series (in pixels) fall in the box.
int path_samples_in(const ChartSpec& spec, const ChartLayout& l, const Box& b) {
  int inside = 0;
  for (const ChartSeries& c : spec.series) {
    for (size_t i = 0; i < c.points.size(); ++i) {
      const auto [x0, y0] = c.points[i == 0 ? 0 : i - 1];
      const auto [x1, y1] = c.points[i];
      for (int t = 0; t <= 64; ++t) {
        const double u = l.column(x0 + (x1 - x0) * t / 64.0), v = l.row(y0 + (y1 - y0) * t / 64.0);
        inside += u >= b.x0 && u <= b.x1 + 1 && v >= b.y0 && v <= b.y1 + 1;
      }
    }
  }
  return inside;
}

// One row per series (its line, marker and label) in a framed box, in the plot corner whose box
// covers the fewest samples of the data's paths: top-left first, then bottom-right, top-right,
// bottom-left. No legend when no series has a label.
void draw_legend(Canvas& canvas, const ChartSpec& spec, const ChartLayout& l) {
  const bool any_label = std::any_of(spec.series.begin(), spec.series.end(),
                                     [](const ChartSeries& c) { return !c.label.empty(); });
  if (!any_label) return;
  const int s = l.text_scale, m = marker_size(s), pad = 4 * s, sample = 16 * s;
  const int row_h = kGlyphH * s + 4 * s, gap = 6 * s;
  int label_width = 0;
  for (const ChartSeries& c : spec.series) {
    label_width = std::max(label_width, text_width(c.label, s));
  }
  const int w = pad + sample + 3 * s + label_width + pad;
  const int h = 2 * pad + static_cast<int>(spec.series.size()) * row_h - 4 * s;
  const int xs[2] = {l.left + gap, l.right - gap - w}, ys[2] = {l.top + gap, l.bottom - gap - h};
  Box best{};
  int best_covered = -1;
  for (const auto& [cx, cy] : {std::pair{0, 0}, {1, 1}, {1, 0}, {0, 1}}) {
    const Box b{xs[cx], ys[cy], xs[cx] + w, ys[cy] + h};
    const int covered = path_samples_in(spec, l, {b.x0 - m, b.y0 - m, b.x1 + m, b.y1 + m});
    if (best_covered < 0 || covered < best_covered) best = b, best_covered = covered;
  }
  canvas.fill(best.x0, best.y0, best.x1, best.y1, {255, 255, 255});
  canvas.frame(best.x0, best.y0, best.x1, best.y1, kLegendEdge);
  for (size_t k = 0; k < spec.series.size(); ++k) {
    const ChartSeries& c = spec.series[k];
    const Rgb rgb{c.r, c.g, c.b};
    const int top = best.y0 + pad + static_cast<int>(k) * row_h, mid = top + kCapH * s / 2;
    double dashed = 0;
    if (c.line) {
      canvas.line(best.x0 + pad, mid, best.x0 + pad + sample, mid, rgb, 2,
                  c.dashed ? &dashed : nullptr);
    }
    if (c.markers) canvas.marker(best.x0 + pad + sample / 2, mid, m, static_cast<int>(k % 4), rgb);
    canvas.text(best.x0 + pad + sample + 3 * s, top, c.label, s, kInk);
  }
}

}  // namespace

double ChartLayout::column(double x) const {
  const double t0 = axis_t(x_min, log2_axes), t1 = axis_t(x_max, log2_axes);
  return left + (axis_t(x, log2_axes) - t0) / (t1 - t0) * (right - left);
}

double ChartLayout::row(double y) const {
  const double t0 = axis_t(y_min, log2_axes), t1 = axis_t(y_max, log2_axes);
  return bottom - (axis_t(y, log2_axes) - t0) / (t1 - t0) * (bottom - top);
}

ChartLayout chart_layout(const ChartSpec& spec) {
  check_spec(spec);
  ChartLayout l;
  l.width = spec.width, l.height = spec.height, l.log2_axes = spec.log2_axes;
  std::vector<double> xs, ys;
  for (const ChartSeries& s : spec.series) {
    for (const auto& [x, y] : s.points) xs.push_back(x), ys.push_back(y);
  }
  axis_range(xs, spec.log2_axes, &l.x_min, &l.x_max, &l.x_ticks);
  axis_range(ys, spec.log2_axes, &l.y_min, &l.y_max, &l.y_ticks);

  const int s = l.text_scale = std::clamp(std::min(spec.width, spec.height) / 300, 1, 8);
  const int ch = kGlyphH * s, tick = 3 * s;
  int y_label_width = 0;
  for (double v : l.y_ticks) {
    y_label_width = std::max(y_label_width, text_width(tick_label(v, l.y_ticks, l.log2_axes), s));
  }
  const int last_x_label = text_width(tick_label(l.x_ticks.back(), l.x_ticks, l.log2_axes), s);
  int ts = s;
  fit_title(spec, &ts);
  l.top = 6 * s + std::max(ch / 2, spec.title.empty() ? 0 : kGlyphH * ts + 6 * s);
  l.bottom =
      spec.height - 1 - (tick + 3 * s + ch + (spec.x_label.empty() ? 0 : 5 * s + ch) + 5 * s);
  l.left = 5 * s + (spec.y_label.empty() ? 0 : ch + 6 * s) + y_label_width + 3 * s + tick;
  l.right = spec.width - 1 - std::max(10 * s, last_x_label / 2 + 4 * s);
  LOOM_ASSERT(l.right - l.left >= 20 && l.bottom - l.top >= 20, "chart plot area too small");
  return l;
}

Tensor render_chart(const ChartSpec& spec) {
  const ChartLayout l = chart_layout(spec);
  const int s = l.text_scale, ch = kGlyphH * s, tick = 3 * s;
  Canvas canvas(spec.width, spec.height);
  auto px = [&](double x) { return static_cast<int>(std::floor(l.column(x))); };
  auto py = [&](double y) { return static_cast<int>(std::floor(l.row(y))); };

  // Grid, frame, ticks and their labels.
  for (double x : l.x_ticks) {
    canvas.fill(px(x), l.top, px(x), l.bottom, kGrid);
    canvas.fill(px(x), l.bottom, px(x), l.bottom + tick, kInk);
    const std::string label = tick_label(x, l.x_ticks, l.log2_axes);
    canvas.text(px(x) - text_width(label, s) / 2, l.bottom + tick + 3 * s, label, s, kInk);
  }
  for (double y : l.y_ticks) {
    canvas.fill(l.left, py(y), l.right, py(y), kGrid);
    canvas.fill(l.left - tick, py(y), l.left, py(y), kInk);
    const std::string label = tick_label(y, l.y_ticks, l.log2_axes);
    canvas.text(l.left - tick - 3 * s - text_width(label, s), py(y) - kCapH * s / 2, label, s,
                kInk);
  }
  canvas.frame(l.left, l.top, l.right, l.bottom, kInk);

  // Series: every line first, then every marker above them.
  const int m = marker_size(s);
  for (const ChartSeries& series : spec.series) {
    if (!series.line) continue;
    const Rgb c{series.r, series.g, series.b};
    double dashed = 0;
    for (size_t i = 1; i < series.points.size(); ++i) {
      const auto [x0, y0] = series.points[i - 1];
      const auto [x1, y1] = series.points[i];
      canvas.line(px(x0), py(y0), px(x1), py(y1), c, 2, series.dashed ? &dashed : nullptr);
    }
  }
  for (size_t k = 0; k < spec.series.size(); ++k) {
    const ChartSeries& series = spec.series[k];
    if (!series.markers) continue;
    for (const auto& [x, y] : series.points) {
      canvas.marker(px(x), py(y), m, static_cast<int>(k % 4), {series.r, series.g, series.b});
    }
  }

  draw_legend(canvas, spec, l);

  // Title (doubled one pixel to the right: bold), axis labels.
  int ts = s;
  const std::string title = fit_title(spec, &ts);
  const int title_x = (spec.width - text_width(title, ts)) / 2;
  canvas.text(title_x, 6 * s, title, ts, kInk);
  canvas.text(title_x + 1, 6 * s, title, ts, kInk);
  const int plot_mid_x = (l.left + l.right) / 2, plot_mid_y = (l.top + l.bottom) / 2;
  canvas.text(plot_mid_x - text_width(spec.x_label, s) / 2, l.bottom + tick + 3 * s + ch + 5 * s,
              spec.x_label, s, kInk);
  canvas.text(5 * s, plot_mid_y - text_width(spec.y_label, s) / 2, spec.y_label, s, kInk, true);
  return canvas.image();
}

std::vector<uint8_t> chart_png(const ChartSpec& spec) {
  return data::encode_png(render_chart(spec));
}

}  // namespace loom::scaling
