// PipelineParallel (pipeline.h): building the stages, and one training step run op by op in
// the schedule's host order (pipeline_plan.h).
//
// Streams and memory on CUDA. Each stage runs under its own stream, so stages overlap even on
// one device. A step begins with every stage stream waiting for its device's compute stream
// (the previous optimizer step, the batch's upload) and ends with every stream waiting for
// every stage stream, so what follows the step (the optimizer, the next step) is ordered after
// all of it. In between, the only ordering is by events at the hand-overs: the receiving
// stage's stream waits for the sender's, then copies. A sent tensor's memory belongs to the
// sender's stream, which may hand it out again as soon as the tensor is freed, while the
// receiver's copy is still to run; so the step keeps what stage s sent to stage r alive until
// s's stream is ordered after r's copies: the next time r hands something to s (its stream then
// waits for everything r had enqueued), or the step's end. In 1F1B that frees an activation
// when its gradient comes back and a gradient when the next activation goes out, so memory
// stays bounded by the micro-batches in flight.
#include "loom/distributed/pipeline.h"

#include <algorithm>
#include <chrono>
#include <numeric>
#include <optional>

#include "loom/ops/elementwise.h"
#include "loom/ops/reduction.h"
#include "loom/ops/shape_ops.h"
#include "loom/tensor/autograd.h"
#include "loom/tensor/cuda/runtime.h"
#include "loom/tensor/primitives.h"
#include "loom/tensor/random.h"

namespace loom::dist {

double PipelineTiming::bubble() const {
  if (busy_ms.empty() || step_ms <= 0.0) return 0.0;
  double idle = 0.0;
  for (double busy : busy_ms) idle += 1.0 - std::min(busy, step_ms) / step_ms;
  return idle / static_cast<double>(busy_ms.size());
}

struct PipelineParallel::Streams {
  // Per stage; empty for a CPU stage.
  std::vector<cuda::StreamHandle> stream;
  std::vector<std::unique_ptr<cuda::Event>> handover;  // recorded by the stage, waited on by others
  std::vector<int> device;

  int stages() const { return static_cast<int>(stream.size()); }
  bool gpu(int s) const { return stream[s] != nullptr; }

  // Puts the calling thread on stage s's stream, for a GPU stage.
  void enter(std::optional<cuda::StreamGuard>& guard, int s) const {
    if (gpu(s)) guard.emplace(device[s], stream[s]);
  }

  // Every stage stream waits for its device's current stream (the caller's: a spawn rank's or a
  // StreamGuard's, not necessarily the compute stream): the batch and the last update.
  void order_after_callers() {
    for (int s = 0; s < stages(); ++s) {
      if (!gpu(s)) continue;
      handover[s]->record(cuda::current_stream(device[s]));
      handover[s]->wait(stream[s]);
    }
  }

  // Every stream (the stages' and the devices' compute streams) waits for every stage stream.
  void order_all_after_stages() {
    for (int s = 0; s < stages(); ++s) {
      if (!gpu(s)) continue;
      handover[s]->record(stream[s]);
      for (int t = 0; t < stages(); ++t) {
        if (!gpu(t)) continue;
        handover[s]->wait(stream[t]);
        handover[s]->wait(cuda::current_stream(device[t]));
      }
    }
  }

