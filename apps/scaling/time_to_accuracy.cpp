// Time to accuracy (time_to_accuracy.h): loom-catdog's training per world size, with a callback
// that notes the wall time and the validation accuracy at each epoch's end.
#include "time_to_accuracy.h"

#include <chrono>
#include <filesystem>

#include "catdog/commands.h"

namespace loom::scaling {

namespace {

// Rank 0's wall clock at each epoch end, from the start of training (data loading excluded:
// it is the same for every world size).
class EpochClock : public train::Callback {
 public:
  void on_train_begin(train::TrainContext& ctx) override {
    if (ctx.rank == 0) start_ = std::chrono::steady_clock::now();
  }
  void on_epoch_end(train::TrainContext& ctx, const train::EpochMetrics& metrics) override {
    if (ctx.rank != 0) return;
    seconds.push_back(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count());
    const auto it = metrics.find("val_accuracy");
    accuracy.push_back(it != metrics.end() ? it->second : 0.0);
  }
  std::vector<double> seconds, accuracy;

 private:
  std::chrono::steady_clock::time_point start_;
};

}  // namespace

std::string catdog_step_mode(const Config& c, int world_size) {
  return c.placement != Placement::Cpu && world_size == 1 ? "graph" : "eager";
}

void check_accuracy_config(const Config& c, const AccuracyConfig& a) {
  LOOM_CHECK(c.data != "synthetic",
             "--time-to-accuracy trains on photographs: give --data DIR "
             "(a folder with train/ and val/ class folders)");
  LOOM_CHECK(a.target > 0.0 && a.target <= 1.0,
             "--time-to-accuracy: the target is an accuracy in (0, 1], got ", a.target);
  LOOM_CHECK(a.epochs >= 1, "--tta-epochs must be at least 1, got ", a.epochs);
  LOOM_CHECK(!a.out_dir.empty(), "--time-to-accuracy needs --out DIR for its models and logs");
}

AccuracyRun run_time_to_accuracy(const Config& c, const AccuracyConfig& a) {
  check_accuracy_config(c, a);
  AccuracyRun run;
  run.target = a.target;
  const double lr = catdog::TrainArgs().lr;
  run.lr_rule = detail::concat(
      "linear: lr = ", lr, " x ranks (Goyal et al. 2017: the global batch is ranks x ",
      c.batch_per_rank, "), reached from ", lr, " by a linear warmup over ", a.warmup_epochs,
      " epochs, iteration by iteration; applied to Adam unchanged (betas 0.9/0.999)");
  for (int n : c.world_sizes) {
    AccuracyRow row;
    row.world_size = n;
    row.global_batch = c.batch_per_rank * n;
    row.epochs = a.epochs;
    if (c.placement == Placement::Gpus && n > cuda_device_count()) {
      LOOM_CHECK(c.skip_missing, "--gpus ", n, ": this machine has ", cuda_device_count(), " GPU",
                 cuda_device_count() == 1 ? "" : "s",
                 " (--skip-missing reports such rows as not run)");
      row.note =
          detail::concat("not run: needs ", n, " GPUs, this machine has ", cuda_device_count());
      run.rows.push_back(row);
      continue;
    }
    catdog::TrainArgs t;
    t.data = c.data;
    t.model = c.model;
    t.epochs = a.epochs;
    t.batch_size = c.batch_per_rank;
    t.workers = c.workers;
    t.channels_last = c.channels_last;
    t.limit = a.limit;
    t.dist_timeout = c.dist_timeout;
    t.graph = "auto";  // loom-catdog's default (catdog_step_mode says what it does)
    row.step_mode = catdog_step_mode(c, n);
    t.scale_lr = "linear";
    t.warmup_epochs = a.warmup_epochs;
    row.lr = t.lr * n;  // the linear rule's peak, as loom-catdog's make_lr_plan sets it
    const std::string stem =
        (std::filesystem::path(a.out_dir) / detail::concat("tta_world", n)).string();
    t.out = stem + ".safetensors";
    t.save = "last";  // written once, after the clock: the best epoch's rewrites would be timed
    t.metrics = stem + ".metrics.csv";
    if (c.placement == Placement::Gpus) {
      t.device = "cuda";
      if (n > 1) t.gpus = n;
    } else {
      t.device = c.placement == Placement::Cpu ? "cpu" : "cuda:0";
      if (n > 1) {
        t.world_size = n;
        t.backend = "threads";
      }
    }
    auto clock = std::make_shared<EpochClock>();
    t.callbacks.push_back(clock);
    catdog::run_train(t);  // its progress lines are the run's log
    LOOM_CHECK(!clock->accuracy.empty(), "--time-to-accuracy: the world of ", n,
               " trained no epoch");
    row.ran = true;
    row.final_accuracy = clock->accuracy.back();
    row.seconds = clock->seconds.back();
    for (size_t e = 0; e < clock->accuracy.size(); ++e) {
      if (clock->accuracy[e] >= a.target) {
        row.epochs_to_target = static_cast<int64_t>(e) + 1;
        row.seconds_to_target = clock->seconds[e];
        break;
      }
    }
    const int gpus = gpus_used(c, n);
    if (c.price_per_gpu_hour && row.seconds_to_target && gpus > 0) {
      row.usd_to_target = *c.price_per_gpu_hour * gpus * *row.seconds_to_target / 3600.0;
    }
    run.rows.push_back(row);
  }
  return run;
}

}  // namespace loom::scaling
