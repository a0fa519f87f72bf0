// dist::PipelineParallel's training step against its schedule's theory: for each stage count,
// micro-batch count and schedule, the median step time (forward + backward over the
// micro-batches, then one Adam step; random data), each stage's busy time from device events,
// the measured bubble beside (stages - 1) / (micro-batches + stages - 1), and the peak memory
// of each device during a step. Stage s runs on cuda:(s mod GPUs): on one GPU every stage
// shares it, each on its own stream, so the bubble and the memory are still measured.
//   pipeline_bench --model resnet18 --batch 256 --stages 1,2,4 --micro-batches 1,4,8
//                  [--schedule gpipe,1f1b] [--balance params|time] [--device cuda|cpu]
//                  [--warmup 3] [--iters 10]
// Output follows nccl-tests: '#' lines give the setup, then one row per configuration.
#include <loom/loom.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <sstream>

namespace nn = loom::nn;
namespace dist = loom::dist;

namespace {

std::shared_ptr<nn::Sequential> make_model(const std::string& name) {
  std::shared_ptr<nn::Module> m = name == "seed_cnn"      ? nn::seed_cnn()
                                  : name == "classic_cnn" ? nn::classic_cnn()
                                                          : nn::resnet18(1);
  return std::dynamic_pointer_cast<nn::Sequential>(m);
}

std::vector<int> parse_list(const std::string& text) {
  std::vector<int> out;
  std::stringstream in(text);
  for (std::string item; std::getline(in, item, ',');) out.push_back(std::stoi(item));
  return out;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

void synchronize_all(const std::vector<loom::Device>& devices) {
  for (const loom::Device& d : devices) {
    if (d.is_cuda()) loom::cuda::synchronize(d.index);
  }
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"pipeline parallelism: step time, bubble and memory per configuration"};
  std::string model_name = "resnet18", device_name = "cuda", stages_list = "1,2,4",
              micro_list = "1,2,4,8", schedule_list = "gpipe,1f1b", balance = "params";
  int64_t batch = 256, image = 64;
  int warmup = 3, iters = 10;
  app.add_option("--model", model_name)
      ->check(CLI::IsMember({"seed_cnn", "classic_cnn", "resnet18"}));
  app.add_option("--batch", batch)->check(CLI::PositiveNumber);
  app.add_option("--image-size", image)->check(CLI::PositiveNumber);
  app.add_option("--device", device_name)->check(CLI::IsMember({"cpu", "cuda"}));
  app.add_option("--stages", stages_list);
  app.add_option("--micro-batches", micro_list);
  app.add_option("--schedule", schedule_list);
  app.add_option("--balance", balance, "cut by parameter count or by measured time")
      ->check(CLI::IsMember({"params", "time"}));
  app.add_option("--warmup", warmup)->check(CLI::NonNegativeNumber);
  app.add_option("--iters", iters)->check(CLI::PositiveNumber);
  CLI11_PARSE(app, argc, argv);

  const bool gpu = device_name == "cuda";
  const int gpus = gpu ? loom::cuda_device_count() : 0;
  if (gpu && gpus == 0) {
    std::fprintf(stderr, "pipeline_bench: no CUDA device\n");
    return 1;
  }
  std::printf(
      "# pipeline_bench: model %s, batch %lld, %lldx%lld images, balanced by %s, %s%s, median of "
      "%d steps "
      "after %d\n",
      model_name.c_str(), static_cast<long long>(batch), static_cast<long long>(image),
      static_cast<long long>(image), balance.c_str(), gpu ? "CUDA devices: " : "cpu",
      gpu ? std::to_string(gpus).c_str() : "", iters, warmup);
  std::printf("# %-6s %-6s %-5s %9s %9s %9s %8s  %s\n", "stages", "micro", "sched", "step_ms",
              "bubble", "theory", "img/s",
              "per stage: device busy_ms (fwd+bwd); peak MiB per device");

  const loom::Tensor images = loom::randn({batch, 3, image, image}, loom::TensorOptions());
  const loom::Tensor labels = loom::randint(0, 2, {batch, 1}, loom::kFloat32);
  const auto loss = [](const loom::Tensor& out, const loom::Tensor& target) {
    return nn::binary_cross_entropy_with_logits(out, target);
  };

  for (int stages : parse_list(stages_list)) {
    for (int micro : parse_list(micro_list)) {
      std::stringstream schedules(schedule_list);
      for (std::string sched; std::getline(schedules, sched, ',');) {
        if (stages == 1 && sched != schedule_list.substr(0, schedule_list.find(',')))
          continue;  // one schedule
        loom::manual_seed(1);
        auto model = make_model(model_name);
        std::vector<loom::Device> devices;
        for (int s = 0; s < stages; ++s)
          devices.push_back(gpu ? loom::cuda_device(s % gpus) : loom::kCPU);
        dist::PipelineOptions options;
        options.micro_batches = micro;
        options.schedule =
            sched == "1f1b" ? dist::PipelineSchedule::OneFOneB : dist::PipelineSchedule::GPipe;
        if (balance == "time") {
          options.balance = dist::PipelineBalance::Time;
          options.sample_input = {(batch + micro - 1) / micro, 3, image, image};
        }
        auto pipe = std::make_shared<dist::PipelineParallel>(model, devices, options);
        loom::optim::Adam adam(pipe->parameters(), loom::optim::GroupOptions().with_lr(1e-3));
        const loom::Tensor x = images.to(devices.front()), y = labels.to(devices.front());
        const auto step = [&] {
          adam.zero_grad();
          pipe->train_step(x, y, loss);
          adam.step();
        };
        for (int i = 0; i < warmup; ++i) step();
        synchronize_all(devices);
        std::vector<double> ms;
        for (int i = 0; i < iters; ++i) {
          const auto start = std::chrono::steady_clock::now();
          step();
          synchronize_all(devices);
          ms.push_back(
              std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
                  .count());
        }
        // One more step with every stage op timed, and the devices' peak memory during it.
        std::map<int, int64_t> base;
        for (const loom::Device& d : devices) {
          if (!d.is_cuda() || base.count(d.index)) continue;
          loom::cuda::reset_peak_stats(d.index);
          base[d.index] = loom::cuda::allocator_stats(d.index).allocated_bytes;
        }
        pipe->time_stages(true);
        step();
        synchronize_all(devices);
        const dist::PipelineTiming& t = pipe->last_timing();
        const double step_ms = median(ms);
        std::printf("  %-6d %-6d %-5s %9.3f %9.3f %9.3f %8.0f ", stages, micro, sched.c_str(),
                    step_ms, t.bubble(), dist::theoretical_bubble(stages, micro),
                    1000.0 * static_cast<double>(batch) / step_ms);
        for (size_t s = 0; s < t.busy_ms.size(); ++s) {
          std::printf(" %s %.2f (%.2f+%.2f)", devices[s].str().c_str(), t.busy_ms[s],
                      t.forward_ms[s], t.backward_ms[s]);
        }
        std::printf(";");
        for (const auto& [index, before] : base) {
          const double mib = static_cast<double>(
                                 loom::cuda::allocator_stats(index).peak_allocated_bytes - before) /
                             (1 << 20);
          std::printf(" cuda:%d %.1f", index, mib);
        }
        std::printf("\n");
        std::fflush(stdout);
      }
    }
  }
  return 0;
}
