// CapturedStep: eager warm-up, capture and replay of a training step per input shape.
#include "loom/train/captured_step.h"

#include <utility>

#include "loom/distributed/agreement.h"
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

CapturedStep::CapturedStep(nn::Module& model, LossFn loss, optim::Optimizer& optimizer,
                           Options options)
    : model_(model), loss_(std::move(loss)), optimizer_(optimizer), options_(options) {
  LOOM_CHECK(options_.warmup_steps >= 1,
             "CapturedStep: warmup_steps must be >= 1 (the first eager step "
             "creates the optimizer's state), got ",
             options_.warmup_steps);
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
    if (s->input_shape == inputs.shape() && s->label_shape == labels.shape() &&
        s->input_dtype == inputs.dtype() && s->label_dtype == labels.dtype() &&
        s->training == model_.is_training()) {
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

bool CapturedStep::ranks_disagree(const Tensor& inputs, const Tensor& labels) {
  if (!options_.group || options_.group->size() == 1 || options_.ranks_share_shapes) return false;
  // FNV-1a over what shape_for tells shapes apart by.
  uint64_t key = 1469598103934665603ull;
  auto mix = [&](uint64_t v) { key = (key ^ v) * 1099511628211ull; };
  for (const auto& shape : {inputs.shape(), labels.shape()}) {
    mix(shape.size());
    for (int64_t d : shape) mix(static_cast<uint64_t>(d));
  }
  mix(static_cast<uint64_t>(inputs.dtype()));
  mix(static_cast<uint64_t>(labels.dtype()));
  mix(model_.is_training() ? 1 : 0);
  return !dist::all_equal(*options_.group, key);
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
    LOOM_FAIL(
        "CapturedStep: the training step cannot be captured into a CUDA graph (nothing of this "
        "step "
        "ran): ",
        e.what());
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
  LOOM_CHECK(labels.device() == inputs.device(), "CapturedStep::run: labels on ",
             labels.device().str(), " but inputs on ", inputs.device().str());
  if (ranks_disagree(inputs, labels)) return eager(inputs, labels);
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
  if (options_.group) {
    LOOM_CHECK(!options_.group->is_aborted(), "CapturedStep: ", options_.group->who(),
               " was aborted (", options_.group->abort_reason(),
               "): its captured collectives cannot run again");
  }
  s->graph->replay();
  if (options_.group) options_.group->watch_stream("a captured step's replay");
  ++replays_;
  return {s->loss, s->outputs, true};
}

TrainStep::Result CapturedStep::run(const Tensor& inputs, const Tensor& labels,
                                    TrainContext& /*ctx*/) {
  Result r = run(inputs, labels);
  return {r.loss, r.outputs};
}

}  // namespace loom::train
