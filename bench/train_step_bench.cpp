// Training-step time of the zoo's CNNs: forward, BCE-with-logits loss, backward and one Adam
// step on random inputs, as a user's loop runs them. Median of --iters steps after --warmup;
// on the GPU each step is timed with CUDA events on the compute stream.
//   train_step_bench --model seed_cnn|classic_cnn|resnet18 --batch 32 --device cpu|cuda
//                    [--warmup 20] [--iters 100] [--ddp] [--graph] [--precision fp32|tf32|bf16]
//                    [--conv-benchmark [--conv-benchmark-limit N]] [--channels-last]
//                    [--profile-steps N] [--json]
// --ddp times the same model also wrapped in DistributedDataParallel over a group of one rank
// (NCCL on a GPU, the threads backend on the CPU); --graph times it as a captured step
// (train::CapturedStep, one CUDA graph replay a step); both together add the captured DDP step
// (graph_ddp: CapturedStep over the DDP model, its NCCL all-reduce inside the graph). The
// variants' steps alternate in blocks, so all see the same clocks, and each row gives its
// overhead against its reference: ddp and graph against plain, graph_ddp against graph (DDP's
// cost in a captured step, as ddp's is in an eager one).
// --precision (train/precision.h; default tf32) applies to every variant; other than tf32 it is
// appended to the variants' names ("graph_bf16": bf16 autocast in a captured step).
// --profile-steps N runs N more steps of each variant after the timing, bracketed for a profiler
// started with its capture off (ncu --profile-from-start off): the profile then holds warm steps
// only, and cuDNN's timed algorithm search (--conv-benchmark) ran unprofiled, undistorted.
// Output follows nccl-tests: '#' lines give the setup, then one row per configuration.
#include <loom/loom.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <memory>
#include <thread>

namespace nn = loom::nn;
namespace dist = loom::dist;

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

// A model (plain, wrapped in DDP, or stepped through a captured graph) with its optimizer and
// one step of training.
struct Trainee {
  std::string variant;
  std::shared_ptr<nn::Module> model;
  std::unique_ptr<loom::optim::Adam> optimizer;
  std::unique_ptr<loom::train::CapturedStep> captured;
  bool autocast = false;
  size_t reference =
      0;  // the trainee its overhead is measured against: plain, or graph for graph_ddp
  void step(const loom::Tensor& images, const loom::Tensor& labels) {
    if (captured) {
      captured->run(images, labels);
      return;
    }
    loom::Tensor loss = nn::binary_cross_entropy_with_logits(
        loom::train::forward(*model, images, autocast), labels);
    optimizer->zero_grad();
    loss.backward();
    optimizer->step();
  }
};

Trainee make_trainee(const std::string& variant, const std::string& name, loom::Device device,
                     dist::GroupPtr group, loom::train::Precision precision, bool channels_last) {
  loom::manual_seed(1);  // the same weights for every variant
  Trainee t;
  t.variant = variant;
  if (precision != loom::train::Precision::TF32)
    t.variant += std::string("_") + loom::train::precision_name(precision);
  t.autocast = precision == loom::train::Precision::BFloat16;
  t.model = make_model(name);
  t.model->to(device);
  if (channels_last)
    t.model->to(loom::MemoryFormat::ChannelsLast);  // weights NHWC, as PyTorch's bench
  t.model->train();
  if (group) t.model = std::make_shared<dist::DistributedDataParallel>(t.model, group);
  t.optimizer = std::make_unique<loom::optim::Adam>(t.model->parameters(),
                                                    loom::optim::GroupOptions().with_lr(1e-3));
  if (variant == "graph" || variant == "graph_ddp") {
    loom::train::CapturedStep::Options options;
    options.autocast = t.autocast;
    options.group = group;  // graph_ddp: its all-reduce captured with the step
    t.captured = std::make_unique<loom::train::CapturedStep>(
        *t.model,
        [](const loom::Tensor& out, const loom::Tensor& y) {
          return nn::binary_cross_entropy_with_logits(out, y);
        },
        *t.optimizer, options);
  }
  return t;
}

