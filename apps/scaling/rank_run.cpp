// One rank's measurement (rank_run.h): batches from synthetic tensors or a loader over
// photographs, the timed steps (plain, DDP or pipeline), the isolated all-reduces, the
// parameter hash.
#include "rank_run.h"

#include <algorithm>
#include <chrono>

#include <nlohmann/json.hpp>

#include "data_source.h"
#include "pipeline.h"
#include "scaling.h"

namespace loom::scaling {

namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

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
    o.drop_last = true;  // every step the same shape
    o.num_workers = workers;
    o.device = device;
    o.augment = data::AugmentOptions::torchvision_seed(0);
    const data::Dataset& train = *source.set->images;
    LOOM_CHECK(train.size() / shard.world_size >= batch, "--data ", source.train_dir, ": ", train.size(),
               " images do not make one batch of ", batch, " for each of ", shard.world_size, " ranks");
    loader_ = std::make_unique<data::DataLoader>(train, data::train_shard_options(o, train.size(), shard));
    loader_->start_epoch(0);
  }

  // The next step's images and labels; returns the milliseconds the host waited for them.
  double next(Tensor& images, Tensor& labels) {
    if (!loader_) {
      images = images_;
      labels = labels_;
      return 0.0;
    }
    const Clock::time_point start = Clock::now();
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

// Rank r's step times: CUDA events on the rank's stream between steps on a GPU (device time,
// the loader's wait included when the GPU runs dry), the host clock on the CPU.
class StepClock {
 public:
  StepClock(Device device, int steps) : device_(device) {
    if (device.is_cuda()) {
      for (int i = 0; i <= steps; ++i) marks_.push_back(std::make_unique<cuda::Event>(device.index));
    }
  }
  void mark(int i) {
    if (device_.is_cuda()) {
      marks_[static_cast<size_t>(i)]->record(cuda::current_stream(device_.index));
    } else {
      host_.push_back(Clock::now());
    }
  }
  std::vector<double> step_ms() const {
    std::vector<double> ms;
    if (device_.is_cuda()) {
      marks_.back()->synchronize();
      for (size_t i = 0; i + 1 < marks_.size(); ++i) ms.push_back(cuda::Event::elapsed_ms(*marks_[i], *marks_[i + 1]));
    } else {
      for (size_t i = 0; i + 1 < host_.size(); ++i) {
        ms.push_back(std::chrono::duration<double, std::milli>(host_[i + 1] - host_[i]).count());
      }
    }
    return ms;
  }

 private:
  Device device_;
  std::vector<std::unique_ptr<cuda::Event>> marks_;
  std::vector<Clock::time_point> host_;
};

// The buckets' all-reduces of one step, alone and back to back (no backward to hide behind):
// the median over repetitions of the time from the first launch to the compute stream's wait
// for the last, on random data of the buckets' sizes and types.
double isolated_comm_ms(dist::ProcessGroup& group, const std::vector<dist::BucketInfo>& buckets) {
  constexpr int kWarmup = 5, kReps = 20;
  std::vector<Tensor> flats;
  for (const auto& b : buckets) flats.push_back(rand({b.numel}, TensorOptions(b.dtype).device(group.device())));
  const Device device = group.device();
  StepClock clock(device, kWarmup + kReps);
  for (int i = 0; i < kWarmup + kReps; ++i) {
    clock.mark(i);
    for (const Tensor& f : flats) group.all_reduce(f, dist::ReduceOp::Avg)->wait_stream();
  }
  clock.mark(kWarmup + kReps);
  std::vector<double> ms = clock.step_ms();
  return median(std::vector<double>(ms.begin() + kWarmup, ms.end()));
}

// FNV-1a over the bytes of every parameter, in registration order.
uint64_t parameter_hash(nn::Module& model) {
  uint64_t h = 1469598103934665603ull;
  for (const Tensor& p : model.parameters()) {
    const Tensor host = p.to(kCPU).contiguous();
    const auto* bytes = static_cast<const unsigned char*>(host.raw_data());
    for (size_t i = 0; i < host.nbytes(); ++i) h = (h ^ bytes[i]) * 1099511628211ull;
  }
  return h;
}

DType dtype_named(const std::string& name) {
  for (DType d : {kFloat32, kFloat64, kInt64, kInt32, kUInt8}) {
    if (name == dtype_name(d)) return d;
  }
  LOOM_FAIL("unknown dtype '", name.substr(0, 32), "'");
}

}  // namespace

std::shared_ptr<nn::Sequential> make_model(const std::string& name) {
  if (name == "seed_cnn") return nn::seed_cnn();
  if (name == "classic_cnn") return nn::classic_cnn();
  if (name == "resnet18") return nn::resnet18(1);
  LOOM_FAIL("--model: expected seed_cnn, classic_cnn or resnet18, got '", name.substr(0, 64), "'");
}