  ~Streams() {
    for (size_t s = 0; s < stream.size(); ++s) {
      if (stream[s] == nullptr) continue;
      cuda::synchronize_stream(stream[s]);
      cuda::destroy_stream(device[s], stream[s]);
    }
  }
};

namespace {

using Clock = std::chrono::steady_clock;

void check_device(const Device& device, size_t stage) {
  if (!device.is_cuda()) return;
  LOOM_CHECK(built_with_cuda(), "PipelineParallel: stage ", stage, " is on ", device.str(),
             " but loom was built without CUDA");
  const int count = cuda_device_count();
  LOOM_CHECK(device.index >= 0 && device.index < count, "PipelineParallel: stage ", stage,
             " is on ", device.str(), " but this machine has ", count, " CUDA device",
             count == 1 ? "" : "s");
}

// Forward + backward time of each layer on one micro-batch of `sample` shape, in order, each
// layer moved to `device` first (so a model too large for one device is never whole on it).
std::vector<double> measure_layer_costs(const nn::Sequential& model, const Shape& sample,
                                        const Device& device) {
  LOOM_CHECK(!sample.empty(),
             "PipelineParallel: balancing by time needs options.sample_input, "
             "one micro-batch's input shape with its batch dimension");
  const auto sync = [&] {
    if (device.is_cuda()) cuda::synchronize(device.index);
  };
  Tensor x = randn(sample, TensorOptions().device(device));
  std::vector<double> costs;
  for (const auto& [name, layer] : model.named_children()) {
    layer->to(device);
    std::vector<double> runs;
    Tensor out;
    for (int rep = 0; rep < 4; ++rep) {  // the first run warms up (algorithm choice, caches)
      Tensor leaf = x.detach().set_requires_grad(is_floating(x.dtype()));
      sync();
      const auto start = Clock::now();
      out = layer->forward(leaf);
      if (out.requires_grad()) sum(out).backward();
      sync();
      if (rep > 0) runs.push_back(std::chrono::duration<double>(Clock::now() - start).count());
    }
    std::sort(runs.begin(), runs.end());
    costs.push_back(runs[runs.size() / 2]);
    layer->zero_grad();
    x = out.detach();
  }
  return costs;
}

}  // namespace

PipelineParallel::PipelineParallel(std::shared_ptr<nn::Sequential> model,
                                   std::vector<Device> devices, PipelineOptions options)
    : model_(std::move(model)),
      options_(std::move(options)),
      streams_(std::make_unique<Streams>()) {
  LOOM_CHECK(model_ != nullptr, "PipelineParallel: the model is null");
  const int64_t layers = static_cast<int64_t>(model_->size());
  LOOM_CHECK(layers > 0, "PipelineParallel: the model has no layers");
  LOOM_CHECK(!devices.empty(), "PipelineParallel: no devices were given (one per stage)");
  LOOM_CHECK(options_.micro_batches >= 1,
             "PipelineParallel: micro_batches must be at least 1, got ", options_.micro_batches);
  const int stages = static_cast<int>(devices.size());
  LOOM_CHECK(stages <= layers, "PipelineParallel: ", stages, " stages for a model of ", layers,
             " layers; each stage needs at least one layer");
  for (size_t s = 0; s < devices.size(); ++s) check_device(devices[s], s);

  std::vector<int64_t> cuts = options_.cut_points;
  if (!cuts.empty()) {
    check_cuts(cuts, layers, stages);
  } else if (options_.balance == PipelineBalance::Time) {
    cuts =
        balanced_cuts(measure_layer_costs(*model_, options_.sample_input, devices.front()), stages);
  } else {
    std::vector<double> costs;
    for (const auto& entry : model_->named_children()) {
      costs.push_back(static_cast<double>(entry.second->num_parameters()));
    }
    cuts = balanced_cuts(costs, stages);
  }
  cuts.push_back(layers);
  // Hand-overs between GPUs then go over NVLink (or PCIe peer to peer), not through host memory.
  for (size_t s = 0; s + 1 < devices.size(); ++s) {
    if (devices[s].is_cuda() && devices[s + 1].is_cuda()) {
      cuda::enable_peer_access(devices[s].index, devices[s + 1].index);
    }
  }

  const auto& children = model_->named_children();
  int64_t begin = 0;
  for (int s = 0; s < stages; ++s) {
    auto stage = std::make_shared<nn::Sequential>();
    for (int64_t i = begin; i < cuts[s]; ++i) stage->add(children[i].first, children[i].second);
    stage->to(devices[s]);
    stages_.push_back({begin, cuts[s], devices[s], stage->num_parameters()});
    add_child("stage" + std::to_string(s), stage);
    stage_modules_.push_back(std::move(stage));
    begin = cuts[s];

    const bool gpu = devices[s].is_cuda();
    streams_->device.push_back(devices[s].index);
    streams_->stream.push_back(gpu ? cuda::create_stream(devices[s].index) : nullptr);
    streams_->handover.push_back(gpu ? std::make_unique<cuda::Event>(devices[s].index, false)
                                     : nullptr);
  }
}

PipelineParallel::~PipelineParallel() = default;

Tensor PipelineParallel::forward(const Tensor& input) {
  LOOM_CHECK(input.defined(), "PipelineParallel.forward: the input is undefined");
  Tensor x = input;
  for (size_t s = 0; s < stage_modules_.size(); ++s)
    x = stage_modules_[s]->forward(x.to(stages_[s].device));
  return x.to(input.device());
}

namespace {

void check_step_arguments(const Tensor& input, const Tensor& target, const PipelineLoss& loss_fn,
                          int micro) {
  LOOM_CHECK(input.defined() && target.defined(), "PipelineParallel.train_step: the ",
             input.defined() ? "target" : "input", " is undefined");
  LOOM_CHECK(input.dim() >= 1 && target.dim() >= 1,
             "PipelineParallel.train_step: the input and "
             "target need a batch dimension, got shapes ",
             shape_str(input.shape()), " and ", shape_str(target.shape()));
  const int64_t batch = input.size(0);
  LOOM_CHECK(target.size(0) == batch, "PipelineParallel.train_step: the input has ", batch,
             " samples but the target ", target.size(0));
  LOOM_CHECK(batch >= micro, "PipelineParallel.train_step: ", micro,
             " micro-batches for a batch of ", batch,
             " samples; a micro-batch needs at least one sample");
  LOOM_CHECK(static_cast<bool>(loss_fn), "PipelineParallel.train_step: the loss function is empty");
}

// Micro-batch m: samples [offset[m], offset[m] + size[m]), the first batch % micro one larger.
struct MicroBatches {
  MicroBatches(int64_t batch_size, int micro)
      : batch(batch_size), size(micro, batch_size / micro), offset(micro, 0) {
    for (int m = 0; m < batch_size % micro; ++m) ++size[m];
    for (int m = 1; m < micro; ++m) offset[m] = offset[m - 1] + size[m - 1];
  }
  int count() const { return static_cast<int>(size.size()); }
  Tensor of(const Tensor& t, int m) const { return t.narrow(0, offset[m], size[m]); }
  // A micro-batch's mean loss times its weight sums to the batch's mean loss.
  double weight(int m) const { return static_cast<double>(size[m]) / static_cast<double>(batch); }

