// One rank's model in training (trainee.h): batches from synthetic tensors or a loader over
// photographs, and the steps, eager or captured, warmed up and timed in blocks.
#include "trainee.h"

#include <algorithm>

#include "scaling.h"

namespace loom::scaling {

namespace {

double ms_since(StepClock::Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(StepClock::Clock::now() - start).count();
}

Tensor bce(const Tensor& outputs, const Tensor& labels) {
  return nn::binary_cross_entropy_with_logits(outputs, labels);
}

}  // namespace

// The step's input: the same random tensors every step (synthetic: no loader cost at all), or
// the next batch of a rank's shard of the photographs, epoch after epoch; channels-last
// (--channels-last) or NCHW.
class Batches {
 public:
  Batches(const ImageSource& source, int64_t batch, Device device, int workers, data::Shard shard,
          bool channels_last)
      : format_(channels_last ? MemoryFormat::ChannelsLast : MemoryFormat::Contiguous) {
    if (!source.set) {
      // Each rank its own (the generator is the rank's).
      images_ = rand({batch, 3, 64, 64}, device).contiguous(format_);
      labels_ = randint(0, 2, {batch, 1}, TensorOptions(kFloat32).device(device));
      return;
    }
    data::DataLoaderOptions o;
    o.batch_size = batch;
    o.drop_last = true;                        // every step the same shape
    o.on_bad_input = data::OnBadInput::Throw;  // decoded already: a batch never shrinks
    o.num_workers = workers;
    o.device = device;
    o.augment = data::AugmentOptions::torchvision_seed(0);
    const data::Dataset& train = *source.set->images;
    LOOM_CHECK(train.size() / shard.world_size >= batch, "--data ", source.train_dir, ": ",
               train.size(), " images do not make one batch of ", batch, " for each of ",
               shard.world_size, " ranks");
    loader_ = std::make_unique<data::DataLoader>(train,
                                                 data::train_shard_options(o, train.size(), shard));
    loader_->start_epoch(0);
  }

  // The next step's images and labels; returns the milliseconds the host waited for them.
  double next(Tensor& images, Tensor& labels) {
    if (!loader_) {
      images = images_;
      labels = labels_;
      return 0.0;
    }
    const StepClock::Clock::time_point start = StepClock::Clock::now();
    std::optional<data::Batch> b = loader_->next();
    if (!b) {
      loader_->start_epoch(++epoch_);
      b = loader_->next();
    }
    const double waited = ms_since(start);
    images = b->images.contiguous(format_);
    labels = b->labels.to(kFloat32).reshape({b->labels.numel(), 1});
    return waited;
  }

