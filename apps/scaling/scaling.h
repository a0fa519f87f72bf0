// loom-scaling's measurement: data-parallel training steps of a zoo model on 1, 2, 4, ... ranks
// (one rank per GPU over NCCL as threads or processes, thread ranks sharing one GPU, or thread
// ranks on the CPU) and, with --pipeline, the same model cut into stages (model parallelism) at
// the same global batch; each row against loom's own plain model on one device, and the report
// in the manner of nccl-tests. The JSON schema is in apps/scaling/README.md.
#pragma once

#include <loom/loom.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace loom::scaling {

// Where the ranks run.
enum class Placement {
  Gpus,    // rank r on cuda:r (NCCL): the multi-GPU experiment
  OneGpu,  // every rank on cuda:0 (threads backend): shows N ranks work, never a speedup
  Cpu,     // thread ranks on the CPU (threads backend), or processes (TCP)
};
const char* placement_name(Placement p);  // "gpus", "one_gpu", "cpu"

struct Config {
  std::string model = "seed_cnn";  // seed_cnn, classic_cnn, resnet18
  std::vector<int> world_sizes{1, 2, 4, 8};
  Placement placement = Placement::Gpus;
  int64_t batch_per_rank = 32;  // weak scaling: every rank's batch
  bool strong = false;          // strong: the global batch of the largest world, split
  int steps = 300;
  int warmup = 50;
  // The plain model's warm-up also lasts at least this long (an idle GPU takes a moment to
  // reach its clocks; 50 steps of a small CNN are 25 ms); every DDP world then warms up for
  // as many steps as the plain model took, all ranks alike.
  double warmup_seconds = 2.0;
  std::string precision = "tf32";  // fp32 or tf32 (cuDNN convolutions)
  bool channels_last =
      false;  // the images fed channels-last (NHWC), as loom-catdog's --channels-last
  std::string data = "synthetic";  // or a folder of photographs (train/ and val/, or class folders)
  int workers = 2;                 // loader threads per rank with a folder
  // threads: dist::spawn; processes: process_launch.h, as torchrun starts them; auto (the
  // default): processes for one rank per GPU with any world above 1, threads otherwise
  // (launch_for). A world of one always runs in this process, timed beside the plain model.
  std::string launch = "auto";
  // Each rank's step as one CUDA graph replay (train::CapturedStep, DDP's NCCL all-reduces
  // inside): on, off, or auto (the default: wherever it can be, i.e. on CUDA with no group or an
  // NCCL one; the plain baseline too, so that both sides of a comparison run alike).
  std::string graph = "auto";
  // How to start this program again as one rank process (--launch processes): argv, the
  // program's absolute path first.
  std::vector<std::string> self_command;
  std::string scratch_dir = "/tmp";  // for the rank processes' result files
  int rank_timeout_s = 1800;         // a rank process still running after this is stopped
  bool skip_missing = false;         // a world larger than the GPUs present: a "not run" row
  std::optional<double> price_per_gpu_hour;
  // Pipeline rows (dist::PipelineParallel), one per stage count: stage s on cuda:s (Gpus), all
  // on cuda:0 (OneGpu) or all on the CPU, over the global batch of the DDP row of as many
  // ranks, cut into micro_batches (unset: 2 x stages, so that under weak scaling every row's
  // micro-batch is half a rank's batch whatever the stage count, and the schedule's bubble
  // (S - 1) / (3S - 1) stays under 1/3).
  std::vector<int> pipeline_stages;
  std::optional<int> micro_batches;
  std::string pipeline_schedule = "gpipe";  // or 1f1b
  // --dist-timeout: the group timeout in seconds (empty: $LOOM_DIST_TIMEOUT, else 600 s).
  std::string dist_timeout;
};

// The options of every group the run makes: the timeout of --dist-timeout or LOOM_DIST_TIMEOUT.
dist::GroupOptions group_options(const Config& config);