  int64_t batch;
  std::vector<int64_t> size, offset;
};

// What last_timing() reports: events around each op on the stage's stream (host clocks for a
// CPU stage), and around the whole step on every GPU stage's stream.
class StepClocks {
 public:
  StepClocks(const PipelineParallel::Streams& st, int ops)
      : st_(st), host_start_(Clock::now()), step_start_(st.stages()), step_end_(st.stages()) {
    clocks_.reserve(ops);
    for (int s = 0; s < stages(); ++s) {
      if (!st_.gpu(s)) continue;
      step_start_[s] = std::make_unique<cuda::Event>(st_.device[s]);
      step_end_[s] = std::make_unique<cuda::Event>(st_.device[s]);
      step_start_[s]->record(st_.stream[s]);
    }
  }

  void begin(const PipelineOp& op) {
    clocks_.push_back({nullptr, nullptr, {}, {}, op});
    OpClock& clock = clocks_.back();
    const int s = op.stage;
    if (st_.gpu(s)) {
      clock.start = std::make_unique<cuda::Event>(st_.device[s]);
      clock.end = std::make_unique<cuda::Event>(st_.device[s]);
      clock.start->record(st_.stream[s]);
    }
    clock.host_start = Clock::now();
  }

  void end() {
    OpClock& clock = clocks_.back();
    if (clock.end) clock.end->record(st_.stream[clock.op.stage]);
    clock.host_end = Clock::now();
  }

  void end_step() {
    for (int s = 0; s < stages(); ++s) {
      if (st_.gpu(s)) step_end_[s]->record(st_.stream[s]);
    }
  }

