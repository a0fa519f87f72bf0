// Training-step time of the zoo's CNNs: forward, BCE-with-logits loss, backward and one Adam
// step on random inputs, as a user's loop runs them. Median of --iters steps after --warmup;
// on the GPU each step is timed with CUDA events on the compute stream.
//   train_step_bench --model seed_cnn|classic_cnn|resnet18 --batch 32 --device cpu|cuda
//                    [--warmup 20] [--iters 100] [--json]
// Output follows nccl-tests: '#' lines give the setup, then one row per configuration.
#include <loom/loom.h>

#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <thread>

namespace nn = loom::nn;

namespace {

std::shared_ptr<nn::Module> make_model(const std::string& name) {
  if (name == "seed_cnn") return nn::seed_cnn();
  if (name == "classic_cnn") return nn::classic_cnn();
  return nn::resnet18(1);
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"loom training-step benchmark"};
  std::string model_name = "seed_cnn", device_name = "cuda";
  int64_t batch = 32;
  int warmup = 20, iters = 100;
  bool json = false;
  app.add_option("--model", model_name)->check(CLI::IsMember({"seed_cnn", "classic_cnn", "resnet18"}));
  app.add_option("--batch", batch)->check(CLI::Range(1, 1 << 16));
  app.add_option("--device", device_name);
  app.add_option("--warmup", warmup)->check(CLI::Range(0, 100000));
  app.add_option("--iters", iters)->check(CLI::Range(1, 100000));
  app.add_flag("--json", json);
  CLI11_PARSE(app, argc, argv);

  try {
    const loom::Device device(device_name);
    loom::manual_seed(1);
    auto model = make_model(model_name);
    model->to(device);
    model->train();
    loom::optim::Adam optimizer(model->parameters(), loom::optim::GroupOptions().with_lr(1e-3));
    // Random (never zero) inputs; labels 0/1.
    const loom::Tensor images = loom::rand({batch, 3, 64, 64}, device);
    const loom::Tensor labels = loom::randint(0, 2, {batch, 1}, loom::kInt64).to(device, loom::kFloat32);

    auto step = [&] {
      loom::Tensor loss = nn::binary_cross_entropy_with_logits(model->forward(images), labels);
      optimizer.zero_grad();
      loss.backward();
      optimizer.step();
    };

    std::vector<double> ms;
    for (int i = 0; i < warmup; ++i) step();
    if (device.is_cuda()) {
      const int d = device.index;
      loom::cuda::synchronize(d);
      std::vector<std::unique_ptr<loom::cuda::Event>> marks;
      for (int i = 0; i <= iters; ++i) marks.push_back(std::make_unique<loom::cuda::Event>(d));
      auto stream = loom::cuda::current_stream(d);
      marks[0]->record(stream);
      for (int i = 0; i < iters; ++i) {
        step();
        marks[i + 1]->record(stream);
      }
      marks[iters]->synchronize();
      for (int i = 0; i < iters; ++i) ms.push_back(loom::cuda::Event::elapsed_ms(*marks[i], *marks[i + 1]));
    } else {
      for (int i = 0; i < iters; ++i) {
        const auto t0 = std::chrono::steady_clock::now();
        step();
        ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
      }
    }
    const double med = median(ms);
    if (json) {
      std::printf("{\"framework\": \"loom\", \"model\": \"%s\", \"batch\": %lld, \"device\": \"%s\", "
                  "\"median_ms\": %.4f, \"min_ms\": %.4f, \"iters\": %d}\n",
                  model_name.c_str(), static_cast<long long>(batch), device.str().c_str(), med,
                  *std::min_element(ms.begin(), ms.end()), iters);
    } else {
      std::printf("# loom train_step_bench: forward + BCE-with-logits + backward + Adam, random inputs\n");
      std::printf("# device %s, warmup %d, iters %d, CPU threads %u\n", device.str().c_str(), warmup,
                  iters, std::thread::hardware_concurrency());
      std::printf("%-12s %6s %-8s %12s %12s\n", "model", "batch", "device", "median_ms", "min_ms");
      std::printf("%-12s %6lld %-8s %12.4f %12.4f\n", model_name.c_str(), static_cast<long long>(batch),
                  device.str().c_str(), med, *std::min_element(ms.begin(), ms.end()));
    }
    return 0;
  } catch (const loom::Error& e) {
    std::fprintf(stderr, "train_step_bench: %s\n", e.what());
    return 2;
  }
}
