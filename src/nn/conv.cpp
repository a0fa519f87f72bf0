// Conv2d: parameters, initialisation and spec; the maths is loom::conv2d.
#include "loom/nn/conv.h"

#include <nlohmann/json.hpp>

#include "loom/nn/untrusted_json.h"

namespace loom::nn {

namespace {

nlohmann::json pair_json(const std::array<int64_t, 2>& p) { return {p[0], p[1]}; }

}  // namespace

Conv2d::Conv2d(int64_t in_channels, int64_t out_channels, Size2 kernel,
               const Conv2dOptions& options, bool bias, Init init, Generator* gen)
    : in_channels_(in_channels), out_channels_(out_channels), kernel_(kernel), options_(options) {
  LOOM_CHECK(in_channels > 0 && out_channels > 0 && kernel.h > 0 && kernel.w > 0,
             "Conv2d: channels and kernel sizes must be positive, got in_channels ", in_channels,
             ", out_channels ", out_channels, ", kernel ", kernel.h, "x", kernel.w);
  weight = register_parameter("weight", empty({out_channels, in_channels, kernel.h, kernel.w}));
  if (bias) this->bias = register_parameter("bias", empty({out_channels}));
  reset_own_parameters(init, gen);
}

namespace {
void check_conv_input(const Tensor& x, int64_t in_channels, int64_t out_channels) {
  LOOM_CHECK(x.dim() == 4 && x.size(1) == in_channels, "Conv2d(", in_channels, ", ", out_channels,
             "): expected input [N, ", in_channels, ", H, W], got ", shape_str(x.shape()));
}
}  // namespace

Tensor Conv2d::forward(const Tensor& x) {
  check_conv_input(x, in_channels_, out_channels_);
  return conv2d(x, weight, bias, options_);
}

Tensor Conv2d::forward_relu(const Tensor& x) {
  check_conv_input(x, in_channels_, out_channels_);
  return conv2d_relu(x, weight, bias, options_);
}

void Conv2d::reset_own_parameters(Init scheme, Generator* gen) {
  init_weight_and_bias(scheme, weight, bias, gen);
}

std::string Conv2d::config_json() const {
  nlohmann::json padding;
  switch (options_.padding_mode_) {
    case Padding::Same:
      padding = "same";
      break;
    case Padding::Valid:
      padding = "valid";
      break;
    case Padding::Explicit:
      padding = pair_json(options_.padding_);
      break;
  }
  return nlohmann::json{{"in_channels", in_channels_},
                        {"out_channels", out_channels_},
                        {"kernel", {kernel_.h, kernel_.w}},
                        {"stride", pair_json(options_.stride_)},
                        {"padding", padding},
                        {"dilation", pair_json(options_.dilation_)},
                        {"bias", bias.defined()}}
      .dump();
}

namespace {

struct Conv2dConfig {
  int64_t in_channels, out_channels;
  Size2 kernel{1, 1};
  Conv2dOptions options;
  bool bias;
};

Conv2dConfig parse_conv_config(const std::string& config_json) {
  const nlohmann::json j = parse_untrusted_json(config_json, "Conv2d spec");
  const JsonObject c(j, "Conv2d spec");
  Conv2dConfig out;
  out.in_channels = c.integer("in_channels", 1, kMaxSpecInteger);
  out.out_channels = c.integer("out_channels", 1, kMaxSpecInteger);
  const auto kernel = c.pair("kernel", 1, kMaxSpecInteger);
  out.kernel = Size2(kernel[0], kernel[1]);
  const auto stride = c.pair("stride", 1, kMaxSpecInteger);
  const auto dilation = c.pair("dilation", 1, kMaxSpecInteger);
  out.options.stride(stride[0], stride[1]).dilation(dilation[0], dilation[1]);
  const nlohmann::json& padding = c.at("padding");
  if (padding.is_string()) {
    const std::string& mode = padding.get_ref<const std::string&>();
    LOOM_CHECK(mode == "same" || mode == "valid",
               "Conv2d spec: padding must be \"same\", \"valid\" or [h, w], got ",
               json_excerpt(padding));
    out.options.padding(mode == "same" ? Padding::Same : Padding::Valid);
  } else {
    const auto p = c.pair("padding", 0, kMaxSpecInteger);
    out.options.padding(p[0], p[1]);
  }
  out.bias = c.boolean("bias", true);
  return out;
}

}  // namespace

std::shared_ptr<Conv2d> Conv2d::from_config(const std::string& config_json) {
  const Conv2dConfig c = parse_conv_config(config_json);
  return std::make_shared<Conv2d>(c.in_channels, c.out_channels, c.kernel, c.options, c.bias);
}

std::vector<StateEntry> Conv2d::state_of_config(const std::string& config_json) {
  const Conv2dConfig c = parse_conv_config(config_json);
  std::vector<StateEntry> state = {
      {"weight", {c.out_channels, c.in_channels, c.kernel.h, c.kernel.w}, kFloat32}};
  if (c.bias) state.push_back({"bias", {c.out_channels}, kFloat32});
  return state;
}

// [C, H, W] -> [out_channels, OH, OW], each axis by conv2d's own conv2d_axis.
ShapeRule Conv2d::shape_rule_of_config(const std::string& config_json) {
  const Conv2dConfig c = parse_conv_config(config_json);
  const std::string name =
      "Conv2d(" + std::to_string(c.in_channels) + " -> " + std::to_string(c.out_channels) + ")";
  return [c, name](const Shape& x) {
    if (!is_image_of(x, c.in_channels)) return not_an_image(x, c.in_channels, name);
    const ConvAxis h = conv2d_axis(c.options, 0, x[1], c.kernel.h),
                   w = conv2d_axis(c.options, 1, x[2], c.kernel.w);
    if (h.out < 1 || w.out < 1) {
      return not_fit(InputFit::Verdict::TooSmall,
                     name + "'s " + std::to_string(c.kernel.h) + "x" + std::to_string(c.kernel.w) +
                         " kernel is larger than its padded input " +
                         std::to_string(x[1] + h.pad_before + h.pad_after) + "x" +
                         std::to_string(x[2] + w.pad_before + w.pad_after));
    }
    return fits({c.out_channels, h.out, w.out});
  };
}

}  // namespace loom::nn
