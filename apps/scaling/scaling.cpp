// loom-scaling's runs (see scaling.h): the plain model on one device, then DDP over each world.
#include "scaling.h"

#include <algorithm>
#include <chrono>
#include <functional>
#include <mutex>

namespace loom::scaling {

namespace {

std::shared_ptr<nn::Module> make_model(const std::string& name) {
  if (name == "seed_cnn") return nn::seed_cnn();
  if (name == "classic_cnn") return nn::classic_cnn();
  if (name == "resnet18") return nn::resnet18(1);
  LOOM_FAIL("--model: expected seed_cnn, classic_cnn or resnet18, got '", name.substr(0, 64), "'");
}

// One training step's work, as a user's loop does it.
struct Trainee {
  std::shared_ptr<nn::Module> model;
  std::unique_ptr<optim::Adam> adam;
  Tensor images, labels;
  void step() {
    adam->zero_grad();
    nn::binary_cross_entropy_with_logits(model->forward(images), labels).backward();
    adam->step();
  }
};

Trainee make_trainee(const Config& c, int64_t batch, Device device, dist::GroupPtr group,
                     std::vector<dist::BucketInfo>* buckets) {
  Trainee t;
  manual_seed(1);  // the same weights everywhere (DDP would send rank 0's anyway)
  t.model = make_model(c.model);
  t.model->to(device);
  t.model->train();
  if (group) {
    auto ddp = std::make_shared<dist::DistributedDataParallel>(t.model, group);
    if (buckets) *buckets = ddp->buckets();
    t.model = ddp;
  }
  t.adam = std::make_unique<optim::Adam>(t.model->parameters(), optim::GroupOptions().with_lr(1e-3));
  // Random images (never zeros), each rank its own (the generator is the rank's).
  t.images = rand({batch, 3, 64, 64}, device);
  t.labels = randint(0, 2, {batch, 1}, TensorOptions(kFloat32).device(device));
  return t;
}

// Milliseconds of each of `steps` steps after `warmup`: CUDA events on the current stream
// between steps on a GPU (device time), the host clock on the CPU.
std::vector<double> timed_steps(Trainee& t, int warmup, int steps, Device device) {
  for (int i = 0; i < warmup; ++i) t.step();
  std::vector<double> ms;
  if (device.is_cuda()) {
    const int d = device.index;
    cuda::synchronize_stream(cuda::current_stream(d));
    std::vector<std::unique_ptr<cuda::Event>> marks;
    for (int i = 0; i <= steps; ++i) marks.push_back(std::make_unique<cuda::Event>(d));
    marks[0]->record(cuda::current_stream(d));
    for (int i = 0; i < steps; ++i) {
      t.step();
      marks[i + 1]->record(cuda::current_stream(d));
    }
    marks[steps]->synchronize();
    for (int i = 0; i < steps; ++i) ms.push_back(cuda::Event::elapsed_ms(*marks[i], *marks[i + 1]));
  } else {
    for (int i = 0; i < steps; ++i) {
      const auto start = std::chrono::steady_clock::now();
      t.step();
      ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
    }
  }
  return ms;
}

void fill_times(Row& row, std::vector<double> ms) {
  std::sort(ms.begin(), ms.end());
  auto at = [&](double q) { return ms[static_cast<size_t>(q * static_cast<double>(ms.size() - 1) + 0.5)]; };
  row.median_ms = at(0.5);
  row.p10_ms = at(0.1);
  row.p90_ms = at(0.9);
  row.images_per_s = static_cast<double>(row.global_batch) / (row.median_ms / 1e3);
  row.ran = true;
}

int64_t rank_batch(const Config& c, int world) {
  if (!c.strong) return c.batch_per_rank;
  const int largest = *std::max_element(c.world_sizes.begin(), c.world_sizes.end());
  const int64_t global = c.batch_per_rank * largest;
  LOOM_CHECK(global % world == 0, "--scaling strong: the global batch ", global,
             " does not split evenly over ", world, " ranks");
  return global / world;
}

}  // namespace

Report run(const Config& c) {
  LOOM_CHECK(!c.world_sizes.empty(), "loom-scaling: no world sizes given");
  LOOM_CHECK(c.steps >= 1 && c.warmup >= 0, "loom-scaling: --steps must be at least 1 and --warmup at least 0");
  LOOM_CHECK(c.precision == "fp32" || c.precision == "tf32", "--precision: expected fp32 or tf32, got '",
             c.precision.substr(0, 32), "' (bf16 comes with issue 13's autocast)");
  for (int n : c.world_sizes) {
    LOOM_CHECK(n >= 1, "loom-scaling: a world size must be at least 1, got ", n);
    rank_batch(c, n);  // strong scaling: every world must split the batch, known before measuring
    if (c.device.is_cuda() && !c.skip_missing) {
      LOOM_CHECK(n <= cuda_device_count(), "--gpus ", n, ": this machine has ", cuda_device_count(),
                 " GPU", cuda_device_count() == 1 ? "" : "s", " (--skip-missing reports such rows as not run)");
    }
  }
  ConvTf32Scope tf32(c.precision == "tf32");
  Report report;
  report.config = c;

  // The baseline: the plain model, no wrapper, on one device, with the one-rank batch.
  Row base;
  base.world_size = 1;
  base.note = "plain model";
  base.global_batch = rank_batch(c, 1);
  {
    const Device device = c.device.is_cuda() ? cuda_device(0) : kCPU;
    Trainee t = make_trainee(c, base.global_batch, device, nullptr, nullptr);
    report.parameters = t.model->num_parameters(true);
    fill_times(base, timed_steps(t, c.warmup, c.steps, device));
  }
  for (int n : c.world_sizes) {
    Row row;
    row.world_size = n;
    const int64_t per_rank = rank_batch(c, n);
    row.global_batch = per_rank * n;
    if (c.device.is_cuda() && n > cuda_device_count()) {
      row.note = detail::concat("not run: needs ", n, " GPUs, this machine has ", cuda_device_count());
      report.rows.push_back(row);
      continue;
    }
    if (n == 1) {
      row = base;  // one rank is the plain model: the baseline itself
    } else {
      std::vector<double> ms;
      std::mutex mutex;
      dist::spawn(n, c.device, [&](dist::ProcessGroup& g) {
        std::vector<dist::BucketInfo> buckets;
        Trainee t = make_trainee(c, per_rank, g.device(), g.shared_from_this(), g.rank() == 0 ? &buckets : nullptr);
        std::vector<double> mine = timed_steps(t, c.warmup, c.steps, g.device());
        if (g.rank() != 0) return;
        std::lock_guard<std::mutex> lock(mutex);
        ms = std::move(mine);  // every rank waits for the others each step: rank 0 times them all
        report.buckets = buckets;
      });
      fill_times(row, ms);
    }
    row.speedup = row.images_per_s / base.images_per_s;
    row.efficiency = row.speedup / n;
    report.rows.push_back(row);
  }
  return report;
}

}  // namespace loom::scaling
