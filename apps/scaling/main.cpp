// loom-scaling: training speed against GPU count (see apps/scaling/README.md).
//   loom-scaling --model seed_cnn --gpus 1,2,4,8 --batch-per-gpu 32 --steps 300 --warmup 50
//                [--data synthetic|DIR] [--precision fp32|tf32|bf16] [--channels-last]
//                [--graph auto|on|off] [--launch auto|threads|processes]
//                [--scaling weak|strong] [--skip-missing] [--price-per-gpu-hour P]
//                [--time-to-accuracy 0.75 --data DIR] [--compare TORCH.json] [--out DIR]
//                [--pipeline 2,4 [--micro-batches M] [--pipeline-schedule gpipe|1f1b]]
//   loom-scaling --device cpu --world-sizes 1,2,4 ...     (thread ranks on the CPU)
//   loom-scaling --device cuda --world-sizes 1,2 ...      (thread ranks sharing cuda:0)
//   loom-scaling simulate --gpus 16,64,256,1024 --from RUN.json [--collectives FILE.jsonl]
#include <CLI/CLI.hpp>
#include <filesystem>
#include <iostream>

#include "outputs.h"
#include "scaling.h"
#include "simulate_command.h"
#include "time_to_accuracy.h"

namespace {

void write_text(const std::string& path, const std::string& text) {
  loom::io::write_file_atomically(
      path, [&](const loom::io::ByteSink& sink) { sink(text.data(), text.size()); });
}

// report.txt, report.json, report.csv (and the chart, when given) under `out`.
void write_reports(const std::string& out, const loom::scaling::Report& report,
                   const std::string& text, const std::vector<uint8_t>* png) {
  write_text(out + "/report.txt", text);
  write_text(out + "/report.json", loom::scaling::report_json(report));
  write_text(out + "/report.csv", loom::scaling::report_csv(report));
  if (png) write_text(out + "/speedup.png", std::string(png->begin(), png->end()));
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "loom-scaling: data-parallel (and pipeline) training speed against the number of GPUs"};
  loom::scaling::Config c;
  loom::scaling::AccuracyConfig accuracy;
  std::string device = "cuda", scaling = "weak", out, compare, rank_result;
  std::vector<int> gpus, world_sizes;
  std::optional<double> price, tta;
  bool tta_only = false;
  int rank_world = 0;
  app.add_option("--model", c.model, "seed_cnn, classic_cnn or resnet18")->capture_default_str();
  app.add_option("--gpus", gpus, "GPU counts to run, one rank per GPU (default 1,2,4,8)")
      ->delimiter(',');
  app.add_option(
         "--world-sizes", world_sizes,
         "rank counts as threads on one device: --device cpu (default 1,2,4), or --device cuda "
         "(every rank on cuda:0, labelled: not a multi-GPU speedup)")
      ->delimiter(',');
  app.add_option("--device", device, "cuda or cpu")->capture_default_str();
  app.add_option("--batch-per-gpu", c.batch_per_rank, "each rank's batch")
      ->check(CLI::Range(1, 1 << 16))
      ->capture_default_str();
  app.add_option("--steps", c.steps, "timed steps")
      ->check(CLI::Range(1, 1000000))
      ->capture_default_str();
  app.add_option("--warmup", c.warmup, "untimed steps first")
      ->check(CLI::Range(0, 1000000))
      ->capture_default_str();
  app.add_option("--warmup-seconds", c.warmup_seconds,
                 "the plain model warms up at least this long")
      ->check(CLI::Range(0.0, 3600.0))
      ->capture_default_str();
  app.add_option("--data", c.data,
                 "synthetic, or a folder of photographs (train/ and val/, or class folders)")
      ->capture_default_str();
  app.add_option("--workers", c.workers, "loader threads per rank with --data DIR")
      ->check(CLI::Range(0, 64))
      ->capture_default_str();
  app.add_option("--precision", c.precision,
                 "fp32, tf32 (TF32 convolutions) or bf16 (mixed precision: loom::Autocast)")
      ->capture_default_str();
  app.add_flag("--channels-last", c.channels_last,
               "lay the images and the convolution weights out "
               "channels-last (NHWC): faster convolutions on CUDA for classic_cnn and resnet18 "
               "(docs/benchmarks.md)");
  // Checked by loom-scaling itself (check_config): a bad value is a loom::Error naming it.
  app.add_option("--launch", c.launch,
                 "threads (one process), processes (one per rank, as torchrun), or auto: "
                 "processes for one rank per GPU with any world above 1, else threads")
      ->capture_default_str();
  app.add_option("--graph", c.graph,
                 "each rank's step as one CUDA graph replay (train::CapturedStep, DDP's NCCL "
                 "all-reduces inside) and the plain baseline's too: auto (wherever possible: CUDA, "
                 "NCCL), on, off")
      ->capture_default_str();
  app.add_option("--scaling", scaling, "weak (batch per rank fixed) or strong (global batch fixed)")
      ->check(CLI::IsMember({"weak", "strong"}))
      ->capture_default_str();
  app.add_flag("--skip-missing", c.skip_missing,
               "report GPU counts above the machine's as not run");
  app.add_option("--pipeline", c.pipeline_stages,
                 "stage counts: a row per count with the model cut into that many stages (model "
                 "parallelism) at "
                 "the global batch of as many DDP ranks")
      ->delimiter(',');
  app.add_option("--micro-batches", c.micro_batches,
                 "with --pipeline: micro-batches per step (default 2 x stages)");
  app.add_option("--pipeline-schedule", c.pipeline_schedule, "with --pipeline: gpipe or 1f1b")
      ->capture_default_str();
  app.add_option("--dist-timeout", c.dist_timeout,
                 "seconds a collective may wait for the other ranks before the job fails "
                 "(default: $LOOM_DIST_TIMEOUT, else 600)");
  app.add_option("--price-per-gpu-hour", price,
                 "dollars per GPU hour: adds the cost per million images");
  app.add_option("--time-to-accuracy", tta,
                 "also train on --data DIR at each count until this validation accuracy");
  app.add_option("--tta-epochs", accuracy.epochs, "epochs of each time-to-accuracy run")
      ->capture_default_str();
  app.add_option("--tta-warmup-epochs", accuracy.warmup_epochs,
                 "the learning-rate warmup of the linear scaling rule")
      ->capture_default_str();
  app.add_flag("--tta-only", tta_only, "only the time-to-accuracy runs, not the step timing");
  app.add_option("--compare", compare,
                 "a report.json of bench/scaling_torch.py to draw beside loom's points");
  app.add_option("--out", out, "folder for report.txt, report.json, report.csv and speedup.png");
  app.add_option("--rank-world", rank_world,
                 "internal: run as one rank process of a world this size")
      ->group("");
  app.add_option("--rank-result", rank_result, "internal: where rank 0 writes its result")
      ->group("");
  std::optional<int> rank_warmup;
  app.add_option("--rank-warmup", rank_warmup, "internal: the warm-up steps of every rank")
      ->group("");
  loom::scaling::SimulateArgs sim;
  CLI::App* simulate = loom::scaling::add_simulate_command(app, sim);
  CLI11_PARSE(app, argc, argv);

