// PipelineParallel: model parallelism for a Sequential too large (or too slow) for one device.
// The layers are cut into contiguous stages, one per device (several stages may share a
// device: each stage still gets its own stream); a training step cuts the batch into
// micro-batches and runs each stage's forwards and backwards in the schedule's order (GPipe or
// 1F1B, pipeline_plan.h), every stage on its own stream, activations and their gradients passed
// between stages by device copies ordered by events (no host wait inside a step), gradients
// accumulated over the micro-batches; the caller then takes one optimizer step, as after
// backward(). The result equals the unsplit model's up to the order of floating-point sums,
// except for what depends on the batch as a whole: BatchNorm normalises (and updates its
// running statistics) per micro-batch.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "loom/distributed/pipeline_plan.h"
#include "loom/nn/module.h"
#include "loom/nn/sequential.h"

namespace loom::dist {

enum class PipelineBalance {
  Parameters,  // stages of about equal parameter counts (the default: needs no input)
  Time,        // stages of about equal measured forward + backward time (needs sample_input)
};

struct PipelineOptions {
  int micro_batches = 4;
  PipelineSchedule schedule = PipelineSchedule::GPipe;
  PipelineBalance balance = PipelineBalance::Parameters;
  // Explicit cuts instead of balancing: cut_points[k] is the layer where stage k + 1 begins.
  std::vector<int64_t> cut_points;
  // For PipelineBalance::Time: one micro-batch's input shape, batch dimension included.
  Shape sample_input;
  // Records device events (host clocks on the CPU) around every stage op, for last_timing().
  bool time_stages = false;
};

// One stage: its layers [first_layer, end_layer) of the model, its device and parameters.
struct PipelineStage {
  int64_t first_layer = 0;
  int64_t end_layer = 0;
  Device device;
  int64_t parameters = 0;
};

// What the last train_step took, when options.time_stages is on.
struct PipelineTiming {
  double step_ms = 0.0;             // the whole step, on the stages' clocks
  std::vector<double> busy_ms;      // per stage: the sum of its forward and backward ops
  std::vector<double> forward_ms;   // per stage
  std::vector<double> backward_ms;  // per stage
  // 1 - busy / step averaged over the stages: the share of time the stages wait.
  double bubble() const;
};

// The loss of one micro-batch, a mean over its samples (nn's losses' default reduction):
// the step weights each by its share of the batch, so the sum is the batch's mean.
using PipelineLoss = std::function<Tensor(const Tensor& output, const Tensor& target)>;

struct PipelineStepResult {
  Tensor loss;     // the batch's mean loss, a scalar on the input's device, without history
  Tensor outputs;  // the last stage's outputs for the whole batch, on the input's device
};

class PipelineParallel : public nn::Module, public nn::BatchTrainer {
 public:
  // Moves each stage's layers to its device (in place: `model`'s layers are the stages'
  // layers). Throws loom::Error for an empty model, more stages than layers, bad cut points, a
  // device that does not exist, or micro_batches < 1.
  PipelineParallel(std::shared_ptr<nn::Sequential> model, std::vector<Device> devices,
                   PipelineOptions options = {});
  ~PipelineParallel() override;

  // Forward and backward of one batch (its first dimension), gradients accumulated into the
  // parameters' .grad. `target` is split like the input. Throws when the batch has fewer
  // samples than micro-batches.
  PipelineStepResult train_step(const Tensor& input, const Tensor& target,
                                const PipelineLoss& loss);

  // The stages in turn on the whole input, without micro-batches (for evaluation and
  // prediction); the output is on the input's device. Differentiable, through Tensor::to.
  Tensor forward(const Tensor& input) override;

  std::string type_name() const override { return "PipelineParallel"; }

  // The model whose layers the stages hold (save this one).
  const std::shared_ptr<nn::Sequential>& module() const { return model_; }
  nn::Module& unwrapped() override { return *model_; }
  // fit trains a pipeline through train_step.
  nn::BatchTrainer* batch_trainer() override { return this; }
  Result train_batch(const Tensor& inputs, const Tensor& targets, const Loss& loss) override {
    PipelineStepResult r = train_step(inputs, targets, loss);
    return {r.loss, r.outputs};
  }
  const std::vector<PipelineStage>& stages() const { return stages_; }
  const PipelineOptions& options() const { return options_; }
  const PipelineTiming& last_timing() const { return timing_; }
  // Turns options.time_stages on or off for the steps that follow.
  void time_stages(bool on) { options_.time_stages = on; }

  struct Streams;  // per-stage CUDA streams and events, in pipeline.cpp

 private:
  std::shared_ptr<nn::Sequential> model_;
  std::vector<std::shared_ptr<nn::Sequential>> stage_modules_;
  std::vector<PipelineStage> stages_;
  PipelineOptions options_;
  PipelineTiming timing_;
  std::unique_ptr<Streams> streams_;
};

}  // namespace loom::dist
