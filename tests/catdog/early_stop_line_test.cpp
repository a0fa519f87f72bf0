// loom-catdog's early-stopping line: the patience it names counts the epochs that validated.
#include "catdog/best_model.h"
#include "catdog/commands.h"
#include "testing.h"

namespace loom {
namespace {

train::EpochMetrics validated(double accuracy) {
  return {{"loss", 0.5}, {"val_loss", 0.6}, {"val_accuracy", accuracy}};
}
train::EpochMetrics skipped() { return {{"loss", 0.5}}; }

TEST(EarlyStopLine, CountsEveryEpochWhenEachValidated) {
  catdog::TrainArgs args;
  const train::History h{{validated(0.8), validated(0.7), validated(0.75)}};
  EXPECT_EQ(catdog::early_stop_line(args, 10, h, 2),
            "loom-catdog: early stopping after epoch 3 of 10: val_accuracy has not improved on "
            "epoch 1's 0.8000 for 2 epochs");
  EXPECT_EQ(catdog::early_stop_line(args, 10, h, -1), "");
}

TEST(EarlyStopLine, CountsOnlyTheValidatedEpochsWhenSomeSkippedValidation) {
  catdog::TrainArgs args;
  args.validation_freq = 2;
  const train::History h{
      {skipped(), validated(0.8), skipped(), validated(0.7), skipped(), validated(0.75)}};
  EXPECT_EQ(catdog::early_stop_line(args, 10, h, 5),
            "loom-catdog: early stopping after epoch 6 of 10: val_accuracy has not improved on "
            "epoch 2's 0.8000 for 2 validated epochs");
}

}  // namespace
}  // namespace loom
