// Pooling layers: window settings and spec; the maths is in ops/pool.h.
#include "loom/nn/pooling.h"

#include <nlohmann/json.hpp>

#include "loom/nn/untrusted_json.h"

namespace loom::nn {

namespace {

// Window settings shared by both pooling layers' specs.
nlohmann::json window_json(Size2 kernel, Size2 stride, Size2 padding) {
  return {{"kernel", {kernel.h, kernel.w}},
          {"stride", {stride.h, stride.w}},
          {"padding", {padding.h, padding.w}}};
}

Size2 size2_from(const JsonObject& c, const char* key, int64_t min) {
  const auto pair = c.pair(key, min, kMaxSpecInteger);
  return Size2(pair[0], pair[1]);
}

void check_window(const char* layer, Size2 kernel, Size2 stride, Size2 padding) {
  LOOM_CHECK(kernel.h > 0 && kernel.w > 0 && stride.h >= 0 && stride.w >= 0 && padding.h >= 0 &&
                 padding.w >= 0,
             layer, ": kernel must be positive and stride/padding non-negative, got kernel ",
             kernel.h, "x", kernel.w, ", stride ", stride.h, "x", stride.w, ", padding ", padding.h,
             "x", padding.w);
}

// [C, H, W] -> [C, OH, OW], each axis by the pooling ops' own pool2d_output_size (which throws
// for padding over half the kernel, as the ops do).
ShapeRule window_rule(const char* op, const std::string& name, Size2 kernel, Size2 stride,
                      Size2 padding) {
  return [=](const Shape& x) {
    if (x.size() != 3) {
      return not_fit(InputFit::Verdict::Refused,
                     name + " takes images [C, H, W], gets " + shape_str(x));
    }
    const int64_t h = pool2d_output_size(op, "height", x[1], kernel.h, stride.h, padding.h);
    const int64_t w = pool2d_output_size(op, "width", x[2], kernel.w, stride.w, padding.w);
    if (h < 1 || w < 1) {
      return not_fit(InputFit::Verdict::TooSmall, name + "'s " + std::to_string(kernel.h) + "x" +
                                                      std::to_string(kernel.w) +
                                                      " window is larger than its padded input " +
                                                      std::to_string(x[1] + 2 * padding.h) + "x" +
                                                      std::to_string(x[2] + 2 * padding.w));
    }
    return fits({x[0], h, w});
  };
}

}  // namespace

MaxPool2d::MaxPool2d(Size2 kernel, Size2 stride, Size2 padding)
    : kernel_(kernel), stride_(stride), padding_(padding) {
  check_window("MaxPool2d", kernel, stride, padding);
}

Tensor MaxPool2d::forward(const Tensor& x) { return max_pool2d(x, kernel_, stride_, padding_); }

std::string MaxPool2d::config_json() const {
  return window_json(kernel_, stride_, padding_).dump();
}

std::shared_ptr<MaxPool2d> MaxPool2d::from_config(const std::string& config_json) {
  const nlohmann::json j = parse_untrusted_json(config_json, "MaxPool2d spec");
  const JsonObject c(j, "MaxPool2d spec");
  return std::make_shared<MaxPool2d>(size2_from(c, "kernel", 1), size2_from(c, "stride", 0),
                                     size2_from(c, "padding", 0));
}

ShapeRule MaxPool2d::shape_rule_of_config(const std::string& config_json) {
  const auto m = from_config(config_json);
  return window_rule("max_pool2d", "MaxPool2d", m->kernel_, m->stride_, m->padding_);
}

AvgPool2d::AvgPool2d(Size2 kernel, Size2 stride, Size2 padding, bool count_include_pad)
    : kernel_(kernel), stride_(stride), padding_(padding), count_include_pad_(count_include_pad) {
  check_window("AvgPool2d", kernel, stride, padding);
}

Tensor AvgPool2d::forward(const Tensor& x) {
  return avg_pool2d(x, kernel_, stride_, padding_, count_include_pad_);
}

std::string AvgPool2d::config_json() const {
  nlohmann::json c = window_json(kernel_, stride_, padding_);
  c["count_include_pad"] = count_include_pad_;
  return c.dump();
}

std::shared_ptr<AvgPool2d> AvgPool2d::from_config(const std::string& config_json) {
  const nlohmann::json j = parse_untrusted_json(config_json, "AvgPool2d spec");
  const JsonObject c(j, "AvgPool2d spec");
  return std::make_shared<AvgPool2d>(size2_from(c, "kernel", 1), size2_from(c, "stride", 0),
                                     size2_from(c, "padding", 0),
                                     c.boolean("count_include_pad", true));
}

ShapeRule AvgPool2d::shape_rule_of_config(const std::string& config_json) {
  const auto m = from_config(config_json);
  return window_rule("avg_pool2d", "AvgPool2d", m->kernel_, m->stride_, m->padding_);
}

Tensor GlobalAvgPool2d::forward(const Tensor& x) {
  LOOM_CHECK(x.dim() == 4, "GlobalAvgPool2d: expected input [N, C, H, W], got ",
             shape_str(x.shape()));
  return global_avg_pool2d(x).flatten(1);
}

InputFit GlobalAvgPool2d::output_shape(const Shape& x) {
  if (x.size() != 3) {
    return not_fit(InputFit::Verdict::Refused,
                   "GlobalAvgPool2d takes images [C, H, W], gets " + shape_str(x));
  }
  return fits({x[0]});
}

}  // namespace loom::nn
