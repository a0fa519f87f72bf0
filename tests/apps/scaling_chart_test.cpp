// loom-scaling's chart: a white uint8 image whose series land where ChartLayout says, dashed
// lines with gaps, PNG bytes that decode to the same pixels, and clear errors on bad specs.
// LOOM_CHART_DIR=<folder> also writes the sample charts there to look at.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "scaling/chart.h"
#include "testing.h"

namespace loom::testing {
namespace {

using scaling::ChartLayout;
using scaling::ChartSeries;
using scaling::ChartSpec;

struct Rgb {
  int r, g, b;
};

Rgb pixel(const Tensor& image, int column, int row) {
  const uint8_t* p = image.data_ptr<uint8_t>() + (row * image.shape()[1] + column) * 3;
  return {p[0], p[1], p[2]};
}

// Whether colour c is within `radius` pixels (Chebyshev) of the point (column, row).
bool colour_near(const Tensor& image, double column, double row, Rgb c, int radius) {
  const int cx = static_cast<int>(std::floor(column)), cy = static_cast<int>(std::floor(row));
  for (int y = cy - radius; y <= cy + radius; ++y) {
    for (int x = cx - radius; x <= cx + radius; ++x) {
      if (x < 0 || y < 0 || x >= image.shape()[1] || y >= image.shape()[0]) continue;
      const Rgb p = pixel(image, x, y);
      if (p.r == c.r && p.g == c.g && p.b == c.b) return true;
    }
  }
  return false;
}

constexpr Rgb kMeasured{200, 30, 40}, kIdeal{30, 90, 200};

ChartSpec speedup_chart(bool log2_axes) {
  ChartSpec spec;
  spec.title = "seed_cnn, batch 32 per GPU: speedup against GPU count";
  spec.log2_axes = log2_axes;
  ChartSeries ideal{"ideal (linear)", {}, kIdeal.r, kIdeal.g, kIdeal.b};
  ideal.dashed = true;
  ideal.markers = false;
  ChartSeries measured{"measured", {}, kMeasured.r, kMeasured.g, kMeasured.b};
  const int max_gpus = log2_axes ? 1024 : 8;
  for (int n = 1; n <= max_gpus; n *= 2) {
    ideal.points.emplace_back(n, n);
    measured.points.emplace_back(n, n * std::pow(0.93, std::log2(n)));
  }
  spec.series = {ideal, measured};
  return spec;
}

void maybe_write(const ChartSpec& spec, const std::string& name) {
  if (const char* dir = std::getenv("LOOM_CHART_DIR")) {
    data::write_file(std::string(dir) + "/" + name, scaling::chart_png(spec));
  }
}

TEST(ScalingChart, WhiteUint8ImageOfTheAskedSize) {
  ChartSpec spec = speedup_chart(false);
  spec.width = 640, spec.height = 420;
  const Tensor image = scaling::render_chart(spec);
  EXPECT_EQ(image.shape(), (Shape{420, 640, 3}));
  EXPECT_EQ(image.dtype(), kUInt8);
  EXPECT_EQ(image.device(), kCPU);
  for (const auto& [x, y] : {std::pair{0, 0}, {639, 0}, {0, 419}, {639, 419}}) {
    const Rgb p = pixel(image, x, y);
    EXPECT_EQ(p.r + p.g + p.b, 3 * 255) << "corner " << x << ", " << y;
  }
}

TEST(ScalingChart, LinearAxesStartAtZeroWithNiceTicksCoveringTheData) {
  const ChartLayout l = scaling::chart_layout(speedup_chart(false));
  EXPECT_EQ(l.x_min, 0);
  EXPECT_EQ(l.x_max, 8);
  EXPECT_EQ(l.x_ticks, (std::vector<double>{0, 1, 2, 3, 4, 5, 6, 7, 8}));
  EXPECT_EQ(l.y_min, 0);
  EXPECT_EQ(l.y_max, 8);  // the ideal line's 8 sets it; measured tops out at 6.4
  EXPECT_DOUBLE_EQ(l.column(0), l.left);
  EXPECT_DOUBLE_EQ(l.column(8), l.right);
  EXPECT_DOUBLE_EQ(l.row(0), l.bottom);
  EXPECT_DOUBLE_EQ(l.row(8), l.top);
  EXPECT_DOUBLE_EQ(l.column(4), (l.left + l.right) / 2.0);

  ChartSpec fractional;
  fractional.series = {{"s", {{1, 0.3}, {3, 2.7}}}};
  const ChartLayout f = scaling::chart_layout(fractional);
  EXPECT_EQ(f.x_ticks, (std::vector<double>{0, 1, 2, 3}));  // integral x keeps integral ticks
  EXPECT_NEAR(f.y_max, 3.0, 1e-12);
  EXPECT_NEAR(f.y_ticks[1], 0.5, 1e-12);

  ChartSpec efficiency;  // the smallest 1-2-5 step with at most 8 intervals
  efficiency.series = {{"e", {{1, 0.98}, {8, 0.8}, {32, 0.31}}}};
  const ChartLayout e = scaling::chart_layout(efficiency);
  EXPECT_EQ(e.x_max, 35);
  EXPECT_EQ(e.x_ticks.size(), 8u);
  EXPECT_NEAR(e.y_max, 1.0, 1e-12);
  EXPECT_NEAR(e.y_ticks[1], 0.2, 1e-12);

  const ChartLayout g = scaling::chart_layout(speedup_chart(true));
  EXPECT_EQ(g.x_min, 1);
  EXPECT_EQ(g.x_max, 1024);
  EXPECT_EQ(g.x_ticks.size(), 11u);                          // 1, 2, 4, ..., 1024
  EXPECT_DOUBLE_EQ(g.column(32), (g.left + g.right) / 2.0);  // log2 32 is half of log2 1024
}

TEST(ScalingChart, SeriesColourLandsWhereTheLayoutMapsEachPoint) {
  for (const bool log2_axes : {false, true}) {
    const ChartSpec spec = speedup_chart(log2_axes);
    const ChartLayout l = scaling::chart_layout(spec);
    const Tensor image = scaling::render_chart(spec);
    for (const auto& [x, y] : spec.series[1].points) {
      EXPECT_TRUE(colour_near(image, l.column(x), l.row(y), kMeasured, 1))
          << "measured (" << x << ", " << y << ") log2 " << log2_axes;
    }
    // Halfway between the last two points' pixels, the line joins them.
    const auto [xa, ya] = spec.series[1].points[spec.series[1].points.size() - 2];
    const auto [xb, yb] = spec.series[1].points.back();
    EXPECT_TRUE(colour_near(image, (l.column(xa) + l.column(xb)) / 2, (l.row(ya) + l.row(yb)) / 2,
                            kMeasured, 2));
    // Below the measured curve at the largest x, halfway down to y_min, nothing is drawn.
    const double low = log2_axes ? std::sqrt(yb * l.y_min) * 1.3 : yb / 2;
    EXPECT_FALSE(colour_near(image, l.column(xb) - 10, l.row(low), kMeasured, 3));
  }
}

TEST(ScalingChart, DashedLinesHaveGapsAndSolidLinesDoNot) {
  ChartSpec spec;
  spec.series = {{"dashed", {{0, 0}, {8, 8}}, 0, 0, 255}};
  spec.series[0].dashed = true;
  spec.series[0].markers = false;
  const ChartLayout l = scaling::chart_layout(spec);
  const double length = std::hypot(l.right - l.left, l.bottom - l.top) * 0.3;
  // Runs of drawn samples, one per pixel along t in [0.2, 0.5] of the diagonal (clear of the
  // legend's corner); drawn means the colour within 1 px.
  auto runs = [&](const ChartSpec& s, double* drawn_fraction) {
    const Tensor image = scaling::render_chart(s);
    int count = 0, drawn = 0;
    bool previous = false;
    const int samples = static_cast<int>(length);
    for (int i = 0; i <= samples; ++i) {
      const double v = 8 * (0.2 + 0.3 * i / samples);
      const bool on = colour_near(image, l.column(v), l.row(v), {0, 0, 255}, 1);
      count += on && !previous;
      drawn += on;
      previous = on;
    }
    *drawn_fraction = static_cast<double>(drawn) / (samples + 1);
    return count;
  };
  double fraction = 0;
  const int period = scaling::kDashOn + scaling::kDashOff;
  const int dashes = runs(spec, &fraction);
  EXPECT_NEAR(dashes, length / period, 1.5) << "over " << length << " px";
  EXPECT_GT(fraction, 0.4);
  EXPECT_LT(fraction, 0.9);
  spec.series[0].dashed = false;
  EXPECT_EQ(runs(spec, &fraction), 1);
  EXPECT_EQ(fraction, 1.0);
}

TEST(ScalingChart, DifferentDataDrawDifferentPixels) {
  const ChartSpec a = speedup_chart(false);
  ChartSpec b = a;
  b.series[1].points[2].second *= 0.5;
  const Tensor ia = scaling::render_chart(a), ib = scaling::render_chart(b);
  EXPECT_EQ(std::memcmp(ia.data_ptr<uint8_t>(), scaling::render_chart(a).data_ptr<uint8_t>(),
                        ia.nbytes()),
            0);
  EXPECT_NE(std::memcmp(ia.data_ptr<uint8_t>(), ib.data_ptr<uint8_t>(), ia.nbytes()), 0);
}

TEST(ScalingChart, LegendTakesTheCornerTheDataLeaveFree) {
  // Grey legend-frame pixels in each quarter of the plot.
  auto frame_pixels = [](const ChartSpec& spec, bool right, bool lower) {
    const ChartLayout l = scaling::chart_layout(spec);
    const Tensor image = scaling::render_chart(spec);
    const int mid_x = (l.left + l.right) / 2, mid_y = (l.top + l.bottom) / 2;
    int count = 0;
    for (int y = lower ? mid_y : l.top + 1; y < (lower ? l.bottom : mid_y); ++y) {
      for (int x = right ? mid_x : l.left + 1; x < (right ? l.right : mid_x); ++x) {
        const Rgb p = pixel(image, x, y);
        count += p.r == 150 && p.g == 150 && p.b == 150;
      }
    }
    return count;
  };
  const ChartSpec rising = speedup_chart(false);  // from bottom-left to top-right: top-left free
  EXPECT_GT(frame_pixels(rising, false, false), 100);
  EXPECT_EQ(frame_pixels(rising, true, true), 0);
  ChartSpec falling;  // from top-left to bottom-right: the legend goes to the bottom-right
  falling.series = {{"efficiency", {{1, 0.98}, {4, 0.91}, {16, 0.55}, {32, 0.31}}, 200, 80, 0}};
  EXPECT_EQ(frame_pixels(falling, false, false), 0);
  EXPECT_GT(frame_pixels(falling, true, true), 100);
}

TEST(ScalingChart, TitleAndLabelsPutInkOnThePage) {
  ChartSpec spec = speedup_chart(false);
  spec.title.clear();
  const ChartLayout untitled = scaling::chart_layout(spec);
  // Dark pixels above the frame of the untitled chart and right of its left edge: the title's
  // glyphs only (tick labels lie left of the frame, the y label further left).
  auto dark_in_title_band = [&](const ChartSpec& s) {
    const Tensor image = scaling::render_chart(s);
    int dark = 0;
    for (int y = 0; y < untitled.top - 1; ++y)
      for (int x = untitled.left + 1; x < s.width; ++x) dark += pixel(image, x, y).r < 100;
    return dark;
  };
  EXPECT_EQ(dark_in_title_band(spec), 0);
  spec.title = "\x01";  // outside the font: drawn as a box
  EXPECT_GT(dark_in_title_band(spec), 20);
  spec.title = "seed_cnn, batch 32 per GPU: speedup against GPU count";
  EXPECT_GT(dark_in_title_band(spec), 500);
  EXPECT_GT(scaling::chart_layout(spec).top, untitled.top);  // the title makes room for itself
}

TEST(ScalingChart, PngBytesDecodeToTheSamePixels) {
  const ChartSpec spec = speedup_chart(true);
  const std::vector<uint8_t> png = scaling::chart_png(spec);
  const uint8_t signature[8] = {0x89, 'P', 'N', 'G', 0x0D, 0x0A, 0x1A, 0x0A};
  ASSERT_GT(png.size(), 8u);
  EXPECT_EQ(std::memcmp(png.data(), signature, 8), 0);
  const Tensor decoded = data::decode_png(png.data(), png.size(), "chart");
  const Tensor image = scaling::render_chart(spec);
  ASSERT_EQ(decoded.shape(), image.shape());
  EXPECT_EQ(std::memcmp(decoded.contiguous().data_ptr<uint8_t>(), image.data_ptr<uint8_t>(),
                        image.nbytes()),
            0);
  maybe_write(speedup_chart(false), "scaling_chart_linear.png");
  maybe_write(spec, "scaling_chart_log2.png");
}

TEST(ScalingChart, BadSpecsAreClearErrors) {
  ChartSpec spec = speedup_chart(false);
  spec.series.clear();
  EXPECT_LOOM_ERROR(scaling::render_chart(spec), "no series");
  spec = speedup_chart(false);
  spec.series[1].points.clear();
  EXPECT_LOOM_ERROR(scaling::render_chart(spec), "series 'measured' has no points");
  spec = speedup_chart(false);
  spec.series[1].points[3].second = NAN;
  EXPECT_LOOM_ERROR(scaling::render_chart(spec), "series 'measured' point 3 is (8, nan)");
  spec = speedup_chart(true);
  spec.series[0].points[0].first = 0;
  EXPECT_LOOM_ERROR(scaling::render_chart(spec), "'ideal (linear)' point 0 is (0, 1): log2 axes");
  spec = speedup_chart(false);
  spec.width = 199;
  EXPECT_LOOM_ERROR(scaling::chart_png(spec), "width 199 outside 200..8000");
  spec.width = 900, spec.height = 9000;
  EXPECT_LOOM_ERROR(scaling::chart_png(spec), "height 9000 outside 200..8000");
}

}  // namespace
}  // namespace loom::testing
