// The subcommands of loom-gpu-basics as library functions (main.cpp only parses flags): each
// runs on the chosen device, checks its result against an independent CPU computation and
// returns a Report. Bad arguments throw loom::Error before anything is allocated.
#pragma once

#include <loom/loom.h>

#include <string>

#include "mandelbrot_point.h"
#include "report.h"
#include "timing.h"

namespace loom::gpu_basics {

struct RunOptions {
  Device device = kCPU;
  TimingOptions timing;
  uint64_t seed = 0;
};

// Sizes when --n is not given: the targets on a GPU, smaller ones that finish in
// seconds on a CPU.
int64_t default_vector_length(Device device);  // 2^28 on a GPU, 2^24 on the CPU
int64_t default_matmul_size(Device device);    // 4096 on a GPU, 512 on the CPU
constexpr int64_t kMaxVectorLength = int64_t{1} << 34;
constexpr int64_t kMaxMatmulSize = 1 << 16;

Report run_info();
Report run_vector_add(const RunOptions& options, int64_t n);
Report run_saxpy(const RunOptions& options, int64_t n, float alpha);
Report run_mandelbrot(const RunOptions& options, const MandelbrotSpec& spec,
                      const std::string& png_path);
Report run_matmul(const RunOptions& options, int64_t n);

// The '#' lines every measuring subcommand starts with: device, build, timing method.
void describe_run(Report& report, const RunOptions& options);

}  // namespace loom::gpu_basics
