// loom-catdog train --val-batch-size: validation in batches of another size gives the same
// validation metrics (they are sums over the samples), and a size out of range is refused.
#include <sstream>

#include "app_runner.h"
#include "testing.h"

namespace loom {
namespace {

namespace fs = std::filesystem;

class ValBatch : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    root_ = (fs::temp_directory_path() / ("loom_catdog_val_batch_" + std::to_string(::getpid())))
                .string();
    fs::remove_all(root_);
    // 12 training images and 7 per class to validate: batches of 5 leave a last one of 4.
    testing::make_photo_folder(root_ + "/data", 6, 7, 31);
  }
  static void TearDownTestSuite() { fs::remove_all(root_); }

  // The last line of a run's metrics CSV: "epoch,accuracy,loss,lr,val_accuracy,val_loss".
  static std::vector<double> last_epoch(const std::string& name,
                                        const std::vector<std::string>& more) {
    std::vector<std::string> flags = {"--seed", "3"};
    flags.insert(flags.end(), more.begin(), more.end());
    const auto [status, text] = testing::run_to_end(
        testing::small_train_args(root_ + "/data", 2, root_ + "/" + name + ".st", flags),
        root_ + "/" + name);
    EXPECT_EQ(status, 0) << text;
    std::istringstream csv(testing::read_text(root_ + "/" + name + ".metrics.csv"));
    std::string line, last;
    std::getline(csv, line);
    EXPECT_EQ(line, "epoch,accuracy,loss,lr,val_accuracy,val_loss");
    while (std::getline(csv, line)) last = line;
    std::vector<double> values;
    std::istringstream row(last);
    for (std::string cell; std::getline(row, cell, ',');) values.push_back(std::stod(cell));
    return values;
  }
  static std::string root_;
};
std::string ValBatch::root_;

TEST_F(ValBatch, TheMetricsDoNotDependOnTheValidationBatch) {
  const std::vector<double> whole = last_epoch("whole", {});  // 256: one batch of 14
  const std::vector<double> fives = last_epoch("fives", {"--val-batch-size", "5"});
  ASSERT_EQ(whole.size(), 6u);
  ASSERT_EQ(fives.size(), 6u);
  // The training is the same run (same seed, same batches), so its columns are equal.
  for (int i = 0; i < 4; ++i) EXPECT_DOUBLE_EQ(whole[i], fives[i]) << "column " << i;
  EXPECT_DOUBLE_EQ(whole[4], fives[4]);   // val_accuracy: a count over 14
  EXPECT_NEAR(whole[5], fives[5], 1e-6);  // val_loss: float sums in another order
  EXPECT_GT(whole[5], 0.0);
}

TEST_F(ValBatch, ASizeOutOfRangeIsRefused) {
  const auto [status, text] = testing::run_to_end(
      testing::small_train_args(root_ + "/data", 1, root_ + "/zero.st", {"--val-batch-size", "0"}),
      root_ + "/zero");
  EXPECT_NE(status, 0);
  EXPECT_NE(text.find("--val-batch-size"), std::string::npos) << text;
  EXPECT_FALSE(fs::exists(root_ + "/zero.st"));
}

}  // namespace
}  // namespace loom
