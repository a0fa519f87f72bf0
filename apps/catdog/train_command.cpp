// `loom-catdog train`: the seed's recipe (Adam, binary cross-entropy, Keras augmentation) on
// folders of photographs, with the resize, weight decay and LR schedule as flags, with checkpoints, resume, metrics logs and the final model file. When
// no data was named and none is found, it says what to provide and trains the same library on
// Fashion-MNIST instead (fashion_fallback.cpp).
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>

#include "commands.h"
#include "data_source.h"
#include "fashion_fallback.h"
#include "pipeline.h"

namespace loom::catdog {

namespace {

// --init's value, with the model's default when it is not given: Keras' initialisers for the
// two models that reproduce Keras code, PyTorch's for resnet18.
std::string init_of(const TrainArgs& a) {
  if (!a.init.empty()) return a.init;
  return a.model == "resnet18" ? "pytorch" : "keras";
}

std::shared_ptr<nn::Module> build_model(const TrainArgs& a, Generator& gen) {
  LOOM_CHECK(init_of(a) == "keras" || init_of(a) == "pytorch", "--init: expected keras or pytorch, got \"",
             a.init, "\"");
  const nn::Init init = init_of(a) == "keras" ? nn::Init::Keras : nn::Init::PyTorch;
  if (a.model == "seed_cnn" || a.model == "classic_cnn") {
    LOOM_CHECK(a.image_size == 64, "--image-size ", a.image_size, ": ", a.model, " takes 64x64 inputs "
               "(its dense layer is sized for them); use --image-size 64 or --model resnet18");
    return a.model == "seed_cnn" ? std::shared_ptr<nn::Module>(nn::seed_cnn(init, &gen))
                                 : std::shared_ptr<nn::Module>(nn::classic_cnn(init, &gen));
  }
  LOOM_CHECK(a.model == "resnet18", "--model: expected seed_cnn, classic_cnn or resnet18, got \"", a.model, "\"");
  return nn::resnet18(1, init, &gen);
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

// The recipe fields a checkpoint must agree with to be resumed by this command.
std::map<std::string, std::string> recipe(const TrainArgs& a) {
  return {{"model", a.model},
          {"batch_size", std::to_string(a.batch_size)},
          {"image_size", std::to_string(a.image_size)},
          {"augment", a.augment},
          {"resize", a.resize},
          {"weight_decay", shortest(a.weight_decay)},
          {"lr_schedule", lr_schedule_of(a)},
          {"init", init_of(a)},
          {"seed", std::to_string(a.seed)},
          {"limit", std::to_string(a.limit)}};
}

// A checkpoint written before a recipe field existed was made with that field's fixed value
// then (nearest resizing, plain Adam, the model's schedule); empty for the original fields.
std::string value_before_the_flag(const std::string& key, const TrainArgs& a) {
  if (key == "resize") return "nearest";
  if (key == "weight_decay") return "0";
  if (key == "lr_schedule") return a.model == "resnet18" ? "cosine" : "constant";
  if (key == "init") return a.model == "resnet18" ? "pytorch" : "keras";
  return "";
}

// Refuses, before any data is loaded, a checkpoint whose recipe differs from this run's.
void check_resume_recipe(const TrainArgs& args) {
  const io::Checkpoint ckpt = io::read_checkpoint(args.resume);
  for (const auto& [key, value] : recipe(args)) {
    const auto it = ckpt.state.extra.find(key);
    const std::string theirs = it != ckpt.state.extra.end() ? it->second : value_before_the_flag(key, args);
    LOOM_CHECK(theirs == value, "--resume ", args.resume, ": the checkpoint was made with ", key, " = ",
               theirs.empty() ? "(none)" : theirs, ", this run has ", value);
  }
}

// Checks the flags that tests and other callers of run_train may pass unchecked by CLI11.
void check_train_args(const TrainArgs& a) {
  LOOM_CHECK(a.augment == "keras" || a.augment == "torchvision" || a.augment == "strong" || a.augment == "none",
             "--augment: expected keras, torchvision, strong or none, got \"",
             a.augment, "\"");
  LOOM_CHECK(io::interpolation_from_name(a.resize).has_value(), "--resize: expected nearest, bilinear "
             "or area, got \"", a.resize, "\"");
  LOOM_CHECK(std::isfinite(a.weight_decay) && a.weight_decay >= 0.0, "--weight-decay must be a "
             "finite number >= 0, got ", a.weight_decay);
  LOOM_CHECK(a.lr_schedule.empty() || a.lr_schedule == "constant" || a.lr_schedule == "cosine",
             "--lr-schedule: expected constant or cosine, got \"", a.lr_schedule, "\"");
}

// Prints each step's loss exactly (hex float) for the resume tests; syncs every step.
class LossPrinter : public train::Callback {
 public:
  void on_batch_end(train::TrainContext& ctx) override {
    std::printf("step %" PRId64 " loss %a\n", ctx.global_step, ctx.batch_loss.item<double>());
    std::fflush(stdout);
  }
};

std::string with_suffix(const std::string& path, const std::string& suffix) {
  const std::filesystem::path p(path);
  return (p.parent_path() / p.stem()).string() + suffix;
}

// The seed's generator with Keras' semantics (keras) or as PyTorch users write it
// (torchvision), the Keras one with rotations of up to 15 degrees and shifts of up to a tenth of
// the image (strong, for the deeper resnet18), or no augmentation (none).
data::AugmentOptions training_transform(const std::string& name, uint64_t seed, const io::Preprocessing& prep) {
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

}  // namespace

int run_train(const TrainArgs& args) {
  check_train_args(args);
  std::optional<DataSplit> split;
  if (!args.data.empty()) {
    split = split_of(args.data);
    LOOM_CHECK(split.has_value(), "--data ", args.data, ": not a usable data folder; ", layout_help());
  } else {
    split = find_default_data();
    if (!split) {
      std::cout << "loom-catdog: no cat/dog photographs found; " << layout_help() << "\n"
                << "loom-catdog: training the same library on Fashion-MNIST instead\n";
      return train_fashion_fallback(args);
    }
  }
  const Device device = parse_device(args.device);
  if (!args.resume.empty()) check_resume_recipe(args);
  if (args.deterministic) set_deterministic(true);
  std::cout << "loom-catdog: data " << split->root << ", model " << args.model << ", device "
            << device.str() << ", augment " << args.augment << ", resize " << args.resize
            << ", weight decay " << shortest(args.weight_decay) << ", lr schedule " << lr_schedule_of(args) << "\n";

  Generator init_gen(args.seed);
  manual_seed(args.seed);
  auto model = build_model(args, init_gen);
  io::Preprocessing prep;
  prep.height = prep.width = args.image_size;
  prep.interpolation = *io::interpolation_from_name(args.resize);
  ImageSet train_set = load_image_set(split->train_dir, prep, args.workers);
  ImageSet val_set = load_image_set(split->val_dir, prep, args.workers);
  LOOM_CHECK(train_set.classes() == val_set.classes(), split->train_dir, " and ", split->val_dir,
             " hold different class folders");
  LOOM_CHECK(train_set.classes().size() == 2, split->train_dir, ": the cat/dog model needs exactly 2 "
             "class folders, found ", train_set.classes().size());
  std::unique_ptr<Subset> subset;
  const data::Dataset* train_data = train_set.images.get();
  if (args.limit > 0) {
    subset = std::make_unique<Subset>(*train_set.images, args.limit, args.seed);
    train_data = subset.get();
  }
  std::cout << "loom-catdog: " << train_data->size() << " training and " << val_set.images->size()
            << " validation images, classes";
  for (const auto& c : train_set.classes()) std::cout << " " << c;
  std::cout << "\n";

  prep.class_names = train_set.classes();
  data::DataLoaderOptions train_options;
  train_options.batch_size = args.batch_size;
  train_options.seed = args.seed;
  train_options.num_workers = args.workers;
  train_options.device = device;
  train_options.augment = training_transform(args.augment, args.seed, prep);
  data::DataLoader train_loader(*train_data, train_options);
  data::DataLoader val_loader(*val_set.images, eval_loader_options(prep, 64, device, args.workers));

  model->to(device);
  // Plain Adam unless a weight decay is asked for; then AdamW's decoupled decay, whose
  // strength does not depend on the gradients' scale as Adam's L2 term would.
  std::unique_ptr<optim::Optimizer> owned_optimizer;
  const optim::GroupOptions options = optim::GroupOptions().with_lr(args.lr).with_weight_decay(args.weight_decay);
  if (args.weight_decay > 0.0) {
    owned_optimizer = std::make_unique<optim::AdamW>(model->parameters(), options);
  } else {
    owned_optimizer = std::make_unique<optim::Adam>(model->parameters(), options);
  }
  optim::Optimizer& optimizer = *owned_optimizer;
  train::FitOptions fit;
  fit.epochs = args.epochs;
  std::unique_ptr<optim::LRScheduler> schedule;
  if (lr_schedule_of(args) == "cosine") {  // a cosine decay over the run, stepped per epoch
    schedule = std::make_unique<optim::CosineAnnealingLR>(optimizer, args.epochs);
    fit.callbacks.push_back(std::make_shared<train::LRSchedulerStep>(*schedule));
  }
  if (!args.resume.empty()) {
    fit.resume = io::load_checkpoint(args.resume, *model, optimizer);
    std::cout << "loom-catdog: resuming " << args.resume << " at epoch " << fit.resume->epoch + 1
              << ", step " << fit.resume->step_in_epoch << "\n";
  }

  const std::string metrics_csv = args.metrics.empty() ? with_suffix(args.out, ".metrics.csv") : args.metrics;
  train::CheckpointOptions ckpt_options;
  ckpt_options.path = args.checkpoint.empty() ? args.out + ".ckpt" : args.checkpoint;
  ckpt_options.every_steps = args.checkpoint_every_steps;
  ckpt_options.preprocessing = prep;
  ckpt_options.extra = recipe(args);  // so that --resume can refuse a mismatched run
  auto checkpoint = std::make_shared<train::ModelCheckpoint>(ckpt_options);
  fit.callbacks.push_back(std::make_shared<train::CsvLogger>(metrics_csv));
  fit.callbacks.push_back(std::make_shared<train::JsonLinesLogger>(with_suffix(metrics_csv, ".jsonl")));
  if (args.print_losses) fit.callbacks.push_back(std::make_shared<LossPrinter>());
  fit.callbacks.push_back(checkpoint);

  const train::History history = train::fit(*model, loss_for_outputs(1), optimizer, train_loader,
                                            &val_loader, fit);
  io::save_model(args.out, *model, prep);
  if (!history.epochs.empty()) {
    std::printf("validation accuracy: %.4f (loss %.4f)\n", history.epochs.back().at("val_accuracy"),
                history.epochs.back().at("val_loss"));
  }
  std::cout << "loom-catdog: model saved to " << args.out << ", metrics in " << metrics_csv
            << " (chart: python3 tools/plot_metrics.py " << metrics_csv << ")\n";
  return 0;
}

}  // namespace loom::catdog
