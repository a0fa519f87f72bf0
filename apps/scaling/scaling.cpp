// loom-scaling's runs (scaling.h): the plain model on one device, then DDP over each world, its
// ranks as threads (dist::spawn) or as processes (process_launch.h), then each pipeline in this
// thread.
#include "scaling.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <mutex>
#include <tuple>

#include "process_launch.h"
#include "rank_run.h"
#include "row_figures.h"

namespace loom::scaling {

namespace {

int64_t rank_batch(const Config& c, int world) {
  if (!c.strong) return c.batch_per_rank;
  const int64_t global = global_batch_for(c, world);
  LOOM_CHECK(global % world == 0, "--scaling strong: the global batch ", global,
             " does not split evenly over ", world, " ranks");
  return global / world;
}

Device base_device(const Config& c) {
  return c.placement == Placement::Cpu ? kCPU : cuda_device(0);
}

// Every --pipeline stage count, before anything is measured.
void check_pipelines(const Config& c) {
  LOOM_CHECK(c.pipeline_schedule == "gpipe" || c.pipeline_schedule == "1f1b",
             "--pipeline-schedule: expected gpipe or 1f1b, got '",
             c.pipeline_schedule.substr(0, 32), "'");
  LOOM_CHECK(!c.micro_batches || *c.micro_batches >= 1, "--micro-batches must be at least 1, got ",
             c.micro_batches.value_or(0));
  if (c.pipeline_stages.empty()) return;
  int64_t layers = 0;
  {
    Generator scratch(1);  // only the layer count: the run's own random streams stay as they were
    GeneratorGuard guard(scratch);
    layers = static_cast<int64_t>(make_model(c.model)->size());
  }
  for (int n : c.pipeline_stages) {
    LOOM_CHECK(n >= 2, "--pipeline ", n,
               ": a pipeline needs at least 2 stages (the plain row is the model on one ",
               "device)");
    LOOM_CHECK(n <= layers, "--pipeline ", n, ": ", c.model, " has ", layers,
               " layers and each stage needs at least one");
    const int m = micro_batches_for(c, n);
    const int64_t global = global_batch_for(c, n);
    LOOM_CHECK(m <= global, "--pipeline ", n, ": ", m, " micro-batches",
               c.micro_batches ? "" : " (the default, 2 x stages)", " for a global batch of ",
               global, " images; a micro-batch needs at least one image (--micro-batches at most ",
               global, ")");
    if (c.placement == Placement::Gpus && !c.skip_missing) {
      LOOM_CHECK(n <= cuda_device_count(), "--pipeline ", n, ": ", n, " stages need ", n,
                 " GPUs, this machine has ", cuda_device_count(), " GPU",
                 cuda_device_count() == 1 ? "" : "s",
                 " (--skip-missing reports such rows as not run)");
    }
  }
}

// --graph against the placement, before anything is measured (captures_steps decides each rank).
void check_graph(const Config& c) {
  LOOM_CHECK(c.graph == "auto" || c.graph == "on" || c.graph == "off",
             "--graph: expected auto, on or off, got '", c.graph.substr(0, 32), "'");
  if (c.graph != "on") return;
  LOOM_CHECK(c.placement != Placement::Cpu,
             "--graph on: CUDA graphs need --device cuda; on the CPU every step is eager");
  const bool shared =
      c.placement == Placement::OneGpu &&
      std::any_of(c.world_sizes.begin(), c.world_sizes.end(), [](int n) { return n > 1; });
  LOOM_CHECK(
      !shared,
      "--graph on: ranks sharing cuda:0 (--world-sizes) all-reduce over the threads backend, "
      "which a CUDA graph cannot hold; use --graph auto (those rows then run eagerly) or off");
  LOOM_CHECK(
      c.pipeline_stages.empty(),
      "--graph on and --pipeline: a pipeline's stages run op by op on their own "
      "streams and are not captured; use --graph auto (the pipeline rows then run eagerly) or off");
}

void check_config(const Config& c) {
  LOOM_CHECK(!c.world_sizes.empty(), "loom-scaling: no world sizes given");
  group_options(c);  // a bad --dist-timeout or LOOM_DIST_TIMEOUT, before anything runs
  LOOM_CHECK(c.steps >= 1 && c.warmup >= 0,
             "loom-scaling: --steps must be at least 1 and --warmup at least 0");
  LOOM_CHECK(std::isfinite(c.warmup_seconds) && c.warmup_seconds >= 0,
             "--warmup-seconds must be a number >= 0");
  LOOM_CHECK(c.batch_per_rank >= 1, "--batch-per-gpu must be at least 1, got ", c.batch_per_rank);
  LOOM_CHECK(c.precision == "fp32" || c.precision == "tf32" || c.precision == "bf16",
             "--precision: expected fp32, tf32 or bf16, got '", c.precision.substr(0, 32), "'");
  LOOM_CHECK(
      c.precision != "bf16" || c.pipeline_stages.empty(),
      "--precision bf16 does not apply to --pipeline rows yet (their stages hand over float32)");
  LOOM_CHECK(c.launch == "auto" || c.launch == "threads" || c.launch == "processes",
             "--launch: expected auto, threads or processes, got '", c.launch.substr(0, 32), "'");
  LOOM_CHECK(!(c.launch == "processes" && c.placement == Placement::OneGpu),
             "--launch processes puts each rank on its own GPU; ranks sharing one GPU are threads");
  check_graph(c);
  LOOM_CHECK(c.placement == Placement::Cpu || built_with_cuda(),
             "--device cuda: loom-scaling was built without CUDA");
  LOOM_CHECK(
      !c.price_per_gpu_hour || (std::isfinite(*c.price_per_gpu_hour) && *c.price_per_gpu_hour > 0),
      "--price-per-gpu-hour must be a positive number");
  for (int n : c.world_sizes) {
    LOOM_CHECK(n >= 1, "loom-scaling: a world size must be at least 1, got ", n);
    rank_batch(c, n);  // strong scaling: every world must split the batch, known before measuring
    // Thread ranks (Gpus places one per GPU, bounded above): what spawn would refuse later.
    LOOM_CHECK(launch_for(c) == "processes" || c.placement == Placement::Gpus ||
                   n <= dist::max_thread_ranks(),
               "loom-scaling: a world size of ", n,
               " is more thread ranks than this machine can hold (at most ",
               dist::max_thread_ranks(), ", 8 per core); use --launch processes for more");
    if (c.placement == Placement::Gpus && !c.skip_missing) {
      LOOM_CHECK(n <= cuda_device_count(), "--gpus ", n, ": this machine has ", cuda_device_count(),
                 " GPU", cuda_device_count() == 1 ? "" : "s",
                 " (--skip-missing reports such rows as not run)");
    }
  }
  LOOM_CHECK(launch_for(c) != "processes" || !c.self_command.empty(),
             "--launch processes: no program to start the ranks with");
  check_pipelines(c);
}

// Rank 0's result of a world of n DDP ranks.
RankResult run_world(const Config& c, const ImageSource& images, int n) {
  const int64_t batch = rank_batch(c, n);
  if (c.launch == "processes") {
    const std::string path = (std::filesystem::path(c.scratch_dir) /
                              detail::concat("loom-scaling-", getpid(), "-world", n, ".json"))
                                 .string();
    std::vector<std::string> command = c.self_command;
    command.insert(command.end(), {"--rank-warmup", std::to_string(c.warmup)});
    return rank_result_from_json(run_rank_processes(command, n, path, c.rank_timeout_s), path);
  }
  RankResult result;
  std::mutex mutex;
  dist::SpawnOptions options;
  options.group = group_options(c);
  if (c.placement == Placement::OneGpu) options.backend = dist::Backend::Threads;
  dist::spawn(
      n, base_device(c),
      [&](dist::ProcessGroup& g) {
        RankResult mine = run_rank(c, images, batch, g.device(), g.shared_from_this());
        if (g.rank() != 0) return;
        std::lock_guard<std::mutex> lock(mutex);
        result = std::move(mine);
      },
      options);
  return result;
}

// The plain model and DDP over a group of one, in this thread and on this stream for a GPU (as
// the plain model alone would run), timed in alternating blocks: the row is DDP's own cost.
std::pair<RankResult, RankResult> world_of_one_beside_plain(const Config& c,
                                                            const ImageSource& images,
                                                            int64_t batch) {
  if (c.placement != Placement::Cpu) {
    const dist::GroupPtr group =
        dist::make_nccl_group(dist::nccl_unique_id(), 0, 1, 0, group_options(c));
    return run_rank_beside_plain(c, images, batch, cuda_device(0), group);
  }
  std::pair<RankResult, RankResult> results;
  dist::SpawnOptions options;
  options.group = group_options(c);
  dist::spawn(
      1, kCPU,
      [&](dist::ProcessGroup& g) {
        results = run_rank_beside_plain(c, images, batch, kCPU, g.shared_from_this());
      },
      options);
  return results;
}

// The pipeline row of n stages: the model cut over n devices, the global batch of n DDP ranks.
PipelineRow pipeline_row(const Config& c, const ImageSource& images, const Row& base, int n) {
  PipelineRow p;
  p.stages = n;
  p.micro_batches = micro_batches_for(c, n);
  p.schedule = c.pipeline_schedule;
  p.theoretical_bubble = dist::theoretical_bubble(n, p.micro_batches);
  Row& row = p.row;
  row.world_size = n;
  row.global_batch = global_batch_for(c, n);
  if (c.placement == Placement::Gpus && n > cuda_device_count()) {
    row.note =
        detail::concat("not run: needs ", n, " GPUs, this machine has ", cuda_device_count());
    return p;
  }
  if (c.placement == Placement::OneGpu) row.note = "stages share one GPU: not a multi-GPU speedup";
  PipelineSpec spec;
  for (int s = 0; s < n; ++s)
    spec.devices.push_back(c.placement == Placement::Gpus ? cuda_device(s) : base_device(c));
  spec.micro_batches = p.micro_batches;
  spec.schedule = c.pipeline_schedule == "1f1b" ? dist::PipelineSchedule::OneFOneB
                                                : dist::PipelineSchedule::GPipe;
  row.launch = "in_process";
  const RankResult r = run_pipeline(c, images, row.global_batch, spec);
  fill_row(row, r, c);
  row.speedup = row.images_per_s / base.images_per_s;
  row.efficiency = row.speedup / n;
  p.layout = r.stages;
  LOOM_ASSERT(r.stage_timing.has_value());
  p.bubble = r.stage_timing->bubble();
  p.stage_busy_ms = r.stage_timing->busy_ms;
  return p;
}

std::string utc_now() {
  const std::time_t t = std::time(nullptr);
  char text[32];
  std::strftime(text, sizeof(text), "%Y-%m-%d %H:%M UTC", std::gmtime(&t));
  return text;
}

}  // namespace

const char* placement_name(Placement p) {
  switch (p) {
    case Placement::Gpus:
      return "gpus";
    case Placement::OneGpu:
      return "one_gpu";
    case Placement::Cpu:
      return "cpu";
  }
  return "?";
}

std::string launch_for(const Config& c) {
  if (c.launch != "auto") return c.launch;
  const bool several =
      std::any_of(c.world_sizes.begin(), c.world_sizes.end(), [](int n) { return n > 1; });
  return c.placement == Placement::Gpus && several ? "processes" : "threads";
}

dist::GroupOptions group_options(const Config& c) {
  dist::GroupOptions options;
  options.timeout = dist::resolve_timeout(c.dist_timeout, "--dist-timeout", options.timeout);
  return options;
}

int micro_batches_for(const Config& c, int stages) { return c.micro_batches.value_or(2 * stages); }

int64_t global_batch_for(const Config& c, int n) {
  if (!c.strong) return c.batch_per_rank * n;
  return c.batch_per_rank * *std::max_element(c.world_sizes.begin(), c.world_sizes.end());
}

int gpus_used(const Config& c, int world_size) {
  switch (c.placement) {
    case Placement::Gpus:
      return world_size;
    case Placement::OneGpu:
      return 1;
    case Placement::Cpu:
      return 0;
  }
  return 0;
}

Report run(const Config& config) {
  Config c = config;
  c.launch = launch_for(config);
  check_config(c);
  ConvTf32Scope tf32(c.precision != "fp32");  // bf16: float32 layers' convolutions too
  const ImageSource images = load_images(c.data, std::max(c.workers, 1));
  Report report;
  report.config = c;
  report.date = utc_now();

  // The baseline: the plain model, no wrapper, on one device, with the one-rank batch; with a
  // world of one asked for, timed in blocks alternating with that world's DDP steps.
  Row& base = report.baseline;
  base.world_size = 1;
  base.note = "plain model";
  base.global_batch = rank_batch(c, 1);
  base.launch = "in_process";
  std::optional<RankResult> one_rank;
  // A world of one needs no launch: it runs here, beside the plain model, whatever --launch says.
  const bool paired =
      std::find(c.world_sizes.begin(), c.world_sizes.end(), 1) != c.world_sizes.end();
  RankResult plain;
  if (paired) {
    std::tie(plain, one_rank) = world_of_one_beside_plain(c, images, base.global_batch);
  } else {
    plain = run_rank(c, images, base.global_batch, base_device(c), nullptr);
  }
  report.parameters = plain.parameters;
  fill_row(base, plain, c);
  base.speedup = base.efficiency = 1.0;
  Config worlds = c;  // every world warms up as long as the plain model did, at least
  worlds.warmup = plain.warmup_steps;
  report.config.warmup = plain.warmup_steps;

  for (int n : c.world_sizes) {
    Row row;
    row.world_size = n;
    row.global_batch = rank_batch(c, n) * n;
    if (c.placement == Placement::Gpus && n > cuda_device_count()) {
      row.note =
          detail::concat("not run: needs ", n, " GPUs, this machine has ", cuda_device_count());
      report.rows.push_back(row);
      continue;
    }
    if (c.placement == Placement::OneGpu && n > 1)
      row.note = "ranks share one GPU: not a multi-GPU speedup";
    if (c.placement == Placement::Cpu && n > 1)
      row.note = "CPU thread ranks share its cores: not a multi-GPU speedup";
    if (n == 1 && one_rank) row.note = "timed alternating with the plain model";
    row.launch = n == 1 && one_rank ? "in_process" : c.launch;
    const RankResult r = n == 1 && one_rank ? *one_rank : run_world(worlds, images, n);
    fill_row(row, r, c);
    if (row.step_mode == "graph") set_exposed_from_plain(row, base);
    report.buckets = r.buckets;
    row.speedup = row.images_per_s / base.images_per_s;
    row.efficiency = row.speedup / n;
    report.rows.push_back(row);
  }
  // Each pipeline as the DDP rows: the same warm-up, timed steps and baseline.
  for (int n : c.pipeline_stages)
    report.pipeline_rows.push_back(pipeline_row(worlds, images, base, n));
  return report;
}

std::optional<Report> run_in_job(const Config& c) {
  check_config(c);
  ConvTf32Scope tf32(c.precision != "fp32");  // bf16: float32 layers' convolutions too
  const dist::GroupPtr group = dist::init_from_environment(base_device(c), group_options(c));
  const ImageSource images = load_images(c.data, std::max(c.workers, 1));
  const int n = group->size();
  Report report;
  report.config = c;
  report.config.world_sizes = {n};
  report.config.launch = dist::read_launch_environment().launcher;
  report.date = utc_now();
  if (group->rank() == 0) {
    Row& base = report.baseline;
    base.world_size = 1;
    base.note = "plain model, rank 0";
    base.launch = report.config.launch;
    base.global_batch = c.batch_per_rank;
    const RankResult plain = run_rank(c, images, base.global_batch, group->device(), nullptr);
    report.parameters = plain.parameters;
    report.config.warmup = plain.warmup_steps;
    fill_row(base, plain, report.config);
    base.speedup = base.efficiency = 1.0;
  }
  // The others wait for rank 0's baseline (the group's deadline applies), then warm up as long.
  const Tensor warmup = from_vector(std::vector<int64_t>{report.config.warmup}).to(group->device());
  group->broadcast(warmup, 0)->wait();
  Config job = c;
  job.warmup = static_cast<int>(warmup.to_vector<int64_t>()[0]);
  report.config.warmup = job.warmup;
  Row row;
  row.world_size = n;
  row.global_batch = c.batch_per_rank * n;
  const RankResult r = run_rank(job, images, c.batch_per_rank, group->device(), group);
  if (group->rank() != 0) return std::nullopt;
  row.launch = report.config.launch;
  fill_row(row, r, report.config);
  if (row.step_mode == "graph") set_exposed_from_plain(row, report.baseline);
  row.speedup = row.images_per_s / report.baseline.images_per_s;
  row.efficiency = row.speedup / n;
  report.buckets = r.buckets;
  report.rows.push_back(row);
  return report;
}

void run_as_rank(const Config& c, int world_size, const std::string& result_path) {
  check_config(c);
  ConvTf32Scope tf32(c.precision != "fp32");  // bf16: float32 layers' convolutions too
  const dist::GroupPtr group = dist::init_from_environment(base_device(c), group_options(c));
  LOOM_CHECK(group->size() == world_size, "loom-scaling: a rank process of a world of ", world_size,
             " joined a job of ", group->size());
  const ImageSource images = load_images(c.data, std::max(c.workers, 1));
  const RankResult r = run_rank(c, images, rank_batch(c, world_size), group->device(), group);
  if (group->rank() != 0) return;
  const std::string text = rank_result_json(r);
  // Atomically: the parent never reads half a file.
  io::write_file_atomically(result_path,
                            [&](const io::ByteSink& sink) { sink(text.data(), text.size()); });
}

}  // namespace loom::scaling