 private:
  MemoryFormat format_;
  Tensor images_, labels_;
  std::unique_ptr<data::DataLoader> loader_;
  int64_t epoch_ = 0;
};

bool captures_steps(const Config& c, Device device, const dist::GroupPtr& group) {
  if (c.graph == "off") return false;
  const bool capturable = device.is_cuda() && (!group || group->captures_collectives());
  LOOM_CHECK(capturable || c.graph == "auto",
             "--graph on: a CUDA graph needs a CUDA device and, with DDP, "
             "collectives it can hold (NCCL); this rank is on ",
             device.str(), group ? detail::concat(" over ", group->backend()) : std::string(),
             "; use --graph auto or off");
  return capturable;
}

Trainee::Trainee(const Config& c, const ImageSource& source, int64_t batch, Device device,
                 const dist::GroupPtr& group, const PipelineSpec* pipeline)
    : device_(device),
      devices_(pipeline ? pipeline->devices : std::vector<Device>{device}),
      autocast_(c.precision == "bf16" && device.is_cuda()) {
  std::shared_ptr<nn::Sequential> model;
  {
    Generator weights(1);  // the same weights everywhere (DDP would send rank 0's anyway)
    GeneratorGuard guard(weights);
    model = make_model(c.model);
  }
  model_ = model;
  model_->train();
  // Channels-last weights too, so that no convolution copies its weight to NHWC each step.
  if (c.channels_last) model_->to(MemoryFormat::ChannelsLast);
  result_.parameters = model_->num_parameters(true);
  if (pipeline) {  // the pipeline moves each stage to its device
    dist::PipelineOptions options;
    options.micro_batches = pipeline->micro_batches;
    options.schedule = pipeline->schedule;
    pipe_ = std::make_shared<dist::PipelineParallel>(model, pipeline->devices, options);
    result_.stages = pipe_->stages();
  } else {
    model_->to(device);
  }
  if (group) {
    ddp_ = std::make_shared<dist::DistributedDataParallel>(model_, group);
    result_.buckets = ddp_->buckets();
  }
  adam_ =
      std::make_unique<optim::Adam>(trained().parameters(), optim::GroupOptions().with_lr(1e-3));
  if (!pipeline && captures_steps(c, device, group)) {
    train::CapturedStep::Options options;
    options.autocast = autocast_;
    options.group = group;  // every rank captures and replays in lockstep
    // Fixed tensors, or equal shards of decoded photographs without the last partial batch:
    // every rank's batch has the same shape at every step, so no step waits to check it.
    options.ranks_share_shapes = true;
    captured_ = std::make_unique<train::CapturedStep>(trained(), bce, *adam_, options);
    result_.step_mode = "graph";
  }
  batches_ = std::make_unique<Batches>(
      source, batch, device, c.workers,
      group ? data::Shard{group->rank(), group->size()} : data::Shard{}, c.channels_last);
}

Trainee::~Trainee() = default;

nn::Module& Trainee::trained() {
  if (pipe_) return *pipe_;
  return ddp_ ? static_cast<nn::Module&>(*ddp_) : *model_;
}

double Trainee::step() {
  const double waited = batches_->next(images_, labels_);
  if (captured_) {
    captured_->run(images_, labels_);
    return waited;
  }
  adam_->zero_grad();
  if (pipe_) {
    pipe_->train_step(images_, labels_, bce);
  } else {
    bce(train::forward(trained(), images_, autocast_), labels_).backward();
  }
  adam_->step();
  return waited;
}

void Trainee::synchronize() {
  for (const Device& d : devices_) {
    if (d.is_cuda()) cuda::synchronize_stream(cuda::current_stream(d.index));
  }
}

void Trainee::warm_up(int steps, double seconds, int timed) {
  const StepClock::Clock::time_point start = StepClock::Clock::now();
  if (captured_) steps = std::max(steps, 2);
  for (; result_.warmup_steps < steps; ++result_.warmup_steps) step();
  synchronize();
  while (ms_since(start) < 1e3 * seconds) {
    for (int i = 0; i < 10; ++i, ++result_.warmup_steps) step();
    synchronize();
  }
  if (ddp_ && !captured_) ddp_->time_exposed_communication(true, timed);
}

void Trainee::timed_block(int steps) {
  clocks_.push_back(std::make_unique<StepClock>(device_, steps));
  StepClock& clock = *clocks_.back();
  const int64_t eager_before = captured_ ? captured_->eager_steps() : 0;
  clock.mark(0);
  for (int i = 0; i < steps; ++i) {
    result_.loader_wait_ms.push_back(step());
    clock.mark(i + 1);
  }
  if (captured_)
    result_.timed_eager_steps += static_cast<int>(captured_->eager_steps() - eager_before);
}

RankResult Trainee::finish() {
  for (const auto& clock : clocks_) {
    const std::vector<double> ms = clock->step_ms();
    result_.step_ms.insert(result_.step_ms.end(), ms.begin(), ms.end());
  }
  if (pipe_) {
    pipe_->time_stages(true);
    step();
    synchronize();
    result_.stage_timing = pipe_->last_timing();
    pipe_->time_stages(false);
  }
  if (ddp_ && !captured_) {  // a replay runs no hooks: its stats would be the capture's
    result_.exposed_comm_ms = ddp_->exposed_communication_ms();
    ddp_->time_exposed_communication(false);
    result_.ddp_step = ddp_->last_step();
  }
  return result_;
}

}  // namespace loom::scaling
