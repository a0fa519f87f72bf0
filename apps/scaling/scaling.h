// loom-scaling's measurement: data-parallel training steps of a zoo model on 1, 2, 4, ... ranks
// (one thread per GPU over NCCL, or thread ranks on the CPU), each row against loom's own
// plain model on one device, and the report written in the manner of nccl-tests.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <loom/loom.h>

namespace loom::scaling {

struct Config {
  std::string model = "seed_cnn";   // seed_cnn, classic_cnn, resnet18
  std::vector<int> world_sizes{1, 2, 4, 8};
  Device device = kCUDA;             // CUDA: rank r on cuda:r (NCCL); CPU: thread ranks
  int64_t batch_per_rank = 32;       // weak scaling: every rank's batch
  bool strong = false;               // strong: the global batch of the largest world, split
  int steps = 300;
  int warmup = 50;
  std::string precision = "tf32";    // fp32 or tf32 (cuDNN convolutions)
  bool skip_missing = false;         // a world larger than the GPUs present: a "not run" row
};

struct Row {
  int world_size = 1;
  bool ran = false;
  std::string note;                  // why not run, or "plain model" for the baseline
  int64_t global_batch = 0;
  double median_ms = 0, p10_ms = 0, p90_ms = 0;  // per step, over the timed steps
  double images_per_s = 0, speedup = 0, efficiency = 0;
};

struct Report {
  Config config;
  std::vector<Row> rows;
  int64_t parameters = 0;
  std::vector<dist::BucketInfo> buckets;  // the layout of the largest world that ran
};

// Throws loom::Error naming both numbers when a world needs more GPUs than are present,
// unless config.skip_missing.
Report run(const Config& config);

// The nccl-tests-style text ('#' setup lines, one row per world size) and the same as JSON.
std::string report_text(const Report& report);
std::string report_json(const Report& report);

}  // namespace loom::scaling
