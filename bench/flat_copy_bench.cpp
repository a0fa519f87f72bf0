// DistributedDataParallel's flat copy (dist::copy_all: backward's fresh gradients into their
// bucket's arena, one kernel a bucket) for each model's float32 gradients, beside one
// device-to-device copy of the same bytes as a single block: the ceiling a gather of many
// pieces can approach. bench/flat_copy_torch.py times PyTorch's ways of the same gather.
//   flat_copy_bench [--model seed_cnn,classic_cnn,resnet18] [--iters 200] [--warmup 20]
// One JSON line per model: parameters, bytes, the medians of copy_all and of the one-block copy
// in microseconds (CUDA events around each), and copy_all's bandwidth (bytes read + written).
#include <loom/loom.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <functional>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "loom/distributed/flat_copy.h"

namespace {

std::shared_ptr<loom::nn::Module> model_named(const std::string& name) {
  if (name == "seed_cnn") return loom::nn::seed_cnn();
  if (name == "classic_cnn") return loom::nn::classic_cnn();
  if (name == "resnet18") return loom::nn::resnet18();
  throw loom::Error("flat_copy_bench: --model: expected seed_cnn, classic_cnn or resnet18, got \"" +
                    name + "\"");
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Median microseconds of `run` over `iters` calls after `warmup`, CUDA events around each call.
double median_us(const std::function<void()>& run, int iters, int warmup, int device) {
  for (int i = 0; i < warmup; ++i) run();
  auto stream = loom::cuda::current_stream(device);
  std::vector<std::unique_ptr<loom::cuda::Event>> marks;
  for (int i = 0; i <= iters; ++i) marks.push_back(std::make_unique<loom::cuda::Event>(device));
  loom::cuda::synchronize(device);
  marks[0]->record(stream);
  for (int i = 0; i < iters; ++i) {
    run();
    marks[static_cast<size_t>(i) + 1]->record(stream);
  }
  marks.back()->synchronize();
  std::vector<double> us;
  for (int i = 0; i < iters; ++i)
    us.push_back(1000.0 * loom::cuda::Event::elapsed_ms(*marks[static_cast<size_t>(i)],
                                                        *marks[static_cast<size_t>(i) + 1]));
  return median(us);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"DDP's flat gradient copy against one device-to-device copy of the same bytes"};
  std::string models = "seed_cnn,classic_cnn,resnet18";
  int iters = 200, warmup = 20;
  app.add_option("--model", models, "comma-separated: seed_cnn, classic_cnn, resnet18");
  app.add_option("--iters", iters)->check(CLI::Range(1, 100000));
  app.add_option("--warmup", warmup)->check(CLI::Range(0, 100000));
  CLI11_PARSE(app, argc, argv);
  try {
    if (!loom::cuda_is_available()) throw loom::Error("flat_copy_bench: needs a CUDA device");
    const loom::Device device("cuda:0");
    std::stringstream list(models);
    for (std::string name; std::getline(list, name, ',');) {
      const auto model = model_named(name);
      loom::Generator gen(7);
      std::vector<loom::Tensor> grads;
      int64_t elements = 0;
      for (const loom::Tensor& p : model->parameters()) {
        grads.push_back(loom::uniform(p.shape(), -1.0, 1.0, loom::kFloat32, &gen).to(device));
        elements += (p.numel() + 3) / 4 * 4;  // DDP's 16-byte slots
      }
      loom::Tensor arena = loom::zeros({elements}, loom::TensorOptions().device(device));
      std::vector<loom::dist::FlatCopy> copies;
      int64_t offset = 0, bytes = 0;
      for (const loom::Tensor& g : grads) {
        copies.push_back({g.raw_data(), static_cast<float*>(arena.raw_data()) + offset,
                          static_cast<size_t>(g.nbytes())});
        offset += (g.numel() + 3) / 4 * 4;
        bytes += g.nbytes();
      }
      const loom::Tensor block =
          loom::uniform({elements}, -1.0, 1.0, loom::kFloat32, &gen).to(device);
      const double gather_us =
          median_us([&] { loom::dist::copy_all(copies, device); }, iters, warmup, device.index);
      const double block_us = median_us([&] { arena.copy_(block); }, iters, warmup, device.index);
      // The gather is right (the block's copy overwrote the arena since): each gradient lands
      // in its slot.
      loom::dist::copy_all(copies, device);
      offset = 0;
      for (const loom::Tensor& g : grads) {
        const loom::Tensor slot = arena.narrow(0, offset, g.numel());
        if ((slot - g.reshape({g.numel()})).abs().max().item<double>() != 0.0)
          throw loom::Error("flat_copy_bench: copy_all misplaced a gradient of " + name);
        offset += (g.numel() + 3) / 4 * 4;
      }
      std::printf(
          "{\"bench\": \"flat_copy\", \"framework\": \"loom\", \"model\": \"%s\", \"tensors\": "
          "%zu, \"bytes\": %lld, \"copy_all_us\": %.2f, \"one_block_us\": %.2f, "
          "\"copy_all_gbps\": %.1f, \"one_block_gbps\": %.1f}\n",
          name.c_str(), grads.size(), static_cast<long long>(bytes), gather_us, block_us,
          2.0 * bytes / gather_us / 1e3, 2.0 * elements * 4 / block_us / 1e3);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
  return 0;
}