  // Waits for the events. The step's time is the longest GPU stage's, or the host's when every
  // stage is on the CPU.
  PipelineTiming collect() {
    PipelineTiming timing;
    timing.busy_ms.assign(stages(), 0.0);
    timing.forward_ms.assign(stages(), 0.0);
    timing.backward_ms.assign(stages(), 0.0);
    for (OpClock& c : clocks_) {
      const int s = c.op.stage;
      double ms;
      if (c.start) {
        c.end->synchronize();
        ms = cuda::Event::elapsed_ms(*c.start, *c.end);
      } else {
        ms = std::chrono::duration<double, std::milli>(c.host_end - c.host_start).count();
      }
      (c.op.kind == PipelineOp::Forward ? timing.forward_ms : timing.backward_ms)[s] += ms;
      timing.busy_ms[s] += ms;
    }
    double step = std::chrono::duration<double, std::milli>(Clock::now() - host_start_).count();
    bool any_gpu = false;
    double gpu_step = 0.0;
    for (int s = 0; s < stages(); ++s) {
      if (!st_.gpu(s)) continue;
      step_end_[s]->synchronize();
      gpu_step =
          std::max<double>(gpu_step, cuda::Event::elapsed_ms(*step_start_[s], *step_end_[s]));
      any_gpu = true;
    }
    timing.step_ms = any_gpu ? gpu_step : step;
    return timing;
  }

 private:
  struct OpClock {
    std::unique_ptr<cuda::Event> start, end;
    Clock::time_point host_start, host_end;
    PipelineOp op;
  };

  int stages() const { return st_.stages(); }

  const PipelineParallel::Streams& st_;
  Clock::time_point host_start_;
  std::vector<std::unique_ptr<cuda::Event>> step_start_, step_end_;
  std::vector<OpClock> clocks_;
};

// One step's state: the stages' inputs, outputs and the tensors in flight between them.
struct StepState {
  explicit StepState(int stages, int micro_batches)
      : inputs(stages, std::vector<Tensor>(micro_batches)),
        outputs(stages, std::vector<Tensor>(micro_batches)),
        grad_of_output(stages, std::vector<Tensor>(micro_batches)),
        unread(stages, std::vector<std::vector<Tensor>>(stages)),
        losses(micro_batches),
        last_outputs(micro_batches) {}
  std::vector<std::vector<Tensor>> inputs;          // [stage][micro-batch]: leaves (stage > 0)
  std::vector<std::vector<Tensor>> outputs;         // with their graphs, until backward
  std::vector<std::vector<Tensor>> grad_of_output;  // gradients handed back from the next stage
  // [from][to]: what `from` sent whose copy on `to`'s stream `from`'s stream is not yet ordered
  // after: kept alive (see the top of this file).
  std::vector<std::vector<std::vector<Tensor>>> unread;
  std::vector<Tensor> losses;        // weighted, with graphs (last stage)
  std::vector<Tensor> last_outputs;  // detached (last stage)
};

// The ops of one step, each run by the caller on its stage's stream, and what they hand on.
struct StepOps {
  const std::vector<std::shared_ptr<nn::Sequential>>& modules;
  const std::vector<PipelineStage>& stages;
  PipelineParallel::Streams& st;
  const PipelineLoss& loss_fn;
  MicroBatches micro;
  Tensor first_input;  // on the first stage's device
  Tensor last_target;  // on the last stage's device
  StepState state;

  // Stage s's forward of micro-batch m: the last stage also takes the loss, the others hand
  // their output on as the next stage's leaf.
  void forward(int s, int m) {
    const Tensor x = s == 0 ? micro.of(first_input, m) : state.inputs[s][m];
    Tensor y = modules[s]->forward(x);
    if (s == last()) {
      const Tensor part = micro.of(last_target, m);
      state.losses[m] = loss_fn(y, part) * micro.weight(m);
      LOOM_CHECK(state.losses[m].numel() == 1,
                 "PipelineParallel.train_step: the loss function returned shape ",
                 shape_str(state.losses[m].shape()),
                 "; it must return a scalar (a mean over the micro-batch)");
      state.last_outputs[m] = y.detach();
    } else {
      state.inputs[s + 1][m] =
          hand_over(y.detach().contiguous(), s, s + 1).set_requires_grad(y.requires_grad());
    }
    state.outputs[s][m] = std::move(y);
  }