int count_differing_ranks(dist::ProcessGroup& group, nn::Module& model) {
  const int64_t mine = static_cast<int64_t>(parameter_hash(model));
  const Tensor in = from_vector(std::vector<int64_t>{mine}).to(group.device());
  const Tensor all = zeros({group.size()}, TensorOptions(kInt64).device(group.device()));
  group.all_gather(all, in)->wait();
  const std::vector<int64_t> hashes = all.to_vector<int64_t>();
  return static_cast<int>(std::count_if(hashes.begin(), hashes.end(), [&](int64_t h) { return h != hashes[0]; }));
}

ImageSource load_images(const std::string& data, int threads) {
  ImageSource source;
  if (data == "synthetic") return source;
  const std::optional<catdog::DataSplit> split = catdog::split_of(data);
  source.train_dir = split ? split->train_dir : data;  // a train/val root, or class folders
  io::Preprocessing p;
  p.height = p.width = 64;
  p.interpolation = *io::interpolation_from_name("bilinear");  // as loom-catdog and torchvision
  source.set = catdog::load_image_set(source.train_dir, p, threads);
  return source;
}

namespace {

// One model in training on one rank: the plain model, the same wrapped in DDP over a group, or
// cut into pipeline stages (the batch then on the first stage's device).
class Trainee {
 public:
  Trainee(const Config& c, const ImageSource& source, int64_t batch, Device device, const dist::GroupPtr& group,
          const PipelineSpec* pipeline = nullptr)
      : device_(device), devices_(pipeline ? pipeline->devices : std::vector<Device>{device}),
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
    result.parameters = model_->num_parameters(true);
    if (pipeline) {  // the pipeline moves each stage to its device
      dist::PipelineOptions options;
      options.micro_batches = pipeline->micro_batches;
      options.schedule = pipeline->schedule;
      pipe_ = std::make_shared<dist::PipelineParallel>(model, pipeline->devices, options);
      result.stages = pipe_->stages();
    } else {
      model_->to(device);
    }
    if (group) {
      ddp_ = std::make_shared<dist::DistributedDataParallel>(model_, group);
      result.buckets = ddp_->buckets();
    }
    adam_ = std::make_unique<optim::Adam>(trained().parameters(), optim::GroupOptions().with_lr(1e-3));
    batches_ = std::make_unique<Batches>(source, batch, device, c.workers,
                                         group ? data::Shard{group->rank(), group->size()} : data::Shard{},
                                         c.channels_last);
  }

  nn::Module& trained() {
    if (pipe_) return *pipe_;
    return ddp_ ? static_cast<nn::Module&>(*ddp_) : *model_;
  }

  // One training step; returns the host's wait for its batch.
  double step() {
    const double waited = batches_->next(images_, labels_);
    adam_->zero_grad();
    if (pipe_) {
      pipe_->train_step(images_, labels_, [](const Tensor& out, const Tensor& target) {
        return nn::binary_cross_entropy_with_logits(out, target);
      });
    } else {
      nn::binary_cross_entropy_with_logits(train::forward(trained(), images_, autocast_), labels_).backward();
    }
    adam_->step();
    return waited;
  }

  void synchronize() {
    for (const Device& d : devices_) {
      if (d.is_cuda()) cuda::synchronize_stream(cuda::current_stream(d.index));
    }
  }

  // At least `steps` steps, and while `seconds` have not passed; then DDP's stall timer is
  // readied for `timed` steps.
  void warm_up(int steps, double seconds, int timed) {
    const Clock::time_point start = Clock::now();
    for (; result.warmup_steps < steps; ++result.warmup_steps) step();
    synchronize();
    while (ms_since(start) < 1e3 * seconds) {
      for (int i = 0; i < 10; ++i, ++result.warmup_steps) step();
      synchronize();
    }
    if (ddp_) ddp_->time_exposed_communication(true, timed);
  }

  // `steps` timed steps; their times are read by finish().
  void timed_block(int steps) {
    clocks_.push_back(std::make_unique<StepClock>(device_, steps));
    StepClock& clock = *clocks_.back();
    clock.mark(0);
    for (int i = 0; i < steps; ++i) {
      result.loader_wait_ms.push_back(step());
      clock.mark(i + 1);
    }
  }

  // The step times of every block, then for DDP the stalls, the isolated all-reduces and the
  // parameter hash across the ranks; for a pipeline one more step with its stage ops timed.
  RankResult finish(const dist::GroupPtr& group) {
    for (const auto& clock : clocks_) {
      const std::vector<double> ms = clock->step_ms();
      result.step_ms.insert(result.step_ms.end(), ms.begin(), ms.end());
    }
    if (pipe_) {
      pipe_->time_stages(true);
      step();
      synchronize();
      result.stage_timing = pipe_->last_timing();
      pipe_->time_stages(false);
    }
    if (ddp_) {
      result.exposed_comm_ms = ddp_->exposed_communication_ms();
      ddp_->time_exposed_communication(false);
      result.comm_ms = isolated_comm_ms(*group, result.buckets);
      result.differing_ranks = count_differing_ranks(*group, *model_);
    }
    return result;
  }

