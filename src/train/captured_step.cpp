// CapturedStep: eager warm-up, capture and replay of a training step per input shape.
#include "loom/train/captured_step.h"

#include <utility>

#include "loom/tensor/cuda/graph.h"
#include "loom/train/precision.h"

namespace loom::train {

// One input shape (and train/eval mode): its eager steps so far and, once captured, its graph
// with the static tensors the graph reads and writes.
struct CapturedStep::Shape {
  std::vector<int64_t> input_shape, label_shape;
  DType input_dtype, label_dtype;
  bool training;
  int eager_runs = 0;
  std::unique_ptr<cuda::Graph> graph;
  Tensor inputs, labels;  // the graph's inputs: each run copies its batch here
  Tensor loss, outputs;   // what the graph computes
  std::vector<std::pair<Tensor, Tensor>> grads;  // each parameter and the gradient the graph writes
};

CapturedStep::CapturedStep(nn::Module& model, LossFn loss, optim::Optimizer& optimizer, Options options)
    : model_(model), loss_(std::move(loss)), optimizer_(optimizer), options_(options) {
  LOOM_CHECK(options_.warmup_steps >= 1, "CapturedStep: warmup_steps must be >= 1 (the first eager step "
             "creates the optimizer's state), got ", options_.warmup_steps);
}

CapturedStep::CapturedStep(nn::Module& model, LossFn loss, optim::Optimizer& optimizer)
    : CapturedStep(model, std::move(loss), optimizer, Options{}) {}

CapturedStep::~CapturedStep() = default;

size_t CapturedStep::graphs() const {
  size_t n = 0;
  for (const auto& s : shapes_) n += s->graph != nullptr ? 1 : 0;
  return n;
}

CapturedStep::Result CapturedStep::eager(const Tensor& inputs, const Tensor& labels) {
  const Tensor outputs = forward(model_, inputs, options_.autocast);
  const Tensor loss = loss_(outputs, labels);
  optimizer_.zero_grad();
  loss.backward();
  if (options_.before_update) options_.before_update();
  optimizer_.step();
  ++eager_steps_;
  if (options_.after_step) options_.after_step(loss.detach(), outputs.detach(), labels);
  return {loss.detach(), outputs.detach(), false};
}

CapturedStep::Shape* CapturedStep::shape_for(const Tensor& inputs, const Tensor& labels) {
  for (const auto& s : shapes_) {
    if (s->input_shape == inputs.shape() && s->label_shape == labels.shape() && s->input_dtype == inputs.dtype() &&
        s->label_dtype == labels.dtype() && s->training == model_.is_training()) {
      return s.get();
    }
  }
  if (shapes_.size() >= options_.max_graphs) return nullptr;
  auto s = std::make_unique<Shape>();
  s->input_shape = inputs.shape();
  s->label_shape = labels.shape();
  s->input_dtype = inputs.dtype();
  s->label_dtype = labels.dtype();
  s->training = model_.is_training();
  shapes_.push_back(std::move(s));
  return shapes_.back().get();
}

void CapturedStep::capture(Shape& s, const Tensor& inputs, const Tensor& labels) {
  const int device = inputs.device().index;
  // The static input keeps the inputs' layout: a channels-last batch stays channels-last.
  s.inputs = empty(inputs.shape(), inputs.options(), inputs.suggest_memory_format());
  s.inputs.copy_(inputs);
  s.labels = labels.contiguous().clone();
  // Dropped before the capture, so that its backward allocates the gradients in the graph's pool.
  optimizer_.zero_grad();
  auto graph = std::make_unique<cuda::Graph>(device);
  graph->capture_begin();
  try {
    const Tensor outputs = forward(model_, s.inputs, options_.autocast);
    const Tensor loss = loss_(outputs, s.labels);
    loss.backward();
    if (options_.before_update) options_.before_update();
    optimizer_.step();
    if (options_.after_step) options_.after_step(loss.detach(), outputs.detach(), s.labels);
    graph->capture_end();
    s.outputs = outputs.detach();
    s.loss = loss.detach();
  } catch (const Error& e) {
    graph->capture_abort();
    LOOM_FAIL("CapturedStep: the training step cannot be captured into a CUDA graph (nothing of this step "
              "ran): ", e.what());
  }
  s.grads.clear();
  for (const optim::ParamGroup& group : optimizer_.param_groups()) {
    for (const Tensor& p : group.params) {
      if (p.grad().defined()) s.grads.emplace_back(p, p.grad());
    }
  }
  s.graph = std::move(graph);
}

CapturedStep::Result CapturedStep::run(const Tensor& inputs, const Tensor& labels) {
  LOOM_CHECK(inputs.defined() && labels.defined(), "CapturedStep::run: undefined inputs or labels");
  if (!inputs.is_cuda()) return eager(inputs, labels);
  LOOM_CHECK(labels.device() == inputs.device(), "CapturedStep::run: labels on ", labels.device().str(),
             " but inputs on ", inputs.device().str());
  Shape* s = shape_for(inputs, labels);
  if (s == nullptr || s->eager_runs < options_.warmup_steps) {
    if (s != nullptr) ++s->eager_runs;
    return eager(inputs, labels);
  }
  if (s->graph == nullptr) {
    // The capture's own optimizer step set this replay's constants.
    capture(*s, inputs, labels);
  } else {
    s->inputs.copy_(inputs);
    s->labels.copy_(labels);
    // Another shape's step may have given the parameters other gradient tensors.
    for (auto& [param, grad] : s->grads) {
      if (param.grad().impl() != grad.impl()) Tensor(param).set_grad(grad);
    }
    s->graph->refresh([this] { optimizer_.step(); });
  }
  s->graph->replay();
  ++replays_;
  return {s->loss, s->outputs, true};
}

}  // namespace loom::train