  // Stage s's backward of micro-batch m, from the loss or from the gradient the next stage
  // handed back; the gradient of its input goes back to the stage before.
  void backward(int s, int m) {
    if (s == last()) {
      state.losses[m].backward();
    } else if (state.outputs[s][m].requires_grad()) {
      state.outputs[s][m].backward(state.grad_of_output[s][m]);
    }
    state.outputs[s][m] = Tensor();
    state.grad_of_output[s][m] = Tensor();
    if (s > 0) {
      const Tensor& g = state.inputs[s][m].grad();
      if (g.defined()) state.grad_of_output[s - 1][m] = hand_over(g.contiguous(), s, s - 1);
      state.inputs[s][m] = Tensor();
    }
  }

  // The batch's loss (the weighted losses' sum) and outputs, on the last stage's stream.
  PipelineStepResult batch_result() const {
    PipelineStepResult result;
    NoGradGuard no_grad;
    std::optional<cuda::StreamGuard> guard;
    st.enter(guard, last());
    Tensor total = state.losses[0].detach().reshape({});
    for (int m = 1; m < micro.count(); ++m) total = total + state.losses[m].detach().reshape({});
    result.loss = total;
    result.outputs = cat(state.last_outputs, 0);
    return result;
  }

  // Once every stream is ordered after the stage streams, what was in flight is free for the
  // stage streams again.
  void release_in_flight() { state = StepState(0, 0); }

  int last() const { return static_cast<int>(stages.size()) - 1; }

  // Hands `t` (contiguous) from stage `from` to stage `to`: the copy runs on the receiver's
  // stream after the sender's stream has produced `t`; returns the receiver's tensor.
  Tensor hand_over(const Tensor& t, int from, int to) {
    if (!st.gpu(from) || !st.gpu(to)) return t.to(stages[to].device).clone();
    st.handover[from]->record(st.stream[from]);
    st.handover[from]->wait(st.stream[to]);
    // `to`'s stream now comes after every copy `from`'s stream made of what `to` had sent it.
    state.unread[to][from].clear();
    state.unread[from][to].push_back(t);
    Tensor received;
    {
      cuda::StreamGuard guard(st.device[to], st.stream[to]);
      received = empty(t.shape(), TensorOptions(t.dtype()).device(stages[to].device));
    }
    detail::cuda_memcpy_on_stream(received.raw_data(), stages[to].device, t.raw_data(),
                                  stages[from].device, t.nbytes(), st.stream[to]);
    return received;
  }
};

}  // namespace

PipelineStepResult PipelineParallel::train_step(const Tensor& input, const Tensor& target,
                                                const PipelineLoss& loss_fn) {
  check_step_arguments(input, target, loss_fn, options_.micro_batches);
  const int stages = static_cast<int>(stages_.size());
  const int micro = options_.micro_batches;
  Streams& st = *streams_;
  // The batch's copies to the end stages run on the caller's stream, before the stage streams
  // are ordered after it.
  StepOps ops{stage_modules_,
              stages_,
              st,
              loss_fn,
              MicroBatches(input.size(0), micro),
              input.to(stages_.front().device),
              target.to(stages_.back().device),
              StepState(stages, micro)};
  st.order_after_callers();
  std::optional<StepClocks> clocks;
  if (options_.time_stages) clocks.emplace(st, 2 * stages * micro);

  for (const PipelineOp& op : issue_order(options_.schedule, stages, micro)) {
    std::optional<cuda::StreamGuard> guard;
    st.enter(guard, op.stage);
    if (clocks) clocks->begin(op);
    if (op.kind == PipelineOp::Forward) {
      ops.forward(op.stage, op.micro_batch);
    } else {
      ops.backward(op.stage, op.micro_batch);
    }
    if (clocks) clocks->end();
  }
  PipelineStepResult result = ops.batch_result();

  if (clocks) clocks->end_step();
  st.order_all_after_stages();
  ops.release_in_flight();
  result.loss = result.loss.to(input.device());
  result.outputs = result.outputs.to(input.device());
  if (clocks) timing_ = clocks->collect();
  return result;
}

}  // namespace loom::dist
