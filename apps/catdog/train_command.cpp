// `loom-catdog train`: the seed's recipe (Adam, binary cross-entropy, Keras augmentation) on
// folders of photographs (two class folders: the seed's one-logit head; three or more: one logit
// per class and softmax cross-entropy), with the resize, weight decay and LR schedule as flags,
// with checkpoints, resume, metrics logs, early stopping and the model file of the best (or last)
// epoch (best_model.h), on one rank or several (launch_plan.h). When no data was named and none
// is found, it says what to provide and trains the same library on Fashion-MNIST instead
// (fashion_fallback.cpp).
#include <atomic>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <thread>
#include <vector>

#include "best_model.h"
#include "commands.h"
#include "data_source.h"
#include "fashion_fallback.h"
#include "launch_plan.h"
#include "lr_plan.h"
#include "output_paths.h"
#include "pipeline.h"
#include "rank_training.h"
#include "recipe.h"

namespace loom::catdog {

namespace {

// --init's value, with the model's default when it is not given: Keras' initialisers for the
// two models that reproduce Keras code, PyTorch's for resnet18.
std::string init_of(const TrainArgs& a) {
  if (!a.init.empty()) return a.init;
  return a.model == "resnet18" ? "pytorch" : "keras";
}

// The model with `outputs` logits (outputs_for_classes).
std::shared_ptr<nn::Module> build_model(const TrainArgs& a, int64_t outputs, Generator& gen) {
  LOOM_CHECK(init_of(a) == "keras" || init_of(a) == "pytorch",
             "--init: expected keras or pytorch, got \"", a.init, "\"");
  const nn::Init init = init_of(a) == "keras" ? nn::Init::Keras : nn::Init::PyTorch;
  if (a.model == "seed_cnn" || a.model == "classic_cnn") {
    LOOM_CHECK(a.image_size == 64, "--image-size ", a.image_size, ": ", a.model,
               " takes 64x64 inputs "
               "(its dense layer is sized for them); use --image-size 64 or --model resnet18");
    return a.model == "seed_cnn"
               ? std::shared_ptr<nn::Module>(nn::seed_cnn(outputs, init, &gen))
               : std::shared_ptr<nn::Module>(nn::classic_cnn(outputs, init, &gen));
  }
  LOOM_CHECK(a.model == "resnet18", "--model: expected seed_cnn, classic_cnn or resnet18, got \"",
             a.model, "\"");
  return nn::resnet18(outputs, init, &gen, a.stem_stride);
}

// --lr-schedule's value, with the model's default when it is not given.
std::string lr_schedule_of(const TrainArgs& a) {
  if (!a.lr_schedule.empty()) return a.lr_schedule;
  return a.model == "resnet18" ? "cosine" : "constant";  // resnet18's recipe decays the LR
}

// The shortest text that reads back as `v` ("0", "0.01", "5e-05"), for messages and recipes.
std::string shortest(double v) {
  char text[32];
  for (int digits = 1; digits <= 17; ++digits) {
    std::snprintf(text, sizeof(text), "%.*g", digits, v);
    if (std::strtod(text, nullptr) == v) break;
  }
  return text;
}

// --early-stopping and --min-delta as the recipe records them: "off", or "patience 4, min_delta 0".
std::string early_stopping_of(const TrainArgs& a) {
  if (a.early_stopping == 0) return "off";
  return "patience " + std::to_string(a.early_stopping) + ", min_delta " + shortest(a.min_delta);
}

// Which epochs validate: "every epoch", or "from epoch F, every N".
std::string validation_of(const TrainArgs& a) {
  if (a.validation_from == 1 && a.validation_freq == 1) return "every epoch";
  return "from epoch " + std::to_string(a.validation_from) + ", every " +
         std::to_string(a.validation_freq);
}

// The recipe fields a checkpoint must agree with to be resumed by this command. The world size
// is one: it sets the global batch, as the batch size does. Early stopping is one: it decides
// where the run ends, and so is the validation schedule: early stopping and a plateau schedule
// count validated epochs only. --save is not: it changes no step of training.
std::map<std::string, std::string> recipe(const TrainArgs& a, int world_size) {
  return {{"model", a.model},
          {"world_size", std::to_string(world_size)},
          {"lr_scaling", lr_scaling_of(a)},
          {"batch_size", std::to_string(a.batch_size)},
          {"image_size", std::to_string(a.image_size)},
          {"stem_stride", std::to_string(a.stem_stride)},
          {"drop_last", a.drop_last ? "true" : "false"},
          {"augment", a.augment},
          {"resize", a.resize},
          {"weight_decay", shortest(a.weight_decay)},
          {"lr_schedule", lr_schedule_of(a)},
          {"lr_warmup", lr_warmup_of(a, lr_schedule_of(a), world_size)},
          {"reduce_lr_on_plateau", plateau_of(a)},
          {"label_smoothing", shortest(a.label_smoothing)},
          {"clip_grad_norm", shortest(a.clip_grad_norm)},
          {"init", init_of(a)},
          {"early_stopping", early_stopping_of(a)},
          {"validation", validation_of(a)},
          {"seed", std::to_string(a.seed)},
          {"limit", std::to_string(a.limit)}};
}

// A checkpoint written before a recipe field existed was made with that field's fixed value
// then (nearest resizing, plain Adam, the model's schedule, one rank); empty for the original
// fields.
std::string value_before_the_flag(const std::string& key, const TrainArgs& a) {
  if (key == "world_size") return "1";
  if (key == "lr_scaling") return "off";
  if (key == "resize") return "nearest";
  if (key == "weight_decay") return "0";
  if (key == "lr_schedule") return a.model == "resnet18" ? "cosine" : "constant";
  if (key == "init") return a.model == "resnet18" ? "pytorch" : "keras";
  if (key == "early_stopping") return "off";
  if (key == "validation") return "every epoch";
  if (key == "stem_stride") return "1";
  if (key == "drop_last") return "false";
  if (key == "lr_warmup" || key == "reduce_lr_on_plateau") return "off";
  if (key == "label_smoothing" || key == "clip_grad_norm") return "0";
  return "";
}

// Refuses, before any data is loaded, a checkpoint whose recipe differs from this run's, or
// (--save best, on the rank that writes) whose best epoch so far is in no file. Returns the
// checkpoint's classes, for the data to be checked against once decoded.
std::vector<std::string> check_resume_recipe(const TrainArgs& args, int world_size, bool writes) {
  const io::Checkpoint ckpt = io::read_checkpoint(args.resume);
  for (const auto& [key, value] : recipe(args, world_size)) {
    const auto it = ckpt.state.extra.find(key);
    const std::string theirs =
        it != ckpt.state.extra.end() ? it->second : value_before_the_flag(key, args);
    // The checkpoint's values are untrusted text: quoted at most 80 characters of.
    const std::string shown = theirs.size() > 80 ? theirs.substr(0, 80) + "..." : theirs;
    LOOM_CHECK(theirs == value, "--resume ", args.resume, ": the checkpoint was made with ", key,
               " = ", theirs.empty() ? "(none)" : shown, ", this run has ", value);
  }
  // The run decodes at its own --image-size, but a checkpoint whose preprocessing does not fit
  // its own spec is not one loom-catdog wrote.
  const auto spec = ckpt.file.metadata.find("loom.spec");
  if (spec != ckpt.file.metadata.end())
    check_input_size(spec->second, ckpt.preprocessing, "--resume " + args.resume);
  if (writes) check_resume_best(args, ckpt);
  return ckpt.preprocessing.class_names;
}

// Checks the flags that tests and other callers of run_train may pass unchecked by CLI11.
void check_train_args(const TrainArgs& a) {
  LOOM_CHECK(a.augment == "keras" || a.augment == "torchvision" || a.augment == "strong" ||
                 a.augment == "none",
             "--augment: expected keras, torchvision, strong or none, got \"", a.augment, "\"");
  LOOM_CHECK(io::interpolation_from_name(a.resize).has_value(),
             "--resize: expected nearest, bilinear "
             "or area, got \"",
             a.resize, "\"");
  LOOM_CHECK(std::isfinite(a.weight_decay) && a.weight_decay >= 0.0,
             "--weight-decay must be a "
             "finite number >= 0, got ",
             a.weight_decay);
  LOOM_CHECK(a.lr_schedule.empty() || a.lr_schedule == "constant" || a.lr_schedule == "cosine",
             "--lr-schedule: expected constant or cosine, got \"", a.lr_schedule, "\"");
  LOOM_CHECK(a.scale_lr == "off" || a.scale_lr == "linear",
             "--scale-lr: expected off or linear, got \"", a.scale_lr, "\"");
  LOOM_CHECK(a.graph == "auto" || a.graph == "on" || a.graph == "off",
             "--graph: expected auto, on or off, got \"", a.graph, "\"");
  LOOM_CHECK(a.augment_on == "auto" || a.augment_on == "cpu" || a.augment_on == "gpu",
             "--augment-on: expected auto, cpu or gpu, got \"", a.augment_on, "\"");
  LOOM_CHECK(a.pipeline >= 0, "--pipeline must be >= 0, got ", a.pipeline);
  LOOM_CHECK(a.stem_stride == 1 || a.model == "resnet18", "--stem-stride ", a.stem_stride,
             ": only resnet18 has a stem to stride (", a.model, " has a fixed layout)");
  // Unset, it follows the batch size; set, it must fit it (only a --pipeline run uses it).
  const int micro = pipeline_micro_batches(a);
  LOOM_CHECK(micro >= 1 && micro <= a.batch_size,
             "--micro-batches must be between 1 and "
             "the batch size (",
             a.batch_size, "), got ", micro);
  LOOM_CHECK(a.pipeline_schedule == "gpipe" || a.pipeline_schedule == "1f1b",
             "--pipeline-schedule: expected gpipe or 1f1b, got \"", a.pipeline_schedule, "\"");
  LOOM_CHECK(a.warmup_epochs >= 0, "--warmup-epochs must be >= 0, got ", a.warmup_epochs);
  LOOM_CHECK(std::isfinite(a.lr) && a.lr > 0.0, "--lr must be a finite number > 0, got ", a.lr);
  LOOM_CHECK(
      std::isfinite(a.label_smoothing) && a.label_smoothing >= 0.0 && a.label_smoothing < 1.0,
      "--label-smoothing must lie in [0, 1), got ", a.label_smoothing);
  LOOM_CHECK(std::isfinite(a.clip_grad_norm) && a.clip_grad_norm >= 0.0,
             "--clip-grad-norm must be a finite number >= 0 (0: off), got ", a.clip_grad_norm);
  LOOM_CHECK(a.plateau_patience >= 0, "--plateau-patience must be >= 0, got ", a.plateau_patience);
  LOOM_CHECK(a.plateau_factor > 0.0 && a.plateau_factor < 1.0,
             "--plateau-factor must lie in (0, 1), got ", a.plateau_factor);
  // make_lr_plan refuses these too; here they fail before any data is read.
  LOOM_CHECK(!a.reduce_lr_on_plateau || lr_schedule_of(a) == "constant",
             "--reduce-lr-on-plateau sets the rate from the validation loss, so it takes "
             "--lr-schedule constant; this run has --lr-schedule ",
             lr_schedule_of(a));
  LOOM_CHECK(!a.warmup_given || a.warmup_epochs == 0 || a.scale_lr == "linear" ||
                 lr_schedule_of(a) == "cosine",
             "--warmup-epochs ", a.warmup_epochs,
             ": a warm-up leads into --lr-schedule cosine (or a --scale-lr linear run's scaled "
             "rate); this run's schedule is ",
             lr_schedule_of(a));
  LOOM_CHECK(!a.warmup_given || a.scale_lr == "linear" || lr_schedule_of(a) != "cosine" ||
                 a.warmup_epochs < a.epochs,
             "--warmup-epochs ", a.warmup_epochs, " must be fewer than --epochs (", a.epochs,
             "): the cosine decays after it");
  check_save_args(a);
}

// The seed's generator with Keras' semantics (keras) or as PyTorch users write it
// (torchvision), the Keras one with rotations of up to 15 degrees and shifts of up to a tenth of
// the image (strong, for the deeper resnet18), or no augmentation (none).
data::AugmentOptions training_transform(const std::string& name, uint64_t seed,
                                        const io::Preprocessing& prep) {
  if (name == "none") return preprocessing_transform(prep);
  if (name == "torchvision") return data::AugmentOptions::torchvision_seed(seed);
  data::AugmentOptions o = data::AugmentOptions::keras_seed(seed);
  if (name == "strong") {
    o.rotation_range = 15.0;
    o.width_shift_range = 0.1;
    o.height_shift_range = 0.1;
  }
  return o;
}

// Whether this rank's steps are captured. auto: on one CUDA rank; on: also on several ranks over
// NCCL, whose all-reduces a graph can hold (the other backends' cannot be captured).
bool capture_steps(const TrainArgs& args, const RankSetup& rank) {
  if (args.graph == "off") return false;
  const bool one_rank = rank.world_size == 1;
  const bool capturable = rank.group != nullptr && rank.group->captures_collectives();
  const bool possible = rank.device.is_cuda() && (one_rank || capturable);
  LOOM_CHECK(possible || args.graph == "auto",
             "--graph on: CUDA graphs need a CUDA device, and NCCL when there are "
             "several ranks (this run: ",
             rank.world_size, " rank", one_rank ? "" : "s", " on ", rank.device.str(),
             one_rank ? "" : ::loom::detail::concat(" over ", rank.group->backend()), ")");
  return possible && (one_rank || args.graph == "on");
}

bool augment_on_gpu(const TrainArgs& args, Device device) {
  LOOM_CHECK(args.augment_on != "gpu" || device.is_cuda(), "--augment-on gpu: the run is on ",
             device.str());
  return args.augment_on == "gpu" || (args.augment_on == "auto" && device.is_cuda());
}

// The images are decoded once, at the start: with every core, however few loader threads run.
int decode_threads(const TrainArgs& args) {
  return std::max(args.workers, static_cast<int>(std::thread::hardware_concurrency()));
}

// The command that draws the metrics chart from wherever the user is: the plotting script
// installed beside this binary (<prefix>/share/loom, so that an installed loom-catdog never
// names a source tree), else this build's source tree's, by absolute path; the CSV's absolute
// path (quoted when it holds a space); and the saved epoch (from 1) to mark, when there is one.
std::string chart_command(const std::string& metrics_csv, int64_t saved_epoch) {
  namespace fs = std::filesystem;
  std::error_code ec;
  std::vector<fs::path> candidates;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec)
    candidates.push_back(exe.parent_path().parent_path() / "share" / "loom" / "plot_metrics.py");
  candidates.push_back(fs::path(LOOM_SOURCE_DIR) / "tools" / "plot_metrics.py");
  std::string script = "tools/plot_metrics.py";
  for (const fs::path& candidate : candidates) {
    if (fs::is_regular_file(candidate, ec)) {
      script = candidate.string();
      break;
    }
  }
  const auto quoted = [](const std::string& s) {
    return s.find(' ') == std::string::npos ? s : "'" + s + "'";
  };
  const fs::path csv = fs::absolute(metrics_csv, ec);
  return "python3 " + quoted(script) + " " + quoted(ec ? metrics_csv : csv.string()) +
         (saved_epoch > 0 ? " --saved-epoch " + std::to_string(saved_epoch) : "");
}

// The precision the run computes in, for the header line: --precision on CUDA; on the CPU
// float32 whatever was asked (TF32 is a mode of CUDA's tensor cores; bf16 is refused there).
std::string effective_precision(const TrainArgs& args, const Device& device) {
  return device.is_cuda() ? args.precision : "fp32";
}

// How each training step runs, for the header line (train_step.h): "pipeline" (--pipeline:
// stages on their own streams), "captured" (replayed from a CUDA graph: capture_steps) or
// "eager" (op by op).
std::string step_mode(const TrainArgs& args, const LaunchPlan& plan) {
  if (args.pipeline > 1) return "pipeline";
  if (!plan.device.is_cuda() || args.graph == "off") return "eager";
  if (plan.world_size == 1) return "captured (CUDA graph)";
  const bool nccl = plan.backend == dist::Backend::Nccl || plan.backend == dist::Backend::Auto;
  return args.graph == "on" && nccl ? "captured (CUDA graph)" : "eager";
}

// Refuses a precision this device does not compute in, before any data is read.
void check_precision(const TrainArgs& args, const Device& device) {
  LOOM_CHECK(args.precision != "bf16" || device.is_cuda(),
             "--precision bf16: mixed precision runs on CUDA only; on the CPU (this run's device ",
             device.str(),
             ") loom computes in float32 and would train exactly as fp32 does. Use --precision "
             "fp32 on the CPU, or --device cuda");
}

// What every rank trains on, decoded once per process.
struct RunData {
  const data::Dataset* train = nullptr;
  const data::Dataset* val = nullptr;
  io::Preprocessing prep;
};

// What one rank's training ends with: every rank the same.
struct RankRun {
  train::History history;
  int64_t stopped_epoch = -1;  // where early stopping ended it (-1: it did not)
};

RankRun train_rank(const TrainArgs& args, const RunData& data, const RankSetup& rank) {
  Generator init_gen(args.seed);  // the same weights on every rank (and DDP makes sure of it)
  const int64_t logits = outputs_for_classes(data.prep.class_names.size());
  auto model = build_model(args, logits, init_gen);
  if (args.summary && rank.rank == 0) {  // one forward pass of a random sample, on the CPU
    std::cout << nn::summary(*model, {3, args.image_size, args.image_size}) << std::flush;
  }
  data::DataLoaderOptions train_options;
  train_options.batch_size = args.batch_size;
  train_options.drop_last = args.drop_last;
  train_options.seed = args.seed;
  train_options.num_workers = args.workers;
  train_options.device = rank.device;
  train_options.augment_on_device = augment_on_gpu(args, rank.device);
  train_options.augment = training_transform(args.augment, args.seed, data.prep);
  train_options.on_bad_input = on_bad_input(args.strict);
  data::DataLoader train_loader(
      *data.train, data::train_shard_options(train_options, data.train->size(), rank.shard()));
  const data::DataLoaderOptions val_options = eval_loader_options(
      data.prep, args.val_batch_size, rank.device, args.workers, on_bad_input(args.strict));
  data::DataLoader val_loader(
      *data.val, data::eval_shard_options(val_options, data.val->size(), rank.shard()));
  const int64_t shard = static_cast<int64_t>(train_loader.options().sampler->indices(0).size());
  LOOM_CHECK(!args.drop_last || shard >= args.batch_size, "--drop-last: ", shard,
             " training images", rank.world_size > 1 ? " per rank" : "", " make no full batch of ",
             args.batch_size,
             ", so no step would run; lower --batch-size or leave out --drop-last");
  const int64_t steps_per_epoch = data::batches_per_epoch(shard, train_loader.options());

  model->to(rank.device);  // before the optimizer, so its state lives there too
  if (args.channels_last) model->to(MemoryFormat::ChannelsLast);  // the weights NHWC as well
  const std::shared_ptr<dist::PipelineParallel> pipeline = pipeline_model(args, model, rank);
  LrPlan lr = make_lr_plan(args, lr_schedule_of(args), rank.world_size, steps_per_epoch,
                           model->parameters());
  optim::Optimizer& optimizer = *lr.optimizer;
  train::FitOptions fit;
  fit.epochs = args.epochs;
  fit.group = rank.group;
  fit.capture = pipeline == nullptr && capture_steps(args, rank);
  fit.autocast = args.precision == "bf16" && rank.device.is_cuda();
  fit.channels_last = args.channels_last;
  fit.flip_tta = args.tta;
  fit.validation_freq = args.validation_freq;
  fit.validation_from = args.validation_from;
  fit.stop_on_preemption = true;  // run_train installed the handlers
  if (args.clip_grad_norm > 0.0) fit.clip_grad_norm = args.clip_grad_norm;
  if (lr.stepper) fit.callbacks.push_back(lr.stepper);
  if (!args.resume.empty()) {  // every rank loads it; DDP then checks that they agree
    fit.resume = io::load_checkpoint(args.resume, *model, optimizer);
    if (rank.rank == 0) {
      std::cout << "loom-catdog: resuming " << args.resume << " at epoch " << fit.resume->epoch + 1
                << ", step " << fit.resume->step_in_epoch << "\n";
    }
  }
  const std::shared_ptr<nn::Module> trained = pipeline ? pipeline : trained_module(model, rank);

  // The callbacks write on rank 0 only.
  const TrainOutputs outputs = train_outputs(args);
  train::CheckpointOptions ckpt_options;
  ckpt_options.path = outputs.checkpoint;
  ckpt_options.every_steps = args.checkpoint_every_steps;
  ckpt_options.preprocessing = data.prep;
  ckpt_options.extra =
      recipe(args, rank.world_size);  // so that --resume can refuse a mismatched run
  set_best_model(args, fit.resume ? &fit.resume->extra : nullptr, ckpt_options);
  fit.callbacks.push_back(std::make_shared<train::CsvLogger>(outputs.metrics_csv));
  if (!args.tensorboard.empty()) {
    train::TensorBoardOptions tb;
    tb.dir = args.tensorboard;
    tb.input_shape = {3, args.image_size, args.image_size};
    fit.callbacks.push_back(std::make_shared<train::TensorBoardLogger>(tb));
  }
  fit.callbacks.push_back(std::make_shared<train::JsonLinesLogger>(outputs.metrics_jsonl));
  if (args.print_losses) fit.callbacks.push_back(loss_printer());
  fit.callbacks.push_back(std::make_shared<train::ModelCheckpoint>(ckpt_options));
  const std::shared_ptr<train::EarlyStopping> stopper = early_stopping(args);
  if (stopper) fit.callbacks.push_back(stopper);
  fit.callbacks.insert(fit.callbacks.end(), args.callbacks.begin(), args.callbacks.end());

  RankRun run;
  run.history = train::fit(*trained, loss_for_outputs(logits, args.label_smoothing), optimizer,
                           train_loader, &val_loader, fit);
  if (rank.rank == 0 && run.history.preempted_by == 0)
    save_last(args, *model, data.prep, run.history);
  if (stopper) run.stopped_epoch = stopper->stopped_epoch();
  return run;
}

// Runs loom::warm_up(device) on a thread of its own, joined when this goes out of scope. Its
// errors are left to the first op that needs the device, which reports them as its own.
class DeviceWarmUp {
 public:
  explicit DeviceWarmUp(const Device& device) {
    if (!device.is_cuda()) return;
    thread_ = std::thread([device] {
      try {
        warm_up(device);
      } catch (const Error&) {
      }
    });
  }
  ~DeviceWarmUp() {
    if (thread_.joinable()) thread_.join();
  }
  DeviceWarmUp(const DeviceWarmUp&) = delete;
  DeviceWarmUp& operator=(const DeviceWarmUp&) = delete;

