// loom-scaling --time-to-accuracy: "does N GPUs train my model faster?" The cat/dog CNN is
// trained on the photographs at each world size exactly as `loom-catdog train` trains it (the
// global batch grows with the ranks, Goyal et al.'s linear learning-rate scaling with a
// warmup), and each row reports when the validation accuracy first reached the target.
#pragma once

#include <string>

#include "scaling.h"

namespace loom::scaling {

struct AccuracyConfig {
  double target = 0.75;
  int64_t epochs = 25;
  int64_t warmup_epochs = 5;  // of the linear scaling rule (no warmup for one rank)
  int64_t limit = 0;          // only the first N training photographs (0: all), for quick checks
  std::string out_dir;        // the models and metrics logs, tta_world<N>.*
};

// The step mode of a time-to-accuracy row: loom-catdog's default --graph auto captures the
// steps of one CUDA rank ("graph") and runs several ranks, and the CPU, eagerly ("eager").
std::string catdog_step_mode(const Config& config, int world_size);

// Throws the errors of run_time_to_accuracy that need no training, before minutes of measuring.
void check_accuracy_config(const Config& config, const AccuracyConfig& accuracy);

// Uses config.data (a folder, not "synthetic"), model, world_sizes, placement, batch_per_rank,
// workers, channels_last, price_per_gpu_hour and skip_missing. Ranks are threads (one per GPU,
// or sharing cuda:0, or on the CPU); the steps run as loom-catdog's default --graph runs them,
// whatever --graph says for the step timing, since the question is how fast users train.
AccuracyRun run_time_to_accuracy(const Config& config, const AccuracyConfig& accuracy);

}  // namespace loom::scaling