struct Row {
  int world_size = 1;
  bool ran = false;
  std::string note;                 // why not run, or a label
  std::string step_mode = "eager";  // "graph": each step one CUDA graph replay; "eager": op by op
  std::string
      launch;  // "in_process" (loom-scaling's own thread), "threads", "processes", a launcher
  int64_t global_batch = 0;
  double median_ms = 0, p10_ms = 0, p90_ms = 0;  // per step, over the timed steps
  double images_per_s = 0, speedup = 0, efficiency = 0;
  std::optional<double> comm_ms;  // the step's all-reduces alone (DDP rows)
  // DDP rows. Eager: the median stall at the end of backward (DDP's events); graph: the DDP
  // step's median minus the plain model's (a replay cannot time its stall; see exposed_measure).
  std::optional<double> exposed_comm_ms;
  std::string exposed_measure;         // "stall" or "ddp_minus_plain"; "" without exposed_comm_ms
  std::vector<double> rank_median_ms;  // every rank's median step, by rank (DDP rows)
  std::optional<dist::DdpStepStats> ddp_step;  // rank 0's last timed backward (eager DDP rows)
  double loader_wait_ms = 0;                   // median host wait for a batch
  int differing_ranks = 0;
  std::optional<double> usd_per_million_images;
};

// The time-to-accuracy experiment (time_to_accuracy.h) of the same report.
struct AccuracyRow {
  int world_size = 1;
  bool ran = false;
  std::string note;  // why not run
  int64_t global_batch = 0;
  std::string step_mode =
      "eager";    // as loom-catdog's default --graph auto runs it (catdog_step_mode)
  double lr = 0;  // the peak rate after the warmup
  int64_t epochs = 0;
  std::optional<int64_t>
      epochs_to_target;  // the first epoch (from 1) whose val accuracy reached it
  std::optional<double> seconds_to_target;  // wall seconds from the start of training to then
  double final_accuracy = 0, seconds = 0;
  std::optional<double> usd_to_target;
};
struct AccuracyRun {
  double target = 0;
  std::string lr_rule;
  std::vector<AccuracyRow> rows;
};

// A pipeline row: the timing columns of a DDP row (world_size = stages; no all-reduce, so no
// comm_ms or exposed_comm_ms; differing_ranks 0: one copy of the model), and the pipeline's own.
struct PipelineRow {
  Row row;
  int stages = 0;
  int micro_batches = 0;
  std::string schedule;                     // "gpipe" or "1f1b"
  double bubble = 0;                        // measured: PipelineTiming::bubble() of one extra step
  double theoretical_bubble = 0;            // (stages - 1) / (micro_batches + stages - 1)
  std::vector<dist::PipelineStage> layout;  // each stage's layers, device and parameters
  std::vector<double> stage_busy_ms;        // each stage's forwards + backwards in that step
};

// The micro-batches of a pipeline of `stages`: config.micro_batches, or 2 x stages.
int micro_batches_for(const Config& config, int stages);
// The images per step of a row of n ranks or stages: n x batch_per_rank (weak), or the largest
// world's global batch (strong).
int64_t global_batch_for(const Config& config, int n);

struct Report {
  Config config;
  Row baseline;                            // the plain model, no DDP wrapper, on one device
  std::vector<Row> rows;                   // DDP, one per world size
  std::vector<PipelineRow> pipeline_rows;  // one per --pipeline stage count
  int64_t parameters = 0;
  std::vector<dist::BucketInfo> buckets;  // the layout of the largest world that ran
  std::optional<AccuracyRun> accuracy;
  std::string date;  // "2026-12-01 10:00 UTC"
};

// --launch auto resolved: processes for one rank per GPU with a world above 1, else threads;
// any other value as given.
std::string launch_for(const Config& config);

// The GPUs a row uses (one for every rank sharing cuda:0), 0 on the CPU.
int gpus_used(const Config& config, int world_size);

// Throws loom::Error naming both numbers when a world or a pipeline needs more GPUs than are
// present, unless config.skip_missing; and for a pipeline of fewer than 2 stages, of more
// stages than the model has layers, or of more micro-batches than its global batch has images.
Report run(const Config& config);

// Under a launcher (mpirun, srun, torchrun's variables) this process is one rank of a job that
// may span nodes: the report has the plain baseline (rank 0 measures it while the others wait)
// and one DDP row for the job's size, rank 0's; the other ranks get an empty optional.
std::optional<Report> run_in_job(const Config& config);

// The body of one rank process of --launch processes: joins the job its launcher's variables
// describe, runs this rank's share, and on rank 0 writes the result (atomically) to
// result_path.
void run_as_rank(const Config& config, int world_size, const std::string& result_path);

// The nccl-tests-style text ('#' setup lines, one row per world size, then the pipeline rows
// in their own block), JSON and CSV.
std::string report_text(const Report& report);
std::string report_json(const Report& report);
std::string report_csv(const Report& report);

}  // namespace loom::scaling
