// fit / evaluate / predict: the Keras-like training loop for any nn::Module and DataLoader, on
// one rank or on the N ranks of a process group. Loss and accuracy are summed on the model's
// device (loss * batch size, correct predictions) and read only when a progress line is drawn
// or an epoch ends, never once per step; on N ranks those are also the only moments the sums
// cross ranks.
#pragma once

#include <cstdint>
#include <functional>
#include <iostream>
#include <map>
#include <optional>
#include <vector>

#include "loom/data/data_loader.h"
#include "loom/distributed/process_group.h"
#include "loom/io/checkpoint.h"
#include "loom/nn/module.h"
#include "loom/optim/optimizer.h"
#include "loom/train/callback.h"
#include "loom/train/history.h"
#include "loom/train/metrics.h"
#include "loom/train/train_step.h"

namespace loom::train {

// For a binary head [B, 1] of logits: binary_cross_entropy_with_logits against the 0/1 labels,
// smoothed to y (1 - s) + s / 2 with label_smoothing s (Keras' BinaryCrossentropy).
LossFn binary_cross_entropy_loss(double label_smoothing = 0.0);
// For class logits [B, K]: cross_entropy against the class indices (label_smoothing as
// nn::cross_entropy, PyTorch's definition).
LossFn cross_entropy_loss(double label_smoothing = 0.0);

// The number of correct predictions as a float32 device scalar: logit >= 0 (p >= 0.5, as predict
// decides) means class 1 for a binary head [B, 1], argmax otherwise.
Tensor count_correct(const Tensor& outputs, const Tensor& labels);

struct FitOptions {
  int64_t epochs = 1;
  std::vector<CallbackPtr> callbacks;
  std::ostream* out = &std::cout;  // progress and epoch lines; null for silence
  std::optional<bool> tty;         // redraw in place; default: whether `out` is a terminal
  // Continue from a checkpoint's state (io::load_checkpoint has restored the model, optimizer
  // and generator): the loop restarts its epoch and skips the batches already done.
  std::optional<io::TrainingState> resume;
  // The ranks training together; null (or one rank) trains alone, exactly as without it. With
  // N ranks every rank calls fit with the same options, its own model (normally a
  // dist::DistributedDataParallel over this group) and its own loaders, which must deal this
  // rank's shard (data::train_shard_options, eval_shard_options; checked). Then:
  //  - each epoch takes the number of steps of the rank with the fewest batches (agreed by one
  //    all_reduce Min at its start: a rank's extra batches are dropped, as drop_last would);
  //    DistributedSampler's equal shards make that every rank's count;
  //  - progress lines fall on the tenths of an epoch (a terminal too), so that all ranks sum
  //    their loss * count, correct predictions and sample counts at the same steps; those
  //    sums, and the validation shards' summed counts, make the metrics of every rank's History;
  //  - only rank 0 prints (callbacks see ctx.rank and write files on rank 0 only);
  //  - a resumed run continues as the uninterrupted N-rank run: each rank takes its own running
  //    sums from the checkpoint, and its generator becomes dist::rank_seed(checkpoint seed,
  //    rank) at the checkpoint's offset, as dist::spawn and init_from_environment seed ranks.
  //    A checkpoint taken mid-epoch resumes only on as many ranks as wrote it.
  dist::GroupPtr group;
  // Capture each input shape's training step into a CUDA graph and replay it (train::CapturedStep):
  // the step's kernels run without the host's per-kernel work. For a model on a CUDA device
  // without random layers (dropout); inside DistributedDataParallel only over NCCL. The steps
  // are bit for bit the eager ones. Ignored on the CPU.
  bool capture = false;
  // bf16 mixed precision on CUDA (train::forward): every forward pass, training and validation,
  // under loom::Autocast, its outputs widened to float32 for the loss and the metrics; the
  // optimizer updates float32 parameters. Ignored on the CPU. Not with a PipelineParallel model.
  bool autocast = false;
  // Feed every 4-D batch of images to the model channels-last (MemoryFormat::ChannelsLast), in
  // training and validation: on CUDA, convolutions, batch norm, pooling and activations then
  // run NHWC throughout, which pays for convolution-heavy models (resnet18, classic_cnn: see
  // docs/benchmarks.md). The values are the same; on the CPU it only costs a copy a batch.
  // Lay the model out channels-last as well (model.to(MemoryFormat::ChannelsLast), before DDP
  // wraps it), or each convolution copies its weight to NHWC and its gradient back every step.
  bool channels_last = false;
  // Horizontal-flip test-time augmentation in validation (evaluate's flip_tta): each validation
  // image's prediction is the mean of the probabilities of it and its mirror. Training is as
  // without it.
  bool flip_tta = false;

