// loom-gpu-basics: the seed article's GPU exercises, done with checks and honest timings.
// Only flag parsing lives here; the subcommands are library functions (commands.h).
#include <CLI/CLI.hpp>
#include <iostream>

#include "commands.h"
#include "device_info.h"

using namespace loom::gpu_basics;

int main(int argc, char** argv) {
  CLI::App app{
      "loom-gpu-basics: vector add, SAXPY, Mandelbrot and matmul on the GPU (or the "
      "CPU when there is none), each checked against the CPU and timed honestly"};
  app.require_subcommand(1);
  app.fallthrough();  // the global flags may also follow the subcommand
  std::string device_spec = "auto";
  bool as_json = false;
  loom::gpu_basics::RunOptions run;
  app.add_option("--device", device_spec, "auto, cpu, cuda or cuda:N")->capture_default_str();
  app.add_flag("--json", as_json, "print one JSON object instead of text");
  app.add_option("--warmup", run.timing.warmup, "untimed runs before timing")
      ->check(CLI::Range(0, 100))
      ->capture_default_str();
  app.add_option("--repeats", run.timing.repeats, "timed runs; the median is reported")
      ->check(CLI::Range(1, 1000))
      ->capture_default_str();
  app.add_option("--seed", run.seed, "seed of the random inputs")->capture_default_str();

  app.add_subcommand("info", "devices, versions and peer access (like nvidia-smi and lspci)");

  int64_t vector_n = 0;
  const std::string n_help = "elements (default 2^28 on a GPU, 2^24 on the CPU)";
  auto* add = app.add_subcommand("vector-add", "C = A + B: the seed's example, then bandwidth");
  add->add_option("--n", vector_n, n_help)->check(CLI::Range(int64_t{1}, kMaxVectorLength));
  float alpha = 2.0f;
  auto* saxpy = app.add_subcommand("saxpy", "y = a*x + y, bandwidth against a copy");
  saxpy->add_option("--n", vector_n, n_help)->check(CLI::Range(int64_t{1}, kMaxVectorLength));
  saxpy->add_option("--alpha", alpha, "the scalar a")->capture_default_str();

  MandelbrotSpec spec;
  std::string png_path = "mandelbrot.png";
  auto* mandel = app.add_subcommand("mandelbrot", "the seed's fractal, written as a PNG");
  mandel->add_option("--width", spec.width)
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 16))
      ->capture_default_str();
  mandel->add_option("--height", spec.height)
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 16))
      ->capture_default_str();
  mandel->add_option("--iters", spec.max_iters)
      ->check(CLI::Range(1, 1 << 20))
      ->capture_default_str();
  mandel->add_option("--png", png_path, "output image")->capture_default_str();

  int64_t matmul_n = 0;
  auto* mm = app.add_subcommand("matmul", "naive, tiled and library matmul, GFLOP/s");
  mm->add_option("--n", matmul_n, "matrix size (default 4096 on a GPU, 512 on the CPU)")
      ->check(CLI::Range(int64_t{1}, kMaxMatmulSize));

  CLI11_PARSE(app, argc, argv);
  try {
    const std::string command = app.get_subcommands().front()->get_name();
    Report report("");
    if (command == "info") {
      report = run_info();
    } else {
      run.device = pick_device(device_spec);
      if (command == "vector-add") {
        report = run_vector_add(run, vector_n > 0 ? vector_n : default_vector_length(run.device));
      } else if (command == "saxpy") {
        report = run_saxpy(run, vector_n > 0 ? vector_n : default_vector_length(run.device), alpha);
      } else if (command == "mandelbrot") {
        report = run_mandelbrot(run, spec, png_path);
      } else {
        report = run_matmul(run, matmul_n > 0 ? matmul_n : default_matmul_size(run.device));
      }
    }
    report.print(std::cout, as_json);
    return report.ok() ? 0 : 1;
  } catch (const loom::Error& e) {
    std::cerr << "loom-gpu-basics: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {  // e.g. std::bad_alloc: still a message, not a crash
    std::cerr << "loom-gpu-basics: " << e.what() << "\n";
    return 2;
  }
}
