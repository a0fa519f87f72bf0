// `loom-catdog train`: the seed's recipe (Adam, binary cross-entropy, Keras augmentation) on
// folders of photographs, with checkpoints, resume, metrics logs and the final model file. When
// no data was named and none is found, it says what to provide and trains the same library on
// Fashion-MNIST instead (fashion_fallback.cpp).
#include <cinttypes>
#include <cstdio>
#include <filesystem>
#include <iostream>

#include "commands.h"
#include "data_source.h"
#include "fashion_fallback.h"
#include "pipeline.h"

namespace loom::catdog {

namespace {

std::shared_ptr<nn::Module> build_model(const std::string& name, int64_t image_size, Generator& gen) {
  if (name == "seed_cnn" || name == "classic_cnn") {
    LOOM_CHECK(image_size == 64, "--image-size ", image_size, ": ", name, " takes 64x64 inputs "
               "(its dense layer is sized for them); use --image-size 64 or --model resnet18");
    return name == "seed_cnn" ? std::shared_ptr<nn::Module>(nn::seed_cnn(nn::Init::Keras, &gen))
                              : std::shared_ptr<nn::Module>(nn::classic_cnn(nn::Init::Keras, &gen));
  }
  LOOM_CHECK(name == "resnet18", "--model: expected seed_cnn, classic_cnn or resnet18, got \"", name, "\"");
  return nn::resnet18(1, nn::Init::PyTorch, &gen);
}

// The recipe fields a checkpoint must agree with to be resumed by this command.
std::map<std::string, std::string> recipe(const TrainArgs& a) {
  return {{"model", a.model},
          {"batch_size", std::to_string(a.batch_size)},
          {"image_size", std::to_string(a.image_size)},
          {"augment", a.augment},
          {"seed", std::to_string(a.seed)},
          {"limit", std::to_string(a.limit)}};
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

}  // namespace

int run_train(const TrainArgs& args) {
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
  if (args.deterministic) set_deterministic(true);
  std::cout << "loom-catdog: data " << split->root << ", model " << args.model << ", device "
            << device.str() << "\n";

  Generator init_gen(args.seed);
  manual_seed(args.seed);
  auto model = build_model(args.model, args.image_size, init_gen);
  ImageSet train_set = load_image_set(split->train_dir, args.image_size, args.image_size, args.workers);
  ImageSet val_set = load_image_set(split->val_dir, args.image_size, args.image_size, args.workers);
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

  io::Preprocessing prep;
  prep.height = prep.width = args.image_size;
  prep.class_names = train_set.classes();
  data::DataLoaderOptions train_options;
  train_options.batch_size = args.batch_size;
  train_options.seed = args.seed;
  train_options.num_workers = args.workers;
  train_options.device = device;
  LOOM_CHECK(args.augment == "keras" || args.augment == "none", "--augment: expected keras or none, "
             "got \"", args.augment, "\"");
  train_options.augment = args.augment == "keras" ? data::AugmentOptions::keras_seed(args.seed)
                                                  : preprocessing_transform(prep);
  data::DataLoader train_loader(*train_data, train_options);
  data::DataLoader val_loader(*val_set.images, eval_loader_options(prep, 64, device, args.workers));

  model->to(device);
  optim::Adam optimizer(model->parameters(), optim::GroupOptions().with_lr(args.lr));
  train::FitOptions fit;
  fit.epochs = args.epochs;
  std::unique_ptr<optim::LRScheduler> schedule;
  if (args.model == "resnet18") {  // its recipe: Adam with a cosine decay over the run
    schedule = std::make_unique<optim::CosineAnnealingLR>(optimizer, args.epochs);
    fit.callbacks.push_back(std::make_shared<train::LRSchedulerStep>(*schedule));
  }
  if (!args.resume.empty()) {
    const io::Checkpoint ckpt = io::read_checkpoint(args.resume);
    for (const auto& [key, value] : recipe(args)) {
      const auto it = ckpt.state.extra.find(key);
      LOOM_CHECK(it != ckpt.state.extra.end() && it->second == value, "--resume ", args.resume,
                 ": the checkpoint was made with ", key, " = ",
                 it == ckpt.state.extra.end() ? "(none)" : it->second, ", this run has ", value);
    }
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
