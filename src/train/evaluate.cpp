// evaluate and predict: passes over a loader without gradients, on one rank or summed over N.
#include <optional>
#include <utility>
#include <vector>

#include "loom/nn/models/predict.h"
#include "loom/ops/ops.h"
#include "loom/tensor/autograd.h"
#include "loom/train/fit.h"
#include "loom/train/precision.h"
#include "loom/train/ranks.h"

namespace loom::train {

namespace {
// Turns one rank's evaluation sums into the result over all ranks: the counts summed, the
// confusion matrix too (a rank without samples contributes zeros of the agreed size).
EvalResult sum_over_ranks(dist::ProcessGroup& group, const Tensor& loss_sum, const Tensor& correct,
                          const Tensor& confusion, int64_t samples) {
  const std::vector<double> sums = all_reduce_values(
      group, {loss_sum.item<double>(), correct.item<double>(), static_cast<double>(samples)});
  const int64_t k =
      all_reduce_value(group, confusion.defined() ? confusion.size(0) : 0, dist::ReduceOp::Max);
  Tensor counts =
      (confusion.defined() ? confusion.to(kInt64) : zeros({k, k}, TensorOptions(kInt64)))
          .to(group.device())
          .contiguous();
  group.all_reduce(counts)->wait();
  EvalResult result;
  result.samples = static_cast<int64_t>(sums[2]);
  if (result.samples > 0) {
    result.loss = sums[0] / sums[2];
    result.accuracy = sums[1] / sums[2];
    result.confusion = counts.cpu();
  }
  return result;
}

// A probability sum's log, bounded below so that a sum underflowing to 0 gives a large finite
// negative logit rather than -inf (the loss stays finite, the decision the same).
Tensor log_of_sum(const Tensor& s) { return clamp(s, 1e-38, 2.0).log(); }

// [n, k] rows of zeros with a 1 at each class in [0, k), a row of zeros for a class outside it;
// `numbers` is [1, k]: 0 .. k-1 on the classes' device. Unlike one_hot, which checks each batch's
// classes by waiting for the device, nothing is read back: a pass's labels are checked once at
// its end (check_labels), so the host queues the next batch while the device works on this one.
Tensor class_rows(const Tensor& classes, const Tensor& numbers) {
  return eq(classes.reshape({classes.numel(), 1}).to(kInt64), numbers).to(kFloat32);
}

// The confusion counts every sample of the pass once, unless a label lay outside [0, k).
void check_labels(const Tensor& confusion, int64_t samples) {
  if (!confusion.defined()) return;
  const auto counted = static_cast<int64_t>(sum(confusion).item<double>());
  LOOM_CHECK(counted == samples, "evaluate: ", samples - counted, " of the ", samples,
             " labels are outside [0, ", confusion.size(0), "), the model's classes");
}
}  // namespace

Tensor flip_horizontal(const Tensor& images) {
  LOOM_CHECK(images.dim() == 4, "flip_horizontal: images must be [N, C, H, W], got ", images.dim(),
             " dimensions");
  return flip(images, {3});
}

Tensor flip_tta_outputs(nn::Module& model, const Tensor& images, bool autocast,
                        bool channels_last) {
  NoGradGuard no_grad;
  const Tensor a = forward(model, model_input(images, channels_last), autocast);
  const Tensor b = forward(model, model_input(flip_horizontal(images), channels_last), autocast);
  return flip_tta_mean(a, b);
}

Tensor flip_tta_mean(const Tensor& a, const Tensor& b) {
  LOOM_CHECK(a.dim() == 2 && a.shape() == b.shape(),
             "flip_tta: the model's outputs must be [N, K], got ", shape_str(a.shape()), " and ",
             shape_str(b.shape()));
  if (a.size(1) == 1) {
    // logit((s(a) + s(b)) / 2) = log(s(a) + s(b)) - log(s(-a) + s(-b)), as 1 - s(x) = s(-x):
    // no 1 - p to lose the digits of a probability near 1.
    return log_of_sum(a.sigmoid() + b.sigmoid()) -
           log_of_sum(a.neg().sigmoid() + b.neg().sigmoid());
  }
  return log_of_sum((a.softmax(1) + b.softmax(1)) * 0.5);
}

Tensor pad_batch(const Tensor& images, int64_t rows) {
  LOOM_CHECK(images.dim() >= 1 && images.size(0) <= rows, "pad_batch: ", images.size(0),
             " rows cannot be padded to ", rows);
  if (images.size(0) == rows) return images;
  Shape padding = images.shape();
  padding[0] = rows - images.size(0);
  return cat({images, zeros(padding, images.options())}, 0);
}

EvalResult evaluate(nn::Module& model, const LossFn& loss_fn, data::DataLoader& loader,
                    dist::ProcessGroup* group, const std::vector<MetricPtr>& metrics,
                    const std::function<void(int64_t done, int64_t total)>& progress, bool autocast,
                    bool channels_last, bool flip_tta) {
  nn::EvalModeGuard eval_mode(model);
  NoGradGuard no_grad;
  const Device device = model.device();
  Tensor loss_sum = zeros({}, device), correct = zeros({}, device), confusion;
  EvalResult result;
  for (const MetricPtr& m : metrics) m->reset();
  int64_t batches = 0;
  loader.start_epoch(0);
  // On CUDA a short last batch is padded to the first batch's size with zero images, whose
  // outputs are then cut off: every batch has one shape, so the convolution algorithms chosen
  // (and timed, under the conv benchmark) for the first batch serve the last one too. In eval
  // mode each image's outputs do not depend on the others in its batch. A pass of one batch
  // keeps its size: there is no other shape to share, and padding it could multiply its work.
  int64_t first_rows = 0;
  Tensor class_numbers;
  while (std::optional<data::Batch> batch = loader.next()) {
    const int64_t n = batch->labels.numel();
    if (first_rows == 0) first_rows = n;
    const bool pad = device.is_cuda() && n < first_rows;
    const Tensor images = pad ? pad_batch(batch->images, first_rows) : batch->images;
    Tensor outputs = flip_tta ? flip_tta_outputs(model, images, autocast, channels_last)
                              : forward(model, model_input(images, channels_last), autocast);
    if (outputs.size(0) != n) outputs = outputs.narrow(0, 0, n);
    loss_sum = loss_sum + loss_fn(outputs, batch->labels) * static_cast<double>(n);
    correct = correct + count_correct(outputs, batch->labels);
    // confusion[t, p] += 1 for each sample: rows(true)^T [K, n] x rows(pred) [n, K].
    if (!class_numbers.defined()) {  // uploaded once a pass: an upload waits for the device
      const int64_t k = outputs.size(1) == 1 ? 2 : outputs.size(1);
      class_numbers =
          arange(static_cast<double>(k), TensorOptions(kInt64).device(device)).reshape({1, k});
    }
    const Tensor counts = matmul(class_rows(batch->labels, class_numbers).t(),
                                 class_rows(predicted_classes(outputs), class_numbers));
    confusion = confusion.defined() ? confusion + counts : counts;
    for (const MetricPtr& m : metrics) m->update(outputs, batch->labels);
    result.samples += n;
    if (progress) progress(++batches, loader.num_batches());
  }
  std::map<std::string, double> metric_values;
  for (const MetricPtr& m : metrics) metric_values[m->name()] = m->result(group);
  check_labels(confusion, result.samples);
  if (group != nullptr && group->size() > 1) {
    EvalResult summed = sum_over_ranks(*group, loss_sum, correct, confusion, result.samples);
    summed.metrics = std::move(metric_values);
    return summed;
  }
  result.metrics = std::move(metric_values);
  if (result.samples > 0) {
    result.loss = loss_sum.item<double>() / result.samples;
    result.accuracy = correct.item<double>() / result.samples;
    result.confusion = confusion.cpu().to(kInt64);
  }
  return result;
}

Tensor predict(nn::Module& model, data::DataLoader& loader) {
  std::vector<Tensor> parts;
  loader.start_epoch(0);
  while (std::optional<data::Batch> batch = loader.next())
    parts.push_back(nn::predict(model, batch->images).cpu());
  LOOM_CHECK(!parts.empty(), "predict: the loader delivered no batch");
  return cat(parts, 0);
}

}  // namespace loom::train
