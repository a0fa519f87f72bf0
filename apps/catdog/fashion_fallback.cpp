// Fashion-MNIST through loom-catdog's own pipeline, for machines without the photographs.
#include "fashion_fallback.h"

#include <cstdio>
#include <iostream>

#include "best_model.h"
#include "launch_plan.h"
#include "pipeline.h"
#include "rank_training.h"

namespace loom::catdog {

namespace {
// Two 3x3 convolutions with pooling and a dense head: about 91% test accuracy in a few epochs.
std::shared_ptr<nn::Sequential> small_cnn() {
  auto model = std::make_shared<nn::Sequential>();
  model->add(std::make_shared<nn::Conv2d>(1, 32, 3, Conv2dOptions().padding(1)))
      .add(std::make_shared<nn::ReLU>());
  model->add(std::make_shared<nn::MaxPool2d>(2));
  model->add(std::make_shared<nn::Conv2d>(32, 64, 3, Conv2dOptions().padding(1)))
      .add(std::make_shared<nn::ReLU>());
  model->add(std::make_shared<nn::MaxPool2d>(2));
  model->add(std::make_shared<nn::Flatten>());
  model->add(std::make_shared<nn::Linear>(64 * 7 * 7, 128)).add(std::make_shared<nn::ReLU>());
  model->add(std::make_shared<nn::Linear>(128, 10));
  return model;
}
}  // namespace

int train_fashion_fallback(const TrainArgs& args) {
  const LaunchPlan plan = plan_launch(args);
  manual_seed(args.seed);  // before the launch, which derives each rank's seed from it
  data::FashionMnist train_data(data::kFashionMnistDir, true),
      test_data(data::kFashionMnistDir, false);
  int64_t epochs = args.epochs, limit = args.limit;
  if (plan.device.is_cpu() && limit == 0) {  // a CPU run stays within minutes
    epochs = std::min<int64_t>(epochs, 2);
    limit = 8000;
  }
  std::unique_ptr<Subset> subset;
  const data::Dataset* train_set = &train_data;
  if (limit > 0) {
    subset = std::make_unique<Subset>(train_data, limit, args.seed);
    train_set = subset.get();
  }
  if (plan.prints()) {
    std::cout << "loom-catdog: Fashion-MNIST, " << train_set->size() << " training and "
              << test_data.size() << " test images, " << epochs << " epochs on "
              << plan.device.str() << ranks_summary(plan, args.batch_size) << "\n"
              << std::flush;  // before the files are read
  }

  io::Preprocessing prep;
  prep.height = prep.width = 28;
  prep.channels = 1;
  prep.class_names = data::FashionMnist::classes();
  train::History history;
  int64_t stopped_epoch = -1;
  run_ranks(plan, [&](const dist::GroupPtr& group) {
    const RankSetup rank = rank_setup(plan, group);
    data::DataLoaderOptions options =
        eval_loader_options(prep, args.batch_size, rank.device, args.workers);
    options.shuffle = true;
    options.seed = args.seed;
    data::DataLoader train_loader(
        *train_set, data::train_shard_options(options, train_set->size(), rank.shard()));
    data::DataLoader test_loader(
        test_data, data::eval_shard_options(
                       eval_loader_options(prep, args.val_batch_size, rank.device, args.workers),
                       test_data.size(), rank.shard()));
    // Drawn from each rank's own generator; DDP then gives every rank rank 0's weights.
    auto model = small_cnn();
    model->to(rank.device);
    const std::shared_ptr<dist::PipelineParallel> pipeline = pipeline_model(args, model, rank);
    optim::Adam optimizer(model->parameters(), optim::GroupOptions().with_lr(args.lr));
    train::FitOptions fit;
    fit.epochs = epochs;
    fit.group = rank.group;
    train::CheckpointOptions best;  // no checkpoint: the best model file only (--save best)
    best.preprocessing = prep;
    set_best_model(args, nullptr, best);
    if (!best.best_model_path.empty())
      fit.callbacks.push_back(std::make_shared<train::ModelCheckpoint>(best));
    const std::shared_ptr<train::EarlyStopping> stopper = early_stopping(args);
    if (stopper) fit.callbacks.push_back(stopper);
    const std::shared_ptr<nn::Module> trained = pipeline ? pipeline : trained_module(model, rank);
    train::History h = train::fit(*trained, train::cross_entropy_loss(), optimizer, train_loader,
                                  &test_loader, fit);
    if (rank.rank != 0) return;
    save_last(args, *model, prep, h);
    history = std::move(h);
    if (stopper) stopped_epoch = stopper->stopped_epoch();
  });
  if (!plan.prints()) return 0;
  const std::string stopped = early_stop_line(args, epochs, history, stopped_epoch);
  if (!stopped.empty()) std::cout << stopped << "\n";
  std::printf("Fashion-MNIST test accuracy: %.4f\n", history.epochs.back().at("val_accuracy"));
  std::cout << "loom-catdog: model saved to " << args.out << saved_summary(args, history) << "\n";
  return 0;
}

}  // namespace loom::catdog