  // Which epochs validate (with a validation loader): Keras' validation_freq, from epoch
  // validation_from (counted from 1) on, every validation_freq-th epoch, and the last epoch of
  // the run always. An epoch that does not validate has no "val_" metrics; the callbacks that
  // monitor one (ModelCheckpoint's best model, EarlyStopping, ReduceLROnPlateauStep) pass over it
  // as Keras' do (TrainContext::validation_skipped). Validating from a later epoch saves a pass
  // over the validation data in each epoch before it, where no model worth keeping is expected.
  int64_t validation_freq = 1;
  int64_t validation_from = 1;
  // Metrics besides loss and accuracy: each one's value on the training batches of an epoch
  // (History key name()) and on the validation data ("val_" + name()), over all ranks. A run
  // resumed mid-epoch counts that epoch's training batches from the resume on.
  std::vector<MetricPtr> metrics;
  // Clips the gradients to this global norm before every optimizer step, on the device
  // (optim::clip_grad_norm_on_device: no host sync, so captured steps clip too).
  std::optional<double> clip_grad_norm;
  // Gradient accumulation: the optimizer steps once every accumulate_steps batches (and after
  // an epoch's last batch), on the mean gradient of those batches: each batch's loss is divided
  // by their number. Inside a dist::DistributedDataParallel the backwards before a step run
  // under no_sync(), so gradients cross ranks once per optimizer step. Not with capture.
  int64_t accumulate_steps = 1;
  // Stop at a step boundary when the process is asked to (train/preemption.h: SIGTERM, SIGUSR1,
  // while a PreemptionScope lives): the callbacks' on_preempted (ModelCheckpoint
  // writes its checkpoint) and fit returns with History::preempted_by set, its files on disk.
  // One rank reads the flag after every step (an atomic load). N ranks must stop at the same
  // step: thread ranks of one process (dist::spawn) compare their flags after every step
  // through shared memory (dist::all_equal: microseconds, no device sync); ranks in several
  // processes agree by one all_reduce(max) of the flag every preemption_check_steps steps and
  // after each epoch: one host sync every that many steps, none in between. With
  // accumulate_steps, only after an optimizer step.
  bool stop_on_preemption = false;
  int64_t preemption_check_steps = 10;
  // Called after every backward, before clipping and the optimizer step, with the gradients
  // accumulated so far in the parameters' .grad (inspect, log, or change them). Not with
  // capture: a replayed graph runs no host code between backward and the step.
  std::function<void(TrainContext&)> after_backward;
};

// Each batch takes the step make_train_step chooses once from the model and the options
// (train_step.h: eager, accumulating, a model's own micro-batches such as dist::PipelineParallel's,
// or captured), which also refuses the combinations that cannot be.
// The callbacks' files (TrainContext::write_file: checkpoints, model files, logs) reach the disk
// on a background thread while training goes on, and all of them are there when fit returns or
// throws. A write that fails is fit's loom::Error, naming the file; when training itself threw,
// its exception is rethrown and the write's failure printed to stderr.
History fit(nn::Module& model, const LossFn& loss, optim::Optimizer& optimizer,
            data::DataLoader& train_loader, data::DataLoader* val_loader,
            const FitOptions& options);

struct EvalResult {
  double loss = 0.0;
  double accuracy = 0.0;
  int64_t samples = 0;
  Tensor confusion;  // int64 [K, K] on the CPU: rows true class, columns predicted (K = 2 for a
                     // binary head)
  std::map<std::string, double> metrics;  // each of `metrics`' result, by name()
};

// One pass over epoch 0 of the loader in eval mode without gradients. With a group, each rank
// passes over its own shard and the sums (loss * count, correct predictions, samples, the
// confusion matrix) are summed over the ranks: every rank gets the result for the whole data.
// Each of `metrics` is reset, fed every batch and read into EvalResult::metrics. `progress`, when
// given, is called after each batch with the batches done and the loader's count.
// `autocast`: the forward passes in bf16 mixed precision (train::forward); `channels_last`: the
// images fed channels-last (FitOptions::channels_last); `flip_tta`: each batch's outputs are
// flip_tta_outputs', so the loss, accuracy, confusion matrix and metrics are those of the
// probabilities averaged over each image and its mirror. On CUDA a short last batch is padded
// to the first batch's size with zero images (their outputs dropped), so the model sees one
// shape per pass.
EvalResult evaluate(nn::Module& model, const LossFn& loss, data::DataLoader& loader,
                    dist::ProcessGroup* group = nullptr, const std::vector<MetricPtr>& metrics = {},
                    const std::function<void(int64_t done, int64_t total)>& progress = {},
                    bool autocast = false, bool channels_last = false, bool flip_tta = false);

// `images` with zero rows appended along the first axis up to `rows` rows (itself when it has
// them): evaluate's padding of a short last batch on CUDA.
Tensor pad_batch(const Tensor& images, int64_t rows);

// Images [N, C, H, W] mirrored left to right (the last axis reversed), as a new tensor.
Tensor flip_horizontal(const Tensor& images);

// Horizontal-flip test-time augmentation: the model's outputs for `images` and for their mirror
// (train::forward of each), their probabilities averaged (sigmoid for a one-logit head [N, 1],
// softmax over the classes otherwise) and turned back into logits of that mean (log(p) - log(1 -
// p), or log(p)), so the losses and count_correct apply to them unchanged. Without gradients.
Tensor flip_tta_outputs(nn::Module& model, const Tensor& images, bool autocast = false,
                        bool channels_last = false);
// flip_tta_outputs' combination of the outputs `a` of the images and `b` of their mirror ([N, K]).
Tensor flip_tta_mean(const Tensor& a, const Tensor& b);

// Probabilities (nn::predict) of every sample of the loader's epoch 0, in order, on the CPU.
Tensor predict(nn::Module& model, data::DataLoader& loader);

}  // namespace loom::train
