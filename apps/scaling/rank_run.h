// One rank's share of a loom-scaling measurement: the training steps of the zoo model (plain,
// or wrapped in DistributedDataParallel over the rank's group), timed, then the step's bucket
// all-reduces alone and a hash of the parameters compared across the ranks; and the same steps
// of the model cut into pipeline stages (one process, no group).
#pragma once

#include <loom/loom.h>

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "vision/image_set.h"

namespace loom::scaling {

struct Config;

// The training images when they come from a folder: decoded once per process and read by every
// rank's loader (a const dataset is safe to share between threads).
struct ImageSource {
  std::string train_dir;                // empty: synthetic images
  std::optional<vision::ImageSet> set;  // decoded once, 64x64
};
// Reads `data` ("synthetic" or a folder with train/ and val/, or class folders); throws naming
// the folder when it holds no usable images.
ImageSource load_images(const std::string& data, int threads);

struct RankResult {
  std::vector<double> step_ms;          // each timed step
  std::vector<double> exposed_comm_ms;  // each timed step's stall for all-reduces (DDP only)
  std::vector<double> loader_wait_ms;   // each timed step's host wait for its batch
  std::optional<double> comm_ms;        // the step's bucket all-reduces alone (DDP only)
  int differing_ranks = 0;              // ranks whose parameter hash is not rank 0's
  int64_t parameters = 0;
  std::vector<dist::BucketInfo> buckets;
  int warmup_steps = 0;             // the untimed steps it ran first
  std::string step_mode = "eager";  // "graph": every step through train::CapturedStep
  int timed_eager_steps = 0;        // graph mode: timed steps that ran eagerly instead (0 expected)
  std::vector<double> rank_median_ms;  // every rank's median step, by rank (DDP only)
  std::optional<dist::DdpStepStats>
      ddp_step;  // the last timed backward's bucket launches (eager DDP)
  // A pipeline's (run_pipeline; never from a rank process, so not in rank_result_json): its
  // stages, and one extra step's timing with every stage op timed.
  std::vector<dist::PipelineStage> stages;
  std::optional<dist::PipelineTiming> stage_timing;
};

// The zoo model of --model; throws naming the name when it is none of them.
std::shared_ptr<nn::Sequential> make_model(const std::string& name);

// A pipeline to time: the stages' devices (one per stage), micro-batches and schedule.
struct PipelineSpec {
  std::vector<Device> devices;
  int micro_batches = 1;
  dist::PipelineSchedule schedule = dist::PipelineSchedule::GPipe;
};

// The nearest-rank quantile of sorted times (q in [0, 1]), and the median of any (0 for none):
// the one definition every column of the report uses.
double quantile(const std::vector<double>& sorted, double q);
double median(std::vector<double> v);

// Runs on every rank of `group` (null: the plain model alone on `device`); every rank returns
// the same differing_ranks and rank_median_ms, rank 0's times are the row's (every rank waits
// for the others each step). The plain model warms up for config.warmup steps and at least
// config.warmup_seconds; a group's ranks for exactly config.warmup steps (they must take the
// same number), and in graph mode for at least 2 (the eager step and the capture).
RankResult run_rank(const Config& config, const ImageSource& images, int64_t batch, Device device,
                    const dist::GroupPtr& group);

// The model cut into spec.devices.size() stages (balanced by parameter count), trained on
// `batch` images a step (the batch on the first stage's device), warmed up for exactly
// config.warmup steps and timed as run_rank times a rank: CUDA events on the first device's
// compute stream, which the end of every step waits for on every stage (the host clock on the
// CPU); then one more step with every stage op timed, for the bubble.
RankResult run_pipeline(const Config& config, const ImageSource& images, int64_t batch,
                        const PipelineSpec& spec);

// How many ranks' parameters (an FNV-1a hash of their bytes) differ from rank 0's; every rank
// gets the count.
int count_differing_ranks(dist::ProcessGroup& group, nn::Module& model);

// The plain model and the DDP one on the same rank, timed in alternating blocks (plain, DDP,
// plain, ...) so that whatever the machine does meanwhile (clocks, other tenants) falls on both
// alike: how the one-rank row is measured against its baseline.
std::pair<RankResult, RankResult> run_rank_beside_plain(const Config& config,
                                                        const ImageSource& images, int64_t batch,
                                                        Device device, const dist::GroupPtr& group);

// DDP's bucket launches of a backward as report.json and the rank processes write them:
// {"buckets", "launched_during_backward", "launched_at_end", "held_back"}.
nlohmann::json ddp_step_json(const dist::DdpStepStats& stats);
dist::DdpStepStats ddp_step_from_json(const nlohmann::json& j);

// What a rank process hands back to loom-scaling: rank 0's RankResult as JSON.
std::string rank_result_json(const RankResult& result);
RankResult rank_result_from_json(const std::string& text, const std::string& source);

}  // namespace loom::scaling