  try {
    if (simulate->parsed()) return loom::scaling::run_simulate_command(sim);
    LOOM_CHECK(device == "cuda" || device == "cpu", "--device: expected cuda or cpu, got '",
               device.substr(0, 32), "'");
    LOOM_CHECK(gpus.empty() || world_sizes.empty(), "--gpus and --world-sizes: give one of them");
    LOOM_CHECK(!(device == "cpu" && !gpus.empty()),
               "--gpus counts GPUs; with --device cpu use --world-sizes");
    using loom::scaling::Placement;
    c.placement = device == "cpu"       ? Placement::Cpu
                  : world_sizes.empty() ? Placement::Gpus
                                        : Placement::OneGpu;
    c.world_sizes = !gpus.empty()                   ? gpus
                    : !world_sizes.empty()          ? world_sizes
                    : c.placement == Placement::Cpu ? std::vector<int>{1, 2, 4}
                                                    : std::vector<int>{1, 2, 4, 8};
    c.strong = scaling == "strong";
    c.price_per_gpu_hour = price;
    c.self_command.push_back(std::filesystem::read_symlink("/proc/self/exe").string());
    c.self_command.insert(c.self_command.end(), argv + 1, argv + argc);

    if (rank_world > 0) {  // one rank process of --launch processes
      if (rank_warmup) c.warmup = *rank_warmup;
      loom::scaling::run_as_rank(c, rank_world, rank_result);
      return 0;
    }
    LOOM_CHECK(!tta_only || tta, "--tta-only needs --time-to-accuracy");
    LOOM_CHECK(!tta_only || c.pipeline_stages.empty(),
               "--pipeline rows are step timing, which --tta-only leaves out");
    LOOM_CHECK(
        !c.pipeline_stages.empty() ||
            (app.count("--micro-batches") == 0 && app.count("--pipeline-schedule") == 0),
        "--micro-batches and --pipeline-schedule shape the --pipeline rows: give --pipeline too");
    if (loom::dist::read_launch_environment().launcher !=
        "none") {  // one rank of mpirun/srun/torchrun's job
      LOOM_CHECK(!tta && app.count("--launch") == 0 && gpus.empty() && world_sizes.empty() &&
                     c.pipeline_stages.empty(),
                 "loom-scaling under a launcher measures the job's own size: leave out --gpus, "
                 "--world-sizes, "
                 "--launch, --pipeline and --time-to-accuracy");
      c.placement = device == "cpu" ? Placement::Cpu : Placement::Gpus;
      const std::optional<loom::scaling::Report> job = loom::scaling::run_in_job(c);
      if (job) {
        const std::string text = loom::scaling::report_text(*job);
        std::cout << text;
        if (!out.empty()) {
          std::filesystem::create_directories(out);
          write_reports(out, *job, text, nullptr);
        }
      }
      return 0;
    }
    if (!out.empty()) {
      std::filesystem::create_directories(out);  // checked before minutes of measuring
      LOOM_CHECK(std::filesystem::is_directory(out), "--out ", out, " is not a folder");
      c.scratch_dir = out;
    }
    std::optional<std::string> compare_text;
    if (!compare.empty())
      compare_text = loom::io::read_file(compare);  // a bad path fails now, not after the run

    if (tta) {
      accuracy.target = *tta;
      accuracy.out_dir = out;
      loom::scaling::check_accuracy_config(c, accuracy);
    }
    loom::scaling::Report report;
    if (!tta_only) {
      report = loom::scaling::run(c);
    } else {
      report.config = c;
    }
    if (tta) {
      report.accuracy = loom::scaling::run_time_to_accuracy(c, accuracy);
    }
    const std::string text = loom::scaling::report_text(report);
    std::cout << text;
    if (!out.empty()) {
      if (tta_only) {  // no step timing, no chart
        write_reports(out, report, text, nullptr);
      } else {
        const std::vector<uint8_t> png = loom::scaling::speedup_chart_png(report, compare_text);
        write_reports(out, report, text, &png);
        std::cout << "loom-scaling: report.txt, report.json, report.csv and speedup.png in " << out
                  << "\n";
      }
    }
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "loom-scaling: error: " << e.what() << "\n";
    return 1;
  }
}
