// A training step (forward, loss, backward, optimizer step) captured into a CUDA graph and
// replayed: a step of a small model costs one graph launch instead of some twenty kernel launches,
// each with its host-side work (autograd, allocation, dispatch). PyTorch users get this with
// torch.cuda.graph and a capturable optimizer; here it is one object, or FitOptions::capture.
//
//   train::CapturedStep step(model, train::binary_cross_entropy_loss(), optimizer);
//   for (auto& batch : batches) {
//     train::CapturedStep::Result r = step.run(batch.images, batch.labels);
//     ... r.loss, r.outputs (valid until the next run of the same shape)
//   }
//
// The first run of each input shape is an ordinary eager step (it creates the optimizer's state
// and picks the convolution algorithms); the second captures that shape's step and replays it;
// later runs copy their batch into the graph's static inputs and replay. A last partial batch
// is simply another shape with its own graph; past `max_graphs` shapes the steps run eagerly.
// The optimizer's learning rate and step counts are read on the host before every replay
// (schedules work, and state_dict() stays exact), and a replayed step gives bit for bit the
// parameters of the eager one. A model inside DistributedDataParallel over NCCL is captured with
// its bucket all-reduces (NCCL collectives are graph nodes; every rank captures the same
// sequence). A step that cannot be captured (a host synchronisation such as item(), a random
// draw such as dropout, a collective of a host-driven backend: threads, MPI, TCP) makes run()
// throw a loom::Error naming what, before anything of that step has run. On the CPU every step
// is eager.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "loom/distributed/process_group.h"
#include "loom/nn/module.h"
#include "loom/optim/optimizer.h"
#include "loom/train/train_step.h"

namespace loom::train {

class CapturedStep : public TrainStep {
 public:
  struct Options {
    int warmup_steps = 1;   // eager steps of each shape before it is captured
    size_t max_graphs = 4;  // shapes with a graph of their own; further shapes run eagerly
    // Runs after every step's optimizer update, with the step's loss, outputs and labels
    // (without history); captured with the step, so it may only update, in place, tensors that
    // outlive the graph (fit's running sums of loss and correct predictions).
    std::function<void(const Tensor& loss, const Tensor& outputs, const Tensor& labels)> after_step;
    // Runs between backward and the optimizer update, captured with the step: device work on
    // the gradients only (fit's gradient clipping, optim::clip_grad_norm_on_device).
    std::function<void()> before_update;
    // The forward pass under loom::Autocast, its output widened to float32 (train::forward):
    // bf16 mixed precision, captured with the rest of the step.
    bool autocast = false;
    // The ranks that run this step together (fit passes DistributedDataParallel's group). NCCL
    // requires every rank to capture, replay or run eagerly the same collectives at the same
    // step, so with two or more ranks each CUDA step first checks over the group that every
    // rank has a batch of the same shape (dist::all_equal: through shared memory for spawn's
    // thread ranks, else one small collective that the host waits for).
    // When the shapes differ (a loader that skipped bad samples), every rank runs that step
    // eagerly, and none counts it towards capturing, so the ranks' choices stay the same. Each
    // replay is watched with the group's timeout (a peer that died fails the step instead of
    // hanging it), a replay after the group aborted is refused, and the group outlives the
    // graphs that captured its collectives.
    dist::GroupPtr group;
    // The caller's promise that every rank's batch has the same shape at every step (fixed
    // tensors, or equal shards whose loaders drop nothing and drop the last partial batch):
    // the per-step check is skipped. Broken, the ranks may choose apart: a hang, or collectives
    // paired with the wrong ones.
    bool ranks_share_shapes = false;
  };
  CapturedStep(nn::Module& model, LossFn loss, optim::Optimizer& optimizer, Options options);
  CapturedStep(nn::Module& model, LossFn loss, optim::Optimizer& optimizer);
  ~CapturedStep() override;
  CapturedStep(const CapturedStep&) = delete;
  CapturedStep& operator=(const CapturedStep&) = delete;

  struct Result {
    Tensor loss;     // the step's mean loss, a device scalar without history
    Tensor outputs;  // the model's outputs, without history
    bool replayed;   // whether a graph ran this step
  };
  // One training step on this batch: zero_grad, forward, loss, backward, optimizer step. After a
  // replay the results (and the parameters' .grad) are the graph's static tensors, which the
  // next replay of the same shape overwrites: copy what must outlive it.
  Result run(const Tensor& inputs, const Tensor& labels);
  // As fit calls it: run(inputs, labels).
  TrainStep::Result run(const Tensor& inputs, const Tensor& labels, TrainContext& ctx) override;

  int64_t replays() const { return replays_; }
  int64_t eager_steps() const { return eager_steps_; }
  size_t graphs() const;  // captured so far

 private:
  struct Shape;
  Result eager(const Tensor& inputs, const Tensor& labels);
  void capture(Shape& shape, const Tensor& inputs, const Tensor& labels);
  Shape* shape_for(const Tensor& inputs, const Tensor& labels);
  // Whether some rank of options_.group has a batch of another shape this step.
  bool ranks_disagree(const Tensor& inputs, const Tensor& labels);

  nn::Module& model_;
  LossFn loss_;
  optim::Optimizer& optimizer_;
  Options options_;  // before shapes_: the group outlives the graphs
  std::vector<std::unique_ptr<Shape>> shapes_;
  int64_t replays_ = 0, eager_steps_ = 0;
};

}  // namespace loom::train