 private:
  std::thread thread_;
};

}  // namespace

// --resume auto: this run's own checkpoint when one exists (a requeued or restarted job), else a
// fresh start, as Lightning's ckpt_path="last"; a scheduler's script can then always pass it.
TrainArgs with_auto_resume(const TrainArgs& given) {
  TrainArgs args = given;
  if (args.resume != "auto") return args;
  const std::string checkpoint = train_outputs(args).checkpoint;
  std::error_code ec;
  args.resume = std::filesystem::exists(checkpoint, ec) ? checkpoint : "";
  std::cout << "loom-catdog: --resume auto: "
            << (args.resume.empty() ? "no checkpoint at " + checkpoint + " yet, starting fresh"
                                    : "continuing from " + checkpoint)
            << std::endl;
  return args;
}

int run_train(const TrainArgs& given) {
  // The recipe first: its settings are then checked and recorded as the user's own would be.
  const TrainArgs args = resolve_recipe(with_auto_resume(given), parse_device(given.device));
  check_train_args(args);
  // SIGTERM and SIGUSR1 (a scheduler's preemption) from here on stop training at a step
  // boundary with a checkpoint instead of killing the process mid-write.
  const train::PreemptionScope preemption;
  const LaunchPlan plan = plan_launch(args);
  check_precision(args, plan.device);
  // Where the files are written (rank 0), before any data is looked for or read.
  if (plan.prints()) check_train_outputs(args);
  std::optional<vision::DataSplit> split;
  if (!args.data.empty()) {
    split = vision::split_of(args.data);
    LOOM_CHECK(split.has_value(), "--data ", args.data, ": not a usable data folder; ",
               layout_help());
  } else {
    split = find_default_data();
    if (!split) {
      if (plan.prints()) {
        std::cout << "loom-catdog: no cat/dog photographs found; " << layout_help() << "\n"
                  << "loom-catdog: training the same library on Fashion-MNIST instead\n";
      }
      return train_fashion_fallback(args);
    }
  }
  std::vector<std::string> resumed_classes;
  if (!args.resume.empty())
    resumed_classes = check_resume_recipe(args, plan.world_size, plan.prints());
  if (args.deterministic) set_deterministic(true);
  if (args.conv_benchmark) set_conv_benchmark(true);
  train::use_precision(*train::precision_from_name(args.precision));
  LOOM_CHECK(args.precision != "bf16" || args.pipeline <= 1,
             "--precision bf16 does not apply to --pipeline yet "
             "(its stages hand over float32); use tf32 or fp32");
  if (plan.prints()) {
    std::cout
        << recipe_summary(args, plan.device) << "loom-catdog: data " << split->root << ", model "
        << args.model
        << (args.stem_stride != 1 ? " (stem stride " + std::to_string(args.stem_stride) + ")" : "")
        << ", device " << plan.device.str() << ", augment " << args.augment << " on the "
        << (augment_on_gpu(args, plan.device) ? "GPU" : "CPU") << ", resize " << args.resize
        << ", weight decay " << shortest(args.weight_decay) << ", lr schedule "
        << lr_schedule_of(args)
        << (lr_warmup_of(args, lr_schedule_of(args), plan.world_size) != "off"
                ? " after a " + lr_warmup_of(args, lr_schedule_of(args), plan.world_size) +
                      " warm-up"
                : "")
        << (args.reduce_lr_on_plateau ? ", reduce lr on plateau (" + plateau_of(args) + ")" : "")
        << (args.label_smoothing > 0 ? ", label smoothing " + shortest(args.label_smoothing) : "")
        << (args.clip_grad_norm > 0 ? ", clip grad norm " + shortest(args.clip_grad_norm) : "")
        << ranks_summary(plan, args.batch_size) << lr_scaling_summary(args, plan.world_size)
        << ", precision " << effective_precision(args, plan.device) << ", steps "
        << step_mode(args, plan) << (args.channels_last ? ", channels-last" : "")
        << (args.tta ? ", flip TTA in validation" : "")
        << (args.drop_last ? ", each epoch's short last batch left out" : "") << "\n"
        << std::flush;  // before decoding, which takes a while: a piped log shows it now
  }

  // The first CUDA step's one-time library work while the photographs decode: on the H200 the
  // default run's first step fell from 0.19-0.30 s to 0.09-0.18 s and the data's upload from 0.10
  // to 0.03 s (the context exists by then), while decoding took 0.00-0.05 s longer.
  const DeviceWarmUp device_warm_up(plan.device);
  RunData data;
  data.prep.height = data.prep.width = args.image_size;
  data.prep.interpolation = *io::interpolation_from_name(args.resize);
  const auto decode_start = std::chrono::steady_clock::now();
  std::ostream* progress = plan.prints() ? &std::cout : nullptr;
  vision::ImageSet train_set = vision::load_image_set(
      split->train_dir, data.prep, decode_threads(args), on_bad_input(args.strict), progress);
  vision::ImageSet val_set = vision::load_image_set(split->val_dir, data.prep, decode_threads(args),
                                                    on_bad_input(args.strict), progress);
  LOOM_CHECK(train_set.classes() == val_set.classes(), split->train_dir, " and ", split->val_dir,
             " hold different class folders: ", class_list(train_set.classes()), " and ",
             class_list(val_set.classes()), "; each class needs a folder in both");
  LOOM_CHECK(train_set.classes().size() >= 2, split->train_dir,
             ": training needs at least 2 class folders, found ", class_list(train_set.classes()));
  // The model's head has one output per class (one for two): another class set cannot resume.
  LOOM_CHECK(args.resume.empty() || resumed_classes == train_set.classes(), "--resume ",
             args.resume, ": the checkpoint was trained on the classes ",
             class_list(resumed_classes), ", ", split->train_dir, " holds ",
             class_list(train_set.classes()));
  std::unique_ptr<Subset> subset;
  data.train = train_set.images.get();
  data.val = val_set.images.get();
  if (args.limit > 0) {
    subset = std::make_unique<Subset>(*train_set.images, args.limit, args.seed);
    data.train = subset.get();
  }
  data.prep.class_names = train_set.classes();
  if (plan.prints()) {
    std::cout << "loom-catdog: " << data.train->size() << " training and " << data.val->size()
              << " validation images, classes";
    for (const auto& c : train_set.classes()) std::cout << " " << c;
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - decode_start).count();
    char took[64];
    std::snprintf(took, sizeof took, " (decoded in %.2f s on %d threads)", seconds,
                  decode_threads(args));
    std::cout << took << "\n";
  }

  // Before the launch: dist::spawn and init_from_environment seed each rank's generator from
  // this one's seed and the rank (rank 0 keeps it, so one rank draws as it always did).
  manual_seed(args.seed);
  RankRun run;
  std::atomic<int> preempted_by{0};  // every rank's fit stops at the same step
  run_ranks(plan, [&](const dist::GroupPtr& group) {
    const RankSetup rank = rank_setup(plan, group);
    RankRun r = train_rank(args, data, rank);
    if (r.history.preempted_by != 0) {
      preempted_by = r.history.preempted_by;
      // Said before the group is torn down: under mpirun that waits for mpirun itself, which
      // after a SIGTERM of its own kills the ranks a second later (docs/distributed.md).
      if (rank.rank == 0 && plan.prints()) {
        const std::string checkpoint = train_outputs(args).checkpoint;
        std::cout << "loom-catdog: preempted by "
                  << (r.history.preempted_by == SIGUSR1 ? "SIGUSR1" : "SIGTERM")
                  << ": stopped at a step boundary, checkpoint " << checkpoint
                  << " written; continue with --resume " << checkpoint << std::endl;
      }
    }
    if (rank.rank == 0) run = std::move(r);
  });
  if (preempted_by != 0) return train::kPreemptedExitStatus;
  if (!plan.prints()) return 0;
  const train::History& history = run.history;
  const std::string metrics_csv = train_outputs(args).metrics_csv;
  const std::string stopped = early_stop_line(args, args.epochs, history, run.stopped_epoch);
  if (!stopped.empty()) std::cout << stopped << "\n";
  // The last validated epoch's (the saved one's ends the next line): the last epoch validates
  // unless a stop came first.
  for (auto e = history.epochs.rbegin(); e != history.epochs.rend(); ++e) {
    if (!e->count("val_accuracy")) continue;
    std::printf("validation accuracy: %.4f (loss %.4f)%s\n", e->at("val_accuracy"),
                e->at("val_loss"),
                e == history.epochs.rbegin() ? "" : " (the last validated epoch)");
    break;
  }
  // A one-time cost of CUDA runs that the epoch times hide (mostly in the first epoch).
  if (conv_algorithm_searches() > 0) {
    std::printf(
        "loom-catdog: convolution algorithms chosen for %lld shapes and passes in %.2f s (%s)\n",
        static_cast<long long>(conv_algorithm_searches()), conv_algorithm_search_seconds(),
        args.conv_benchmark ? "timed: --conv-benchmark" : "cuDNN's heuristics");
  }
  std::cout << "loom-catdog: model saved to " << args.out << saved_summary(args, history)
            << ", metrics in " << metrics_csv
            << " (chart: " << chart_command(metrics_csv, saved_epoch_of(args, history) + 1)
            << ")\n";
  return 0;
}

}  // namespace loom::catdog
