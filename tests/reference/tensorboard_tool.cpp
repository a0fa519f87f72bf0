// A driver for the TensorBoard check: `tensorboard_tool WORK` fits the tiny model of
// tests/train/synthetic.h for 3 epochs with a TensorBoardLogger writing into WORK/logs
// (batch_loss every 2 steps) and writes what the event file must hold: WORK/expected.json
// ({"history": History::to_json(), "batch_loss": {"<step>": loss, ...}}) and WORK/summary.txt
// (the model summary as Sequential::summary prints it).
#include <loom/loom.h>

#include <filesystem>
#include <fstream>
#include <map>

#include "synthetic.h"

namespace {

class BatchLosses : public loom::train::Callback {
 public:
  void on_batch_end(loom::train::TrainContext& ctx) override {
    if (ctx.global_step % 2 == 0) losses[ctx.global_step] = ctx.batch_loss.item<double>();
  }
  std::map<int64_t, double> losses;
};

}  // namespace

int main(int argc, char** argv) try {
  using namespace loom;
  if (argc != 2) throw Error("usage: tensorboard_tool WORK");
  const std::filesystem::path work = argv[1];
  std::filesystem::remove_all(work / "logs");
  std::filesystem::create_directories(work / "logs");
  manual_seed(5);
  testing::HalvesDataset train_set(24, 1), val_set(12, 2);
  auto model = testing::tiny_model(3);
  optim::Adam optimizer(model->parameters(), optim::GroupOptions().with_lr(1e-2));
  data::DataLoaderOptions o;
  o.batch_size = 8;
  o.shuffle = true;
  o.augment.rescale = 1.0 / 255.0;
  data::DataLoader train_loader(train_set, o);
  o.shuffle = false;
  data::DataLoader val_loader(val_set, o);

  train::TensorBoardOptions tb;
  tb.dir = (work / "logs").string();
  tb.batch_every = 2;
  tb.input_shape = {3, 8, 8};
  auto losses = std::make_shared<BatchLosses>();
  train::FitOptions fit;
  fit.epochs = 3;
  fit.out = nullptr;
  fit.callbacks = {std::make_shared<train::TensorBoardLogger>(tb), losses};
  const train::History history = train::fit(*model, train::binary_cross_entropy_loss(), optimizer,
                                            train_loader, &val_loader, fit);

  std::ofstream expected(work / "expected.json");
  expected << "{\"history\": " << history.to_json() << ", \"batch_loss\": {";
  const char* sep = "";
  for (const auto& [step, loss] : losses->losses) {
    char value[32];
    std::snprintf(value, sizeof value, "%.17g", loss);
    expected << sep << "\"" << step << "\": " << value;
    sep = ", ";
  }
  expected << "}}\n";
  expected.close();
  std::ofstream summary(work / "summary.txt");
  summary << model->summary({3, 8, 8});
  summary.close();
  if (!expected || !summary) throw Error("cannot write into " + work.string());
  return 0;
} catch (const loom::Error& e) {
  std::fprintf(stderr, "tensorboard_tool: %s\n", e.what());
  return 2;
}
