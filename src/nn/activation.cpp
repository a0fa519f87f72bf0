// Parameterless layers: forwarding to the ops, and the specs of those with settings.
#include "loom/nn/activation.h"

#include <nlohmann/json.hpp>

#include "loom/nn/untrusted_json.h"
#include "loom/ops/activation.h"
#include "loom/ops/softmax.h"

namespace loom::nn {

namespace {
// The dimensions a spec may name (negative: from the end), far more than any input has.
constexpr int64_t kMaxDims = 64;

// `dim` of a tensor of `rank` dimensions as wrap_dim maps it, or -1 where wrap_dim throws.
int64_t wrapped(int64_t dim, int64_t rank) {
  if (dim < -rank || dim >= rank) return -1;
  return dim < 0 ? dim + rank : dim;
}

}  // namespace

Tensor ReLU::forward(const Tensor& x) { return relu(x); }
Tensor Sigmoid::forward(const Tensor& x) { return sigmoid(x); }
Tensor Tanh::forward(const Tensor& x) { return loom::tanh(x); }

Tensor LeakyReLU::forward(const Tensor& x) { return leaky_relu(x, negative_slope_); }

std::string LeakyReLU::config_json() const {
  return nlohmann::json{{"negative_slope", negative_slope_}}.dump();
}

std::shared_ptr<LeakyReLU> LeakyReLU::from_config(const std::string& config_json) {
  const nlohmann::json j = parse_untrusted_json(config_json, "LeakyReLU spec");
  return std::make_shared<LeakyReLU>(
      JsonObject(j, "LeakyReLU spec").number("negative_slope", 0.01));
}

Tensor Softmax::forward(const Tensor& x) { return softmax(x, dim_); }

std::string Softmax::config_json() const { return nlohmann::json{{"dim", dim_}}.dump(); }

std::shared_ptr<Softmax> Softmax::from_config(const std::string& config_json) {
  const nlohmann::json j = parse_untrusted_json(config_json, "Softmax spec");
  return std::make_shared<Softmax>(
      JsonObject(j, "Softmax spec").integer("dim", -kMaxDims, kMaxDims, -1));
}

// The shape as it is; a dim the tensor (the example and its batch) does not have is refused.
ShapeRule Softmax::shape_rule_of_config(const std::string& config_json) {
  const int64_t dim = from_config(config_json)->dim_;
  return [dim](const Shape& x) {
    if (wrapped(dim, static_cast<int64_t>(x.size()) + 1) < 0) {
      return not_fit(InputFit::Verdict::Refused, "Softmax(dim " + std::to_string(dim) +
                                                     ") does not fit its input of " + shape_str(x) +
                                                     " and a batch");
    }
    return fits(x);
  };
}

Tensor Flatten::forward(const Tensor& x) { return x.flatten(start_dim_, end_dim_); }

std::string Flatten::config_json() const {
  return nlohmann::json{{"start_dim", start_dim_}, {"end_dim", end_dim_}}.dump();
}

std::shared_ptr<Flatten> Flatten::from_config(const std::string& config_json) {
  const nlohmann::json j = parse_untrusted_json(config_json, "Flatten spec");
  const JsonObject c(j, "Flatten spec");
  return std::make_shared<Flatten>(c.integer("start_dim", -kMaxDims, kMaxDims, 1),
                                   c.integer("end_dim", -kMaxDims, kMaxDims, -1));
}

// Dims start_dim..end_dim of the batch [N, ...example] merged as Tensor::flatten merges them.
// Merging the batch dimension into others makes a shape that depends on the batch size.
ShapeRule Flatten::shape_rule_of_config(const std::string& config_json) {
  const auto f = from_config(config_json);
  const int64_t start_dim = f->start_dim_, end_dim = f->end_dim_;
  return [start_dim, end_dim](const Shape& x) {
    const int64_t rank = static_cast<int64_t>(x.size()) + 1;
    const int64_t start = wrapped(start_dim, rank), end = wrapped(end_dim, rank);
    const std::string name =
        "Flatten(" + std::to_string(start_dim) + ", " + std::to_string(end_dim) + ")";
    if (start < 0 || end < 0 || start > end) {
      return not_fit(InputFit::Verdict::Refused,
                     name + " does not fit its input of " + shape_str(x) + " and a batch");
    }
    if (start == end) return fits(x);
    if (start == 0)
      return not_fit(InputFit::Verdict::Unknown, name + " merges the batch dimension into others");
    Shape out(x.begin(), x.begin() + (start - 1));
    int64_t merged = 1;  // at most kMaxExampleElements: SpecShapes bounds every layer's input
    for (int64_t d = start - 1; d < end; ++d) merged *= x[d];
    out.push_back(merged);
    out.insert(out.end(), x.begin() + end, x.end());
    return fits(out);
  };
}

}  // namespace loom::nn