// Per-step milliseconds of `n` steps: CUDA events around each on the GPU, the host clock on the
// CPU.
std::vector<double> time_steps(const std::function<void()>& step, int n, loom::Device device) {
  std::vector<double> ms;
  if (device.is_cuda()) {
    const int d = device.index;
    loom::cuda::synchronize(d);
    std::vector<std::unique_ptr<loom::cuda::Event>> marks;
    for (int i = 0; i <= n; ++i) marks.push_back(std::make_unique<loom::cuda::Event>(d));
    auto stream = loom::cuda::current_stream(d);
    marks[0]->record(stream);
    for (int i = 0; i < n; ++i) {
      step();
      marks[i + 1]->record(stream);
    }
    marks[n]->synchronize();
    for (int i = 0; i < n; ++i)
      ms.push_back(loom::cuda::Event::elapsed_ms(*marks[i], *marks[i + 1]));
  } else {
    for (int i = 0; i < n; ++i) {
      const auto t0 = std::chrono::steady_clock::now();
      step();
      ms.push_back(
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    }
  }
  return ms;
}

// overhead: % against the reference variant (named `reference`); vs_plain: % against plain.
void print_row(bool json, const std::string& model, int64_t batch, loom::Device device,
               const std::string& variant, const std::vector<double>& ms, int iters,
               double overhead, const std::string& reference, double vs_plain) {
  const double med = median(ms), best = *std::min_element(ms.begin(), ms.end());
  if (json) {
    std::printf(
        "{\"framework\": \"loom\", \"model\": \"%s\", \"batch\": %lld, \"device\": \"%s\", "
        "\"variant\": \"%s\", \"median_ms\": %.4f, \"min_ms\": %.4f, \"iters\": %d, "
        "\"conv_benchmark\": %s, \"conv_benchmark_limit\": %lld",
        model.c_str(), static_cast<long long>(batch), device.str().c_str(), variant.c_str(), med,
        best, iters, loom::conv_benchmark() ? "true" : "false",
        static_cast<long long>(loom::conv_benchmark_limit()));
    if (!reference.empty()) {
      std::printf(", \"vs_plain_pct\": %.2f, \"overhead_vs\": \"%s\", \"overhead_pct\": %.2f",
                  vs_plain, reference.c_str(), overhead);
    }
    // DDP's cost: eager against the plain step, captured against the captured plain step.
    if (variant.rfind("ddp", 0) == 0 || variant.rfind("graph_ddp", 0) == 0) {
      std::printf(", \"ddp_overhead_pct\": %.2f", overhead);
    }
    std::printf("}\n");
  } else {
    std::printf("%-12s %6lld %-8s %-18s %12.4f %12.4f", model.c_str(),
                static_cast<long long>(batch), device.str().c_str(), variant.c_str(), med, best);
    if (!reference.empty()) std::printf(" %+9.2f%% vs %s", overhead, reference.c_str());
    std::printf("\n");
  }
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"loom training-step benchmark"};
  std::string model_name = "seed_cnn", device_name = "cuda";
  int64_t batch = 32;
  int warmup = 20, iters = 100, profile_steps = 0;
  std::vector<std::string> profile_variants;
  int64_t conv_benchmark_limit = loom::conv_benchmark_limit();
  bool json = false, ddp = false, graph = false, conv_benchmark = false, channels_last = false;
  std::string precision_name = "tf32";
  app.add_option("--model", model_name)
      ->check(CLI::IsMember({"seed_cnn", "classic_cnn", "resnet18"}));
  app.add_option("--batch", batch)->check(CLI::Range(1, 1 << 16));
  app.add_option("--device", device_name);
  app.add_option("--warmup", warmup)->check(CLI::Range(0, 100000));
  app.add_option("--iters", iters)->check(CLI::Range(1, 100000));
  app.add_flag("--ddp", ddp, "also time the model inside DistributedDataParallel (one rank)");
  app.add_flag("--graph", graph,
               "also time the step captured into a CUDA graph (train::CapturedStep); with --ddp "
               "also the captured DDP step (graph_ddp)");
  app.add_flag("--conv-benchmark", conv_benchmark,
               "choose cuDNN's convolution algorithms by timing them (loom::set_conv_benchmark)");
  app.add_option("--conv-benchmark-limit", conv_benchmark_limit,
                 "engine configurations timed per convolution pass, 0 for all "
                 "(loom::set_conv_benchmark_limit)")
      ->check(CLI::Range(int64_t(0), int64_t(1000)));
  app.add_option("--precision", precision_name,
                 "fp32, tf32 (convolutions on TF32 tensor cores) or bf16 "
                 "(mixed precision: loom::Autocast)")
      ->check(CLI::IsMember({"fp32", "tf32", "bf16"}));
  app.add_flag(
      "--channels-last", channels_last,
      "feed the batch channels-last (NHWC): convolutions, batch norm, pooling and activations "
      "then run channels-last on CUDA; appends _cl to the variants' names");
  app.add_option("--profile-steps", profile_steps,
                 "then N steps of each variant for a profiler (CUDA)")
      ->check(CLI::Range(0, 1000));
  app.add_option("--profile-variant", profile_variants,
                 "profile only these variants' steps (plain, ddp, graph, graph_ddp; default all), "
                 "so that a profiler's kernel list is one variant's");
  app.add_flag("--json", json);
  CLI11_PARSE(app, argc, argv);

  try {
    const loom::Device device(device_name);
    LOOM_CHECK(!graph || device.is_cuda(), "--graph needs --device cuda (CUDA graphs)");
    LOOM_CHECK(profile_steps == 0 || device.is_cuda(), "--profile-steps needs --device cuda");
    loom::set_conv_benchmark(conv_benchmark);
    loom::set_conv_benchmark_limit(conv_benchmark_limit);
    const loom::train::Precision precision = *loom::train::precision_from_name(precision_name);
    loom::train::use_precision(precision);
    loom::manual_seed(1);
    // Random (never zero) inputs; labels 0/1.
    loom::Tensor images = loom::rand({batch, 3, 64, 64}, device);
    if (channels_last) images = images.contiguous(loom::MemoryFormat::ChannelsLast);
    const loom::Tensor labels =
        loom::randint(0, 2, {batch, 1}, loom::kInt64).to(device, loom::kFloat32);

    std::vector<Trainee> trainees;
    trainees.push_back(
        make_trainee("plain", model_name, device, nullptr, precision, channels_last));
    dist::GroupPtr group;
    if (ddp) {
      group = device.is_cuda() ? dist::make_nccl_group(dist::nccl_unique_id(), 0, 1, device.index)
                               : dist::make_threads_groups(1, device)[0];
      trainees.push_back(make_trainee("ddp", model_name, device, group, precision, channels_last));
    }
    if (graph)
      trainees.push_back(
          make_trainee("graph", model_name, device, nullptr, precision, channels_last));
    if (graph && ddp) {
      // Its own communicator: the eager DDP's collectives and the graph's never share one.
      const dist::GroupPtr graph_group =
          dist::make_nccl_group(dist::nccl_unique_id(), 0, 1, device.index);
      trainees.push_back(
          make_trainee("graph_ddp", model_name, device, graph_group, precision, channels_last));
      trainees.back().reference = trainees.size() - 2;  // the captured plain step
    }
    std::string made;  // this run's variants, for the error below
    for (const Trainee& t : trainees) made += (made.empty() ? "" : ", ") + t.variant;
    for (const std::string& v : profile_variants) {
      LOOM_CHECK(std::any_of(trainees.begin(), trainees.end(),
                             [&v](const Trainee& t) { return t.variant == v; }),
                 "--profile-variant: this run has no variant \"", v, "\" (it has ", made,
                 "; --ddp and --graph add theirs)");
    }
    for (int i = 0; i < warmup; ++i) {
      for (Trainee& t : trainees) t.step(images, labels);
    }
    // Alternating blocks: a clock change or a neighbour's load falls on every variant alike.
    const int blocks = trainees.size() > 1 ? 5 : 1;
    std::vector<std::vector<double>> ms(trainees.size());
    for (int b = 0; b < blocks; ++b) {
      const int n = iters / blocks + (b < iters % blocks ? 1 : 0);
      for (size_t t = 0; t < trainees.size(); ++t) {
        const auto block = time_steps([&] { trainees[t].step(images, labels); }, n, device);
        ms[t].insert(ms[t].end(), block.begin(), block.end());
      }
    }
    if (profile_steps > 0) {
      loom::cuda::synchronize(device.index);
      loom::cuda::profiler_start();
      for (Trainee& t : trainees) {
        const bool chosen =
            profile_variants.empty() || std::find(profile_variants.begin(), profile_variants.end(),
                                                  t.variant) != profile_variants.end();
        for (int i = 0; chosen && i < profile_steps; ++i) t.step(images, labels);
      }
      loom::cuda::synchronize(device.index);
      loom::cuda::profiler_stop();
    }
    if (!json) {
      std::printf(
          "# loom train_step_bench: forward + BCE-with-logits + backward + Adam, random inputs\n");
      std::printf(
          "# device %s, warmup %d, iters %d, CPU threads %u, conv algorithms by %s%s\n",
          device.str().c_str(), warmup, iters, std::thread::hardware_concurrency(),
          conv_benchmark ? "timing" : "heuristics",
          ddp ? (std::string(", DDP over ") + group->backend() + " with 1 rank").c_str() : "");
      if (graph && ddp) {
        std::printf(
            "# overhead: ddp and graph against plain; graph_ddp (CapturedStep over the DDP model, "
            "its NCCL "
            "all-reduce in the graph) against graph: DDP's cost in a captured step\n");
      }
      std::printf("%-12s %6s %-8s %-18s %12s %12s%s\n", "model", "batch", "device", "run",
                  "median_ms", "min_ms", trainees.size() > 1 ? "   overhead" : "");
    }
    if (channels_last) {
      for (Trainee& t : trainees) t.variant += "_cl";
    }
    for (size_t t = 0; t < trainees.size(); ++t) {
      const size_t r = trainees[t].reference;
      const double overhead = 100.0 * (median(ms[t]) / median(ms[r]) - 1.0);
      const double vs_plain = 100.0 * (median(ms[t]) / median(ms[0]) - 1.0);
      print_row(json, model_name, batch, device, trainees[t].variant, ms[t], iters, overhead,
                t == 0 ? std::string() : trainees[r].variant, vs_plain);
    }
    return 0;
  } catch (const loom::Error& e) {
    std::fprintf(stderr, "train_step_bench: %s\n", e.what());
    return 2;
  }
}