  RankResult result;

 private:
  Device device_;
  std::vector<Device> devices_;  // every device the model is on
  bool autocast_;                // bf16 mixed precision (--precision bf16 on CUDA)
  std::shared_ptr<nn::Module> model_;
  std::shared_ptr<dist::DistributedDataParallel> ddp_;
  std::shared_ptr<dist::PipelineParallel> pipe_;
  std::unique_ptr<optim::Adam> adam_;
  std::unique_ptr<Batches> batches_;
  Tensor images_, labels_;
  std::vector<std::unique_ptr<StepClock>> clocks_;
};

}  // namespace

double quantile(const std::vector<double>& sorted, double q) {
  return sorted[static_cast<size_t>(q * static_cast<double>(sorted.size() - 1) + 0.5)];
}

double median(std::vector<double> v) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  return quantile(v, 0.5);
}

RankResult run_rank(const Config& c, const ImageSource& source, int64_t batch, Device device,
                    const dist::GroupPtr& group) {
  Trainee t(c, source, batch, device, group);
  t.warm_up(c.warmup, group ? 0.0 : c.warmup_seconds, c.steps);
  t.timed_block(c.steps);
  return t.finish(group);
}

RankResult run_pipeline(const Config& c, const ImageSource& source, int64_t batch, const PipelineSpec& spec) {
  LOOM_ASSERT(!spec.devices.empty());
  Trainee t(c, source, batch, spec.devices.front(), nullptr, &spec);
  t.warm_up(c.warmup, 0.0, c.steps);
  t.timed_block(c.steps);
  return t.finish(nullptr);
}

std::pair<RankResult, RankResult> run_rank_beside_plain(const Config& c, const ImageSource& source, int64_t batch,
                                                        Device device, const dist::GroupPtr& group) {
  Trainee plain(c, source, batch, device, nullptr), ddp(c, source, batch, device, group);
  plain.warm_up(c.warmup, c.warmup_seconds, c.steps);
  ddp.warm_up(c.warmup, 0.0, c.steps);  // every rank the same count: its steps are collectives
  constexpr int kBlocks = 6;
  for (int b = 0; b < kBlocks; ++b) {
    const int steps = c.steps / kBlocks + (b < c.steps % kBlocks ? 1 : 0);
    if (steps == 0) continue;
    plain.timed_block(steps);
    ddp.timed_block(steps);
  }
  return {plain.finish(nullptr), ddp.finish(group)};
}

std::string rank_result_json(const RankResult& r) {
  nlohmann::json j;
  j["step_ms"] = r.step_ms;
  j["exposed_comm_ms"] = r.exposed_comm_ms;
  j["loader_wait_ms"] = r.loader_wait_ms;
  j["comm_ms"] = r.comm_ms ? nlohmann::json(*r.comm_ms) : nlohmann::json(nullptr);
  j["differing_ranks"] = r.differing_ranks;
  j["parameters"] = r.parameters;
  j["warmup_steps"] = r.warmup_steps;
  j["buckets"] = nlohmann::json::array();
  for (const auto& b : r.buckets) {
    j["buckets"].push_back({{"numel", b.numel}, {"dtype", dtype_name(b.dtype)}, {"offset", b.offset},
                            {"parameters", b.parameters}});
  }
  return j.dump() + "\n";
}

RankResult rank_result_from_json(const std::string& text, const std::string& source) {
  try {
    const nlohmann::json j = nlohmann::json::parse(text);
    RankResult r;
    r.step_ms = j.at("step_ms").get<std::vector<double>>();
    r.exposed_comm_ms = j.at("exposed_comm_ms").get<std::vector<double>>();
    r.loader_wait_ms = j.at("loader_wait_ms").get<std::vector<double>>();
    if (!j.at("comm_ms").is_null()) r.comm_ms = j.at("comm_ms").get<double>();
    r.differing_ranks = j.at("differing_ranks").get<int>();
    r.parameters = j.at("parameters").get<int64_t>();
    r.warmup_steps = j.at("warmup_steps").get<int>();
    for (const auto& b : j.at("buckets")) {
      dist::BucketInfo info;
      info.numel = b.at("numel").get<int64_t>();
      info.dtype = dtype_named(b.at("dtype").get<std::string>());
      info.offset = b.at("offset").get<int64_t>();
      info.parameters = b.at("parameters").get<std::vector<std::string>>();
      r.buckets.push_back(std::move(info));
    }
    LOOM_CHECK(!r.step_ms.empty(), "no step times");
    return r;
  } catch (const std::exception& e) {
    LOOM_FAIL("loom-scaling: the rank result ", source, " is not what a rank process writes: ", e.what());
  }
}

}  // namespace loom::scaling
