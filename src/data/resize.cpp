// PIL-compatible resizing: nearest picks source floor((x + 0.5) * scale); the filters are
// separable, horizontal pass first with the intermediate rounded to uint8, as Pillow's
// ImagingResample does, so results agree with Keras' load_img to within rounding. Serial on
// purpose: the loader's workers already run one image per thread, and a thread team per image
// would oversubscribe the cores.
#include "loom/data/resize.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace loom::data {
namespace {

// One output coordinate's taps: source indices [first, first + weights.size()).
struct Taps {
  int64_t first = 0;
  std::vector<float> weights;
};

double triangle(double x) {
  x = std::fabs(x);
  return x < 1.0 ? 1.0 - x : 0.0;
}

double box(double x) { return (x > -0.5 && x <= 0.5) ? 1.0 : 0.0; }

// Pillow's precompute_coeffs: the filter is widened by the scale when shrinking (antialiasing).
std::vector<Taps> make_taps(int64_t in_size, int64_t out_size, Interpolation interpolation) {
  const bool is_box = interpolation == Interpolation::Area;
  const double filter_support = is_box ? 0.5 : 1.0;
  const double scale = static_cast<double>(in_size) / static_cast<double>(out_size);
  const double filter_scale = std::max(scale, 1.0);
  const double support = filter_support * filter_scale;
  std::vector<Taps> taps(out_size);
  for (int64_t out = 0; out < out_size; ++out) {
    const double center = (out + 0.5) * scale;
    const int64_t lo = std::max<int64_t>(static_cast<int64_t>(center - support + 0.5), 0);
    const int64_t hi = std::min<int64_t>(static_cast<int64_t>(center + support + 0.5), in_size);
    Taps& t = taps[out];
    t.first = lo;
    double total = 0.0;
    for (int64_t x = lo; x < hi; ++x) {
      const double arg = (x - center + 0.5) / filter_scale;
      const double w = is_box ? box(arg) : triangle(arg);
      t.weights.push_back(static_cast<float>(w));
      total += w;
    }
    if (total > 0.0) {
      for (float& w : t.weights) w = static_cast<float>(w / total);
    }
  }
  return taps;
}

uint8_t clip8(float v) { return static_cast<uint8_t>(std::clamp(std::lround(v), 0L, 255L)); }

// Horizontal pass: each of the h rows of w pixels becomes a row of taps.size() pixels.
void resample_rows(const uint8_t* in, uint8_t* out, int64_t h, int64_t w, int64_t channels,
                   const std::vector<Taps>& taps) {
  const int64_t out_w = static_cast<int64_t>(taps.size());
  for (int64_t y = 0; y < h; ++y) {
    const uint8_t* src = in + y * w * channels;
    uint8_t* dst = out + y * out_w * channels;
    for (int64_t o = 0; o < out_w; ++o) {
      const Taps& t = taps[o];
      for (int64_t c = 0; c < channels; ++c) {
        float acc = 0.0f;
        for (size_t k = 0; k < t.weights.size(); ++k) {
          acc += t.weights[k] * src[(t.first + static_cast<int64_t>(k)) * channels + c];
        }
        dst[o * channels + c] = clip8(acc);
      }
    }
  }
}

}  // namespace

const char* interpolation_name(Interpolation interpolation) {
  switch (interpolation) {
    case Interpolation::Nearest:
      return "nearest";
    case Interpolation::Bilinear:
      return "bilinear";
    case Interpolation::Area:
      return "area";
  }
  return "?";
}

Tensor resize_image(const Tensor& image, int64_t dst_h, int64_t dst_w,
                    Interpolation interpolation) {
  LOOM_CHECK(image.dim() == 3 && image.dtype() == kUInt8 && image.device().is_cpu(),
             "resize_image: expected a uint8 [height, width, channels] CPU tensor, got ",
             dtype_name(image.dtype()), " of shape ", shape_str(image.shape()), " on ",
             image.device().str());
  LOOM_CHECK(dst_h > 0 && dst_w > 0, "resize_image: target size must be positive, got ", dst_h, "x",
             dst_w);
  const Tensor src = image.contiguous();
  const int64_t h = src.size(0), w = src.size(1), c = src.size(2);
  LOOM_CHECK(h > 0 && w > 0, "resize_image: empty image of shape ", shape_str(image.shape()));
  if (h == dst_h && w == dst_w) return src;
  Tensor out = empty({dst_h, dst_w, c}, kUInt8);
  const uint8_t* in = src.data_ptr<uint8_t>();
  uint8_t* dst = out.data_ptr<uint8_t>();
  if (interpolation == Interpolation::Nearest) {
    std::vector<int64_t> xs(dst_w);
    for (int64_t x = 0; x < dst_w; ++x) {
      xs[x] = std::min<int64_t>(static_cast<int64_t>((x + 0.5) * w / static_cast<double>(dst_w)),
                                w - 1);
    }
    for (int64_t y = 0; y < dst_h; ++y) {
      const int64_t sy = std::min<int64_t>(
          static_cast<int64_t>((y + 0.5) * h / static_cast<double>(dst_h)), h - 1);
      for (int64_t x = 0; x < dst_w; ++x) {
        std::copy_n(in + (sy * w + xs[x]) * c, c, dst + (y * dst_w + x) * c);
      }
    }
    return out;
  }
  // Horizontal pass into [h, dst_w], then vertical into [dst_h, dst_w], as Pillow orders them.
  std::vector<uint8_t> mid(static_cast<size_t>(h * dst_w * c));
  resample_rows(in, mid.data(), h, w, c, make_taps(w, dst_w, interpolation));
  const std::vector<Taps> vtaps = make_taps(h, dst_h, interpolation);
  for (int64_t y = 0; y < dst_h; ++y) {
    const Taps& t = vtaps[y];
    for (int64_t i = 0; i < dst_w * c; ++i) {
      float acc = 0.0f;
      for (size_t k = 0; k < t.weights.size(); ++k) {
        acc += t.weights[k] * mid[(t.first + static_cast<int64_t>(k)) * dst_w * c + i];
      }
      dst[y * dst_w * c + i] = clip8(acc);
    }
  }
  return out;
}

}  // namespace loom::data
