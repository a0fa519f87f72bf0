// loom-scaling: training speed against GPU count (see apps/scaling/README.md).
//   loom-scaling --model seed_cnn --gpus 1,2,4,8 --batch-per-gpu 32 --steps 300 --warmup 50
//                [--precision fp32|tf32] [--scaling weak|strong] [--skip-missing] [--out DIR]
//   loom-scaling --device cpu --world-sizes 1,2,4 ...     (thread ranks on the CPU)
#include <CLI/CLI.hpp>

#include <filesystem>
#include <fstream>
#include <iostream>

#include "scaling.h"

int main(int argc, char** argv) {
  CLI::App app{"loom-scaling: data-parallel training speed against the number of GPUs"};
  loom::scaling::Config c;
  std::string device = "cuda", scaling = "weak", out;
  std::vector<int> gpus, world_sizes;
  app.add_option("--model", c.model, "seed_cnn, classic_cnn or resnet18")->capture_default_str();
  app.add_option("--gpus", gpus, "GPU counts to run, one rank per GPU (default 1,2,4,8)")->delimiter(',');
  app.add_option("--world-sizes", world_sizes, "rank counts on --device cpu (default 1,2,4)")->delimiter(',');
  app.add_option("--device", device, "cuda or cpu")->capture_default_str();
  app.add_option("--batch-per-gpu", c.batch_per_rank, "each rank's batch")->check(CLI::Range(1, 1 << 16))->capture_default_str();
  app.add_option("--steps", c.steps, "timed steps")->check(CLI::Range(1, 1000000))->capture_default_str();
  app.add_option("--warmup", c.warmup, "untimed steps first")->check(CLI::Range(0, 1000000))->capture_default_str();
  app.add_option("--precision", c.precision, "fp32 or tf32 convolutions")->capture_default_str();
  app.add_option("--scaling", scaling, "weak (batch per rank fixed) or strong (global batch fixed)")
      ->check(CLI::IsMember({"weak", "strong"}))->capture_default_str();
  app.add_flag("--skip-missing", c.skip_missing, "report GPU counts above the machine's as not run");
  app.add_option("--out", out, "folder for report.txt and report.json");
  CLI11_PARSE(app, argc, argv);

  try {
    LOOM_CHECK(device == "cuda" || device == "cpu", "--device: expected cuda or cpu, got '", device, "'");
    c.device = device == "cuda" ? loom::kCUDA : loom::kCPU;
    LOOM_CHECK(!(c.device.is_cpu() && !gpus.empty()), "--gpus counts GPUs; with --device cpu use --world-sizes");
    LOOM_CHECK(!(c.device.is_cuda() && !world_sizes.empty()), "--world-sizes is for --device cpu; on GPUs use --gpus");
    LOOM_CHECK(c.device.is_cpu() || loom::built_with_cuda(), "--device cuda: loom-scaling was built without CUDA");
    c.world_sizes = c.device.is_cuda() ? (gpus.empty() ? std::vector<int>{1, 2, 4, 8} : gpus)
                                       : (world_sizes.empty() ? std::vector<int>{1, 2, 4} : world_sizes);
    c.strong = scaling == "strong";
    if (!out.empty()) {
      std::filesystem::create_directories(out);  // checked before minutes of measuring
      LOOM_CHECK(std::filesystem::is_directory(out), "--out ", out, " is not a folder");
    }
    const loom::scaling::Report report = loom::scaling::run(c);
    const std::string text = loom::scaling::report_text(report);
    std::cout << text;
    if (!out.empty()) {
      std::ofstream(out + "/report.txt") << text;
      std::ofstream(out + "/report.json") << loom::scaling::report_json(report);
    }
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "loom-scaling: error: " << e.what() << "\n";
    return 1;
  }
}
