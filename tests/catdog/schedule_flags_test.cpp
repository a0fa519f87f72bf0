// loom-catdog train's schedule and regularisation flags, each parsed and seen to act on a tiny
// run: --lr-schedule cosine --warmup-epochs follows CosineWithWarmup's closed form,
// --reduce-lr-on-plateau cuts the rate where the validation loss stalls (Keras' rule, replayed
// here from the logged losses), --label-smoothing changes the first step's loss, and
// --clip-grad-norm the second's (the first is taken before any update); bad values and
// conflicting flags end with one clear message.
#include <cmath>
#include <sstream>

#include "app_runner.h"
#include "testing.h"

namespace loom {
namespace {

namespace fs = std::filesystem;

class ScheduleFlags : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    root_ = (fs::temp_directory_path() / ("loom_catdog_schedule_" + std::to_string(::getpid())))
                .string();
    fs::remove_all(root_);
    testing::make_photo_folder(root_ + "/data", 6, 3, 23);  // 12 training images: 3 batches of 4
  }
  static void TearDownTestSuite() { fs::remove_all(root_); }

  static std::vector<std::string> args(const std::string& name, int epochs,
                                       const std::vector<std::string>& more = {}) {
    return testing::small_train_args(root_ + "/data", epochs, root_ + "/" + name + ".st", more);
  }
  static std::string train(const std::string& name, int epochs,
                           const std::vector<std::string>& more) {
    const auto [status, text] = testing::run_to_end(args(name, epochs, more), root_ + "/" + name);
    EXPECT_EQ(status, 0) << text;
    return text;
  }
  // One column of a run's metrics CSV, in epoch order.
  static std::vector<double> column(const std::string& name, const std::string& metric) {
    std::istringstream csv(testing::read_text(root_ + "/" + name + ".metrics.csv"));
    std::string header;
    std::getline(csv, header);
    std::vector<std::string> names;
    std::istringstream h(header);
    for (std::string n; std::getline(h, n, ',');) names.push_back(n);
    const size_t index = std::find(names.begin(), names.end(), metric) - names.begin();
    EXPECT_LT(index, names.size()) << header;
    std::vector<double> values;
    for (std::string row; std::getline(csv, row);) {
      std::istringstream r(row);
      std::vector<std::string> cells;
      for (std::string c; std::getline(r, c, ',');) cells.push_back(c);
      values.push_back(std::stod(cells.at(index)));
    }
    return values;
  }
  static std::string root_;
};
std::string ScheduleFlags::root_;

TEST_F(ScheduleFlags, CosineWithWarmUpFollowsItsClosedForm) {
  const std::string text =
      train("warm", 3, {"--lr-schedule", "cosine", "--warmup-epochs", "1", "--lr", "0.002"});
  EXPECT_NE(text.find("lr schedule cosine after a 1 epoch warm-up"), std::string::npos) << text;
  // 3 steps an epoch, the lr logged at each epoch's end: step 3 ends the warm-up (the peak),
  // step 6 is half-way through the cosine over steps 3..9, step 9 its end.
  const std::vector<double> lr = column("warm", "lr");
  ASSERT_EQ(lr.size(), 3u);
  EXPECT_NEAR(lr[0], 0.002, 1e-12);
  EXPECT_NEAR(lr[1], 0.001, 1e-12);
  EXPECT_NEAR(lr[2], 0.0, 1e-12);
}

TEST_F(ScheduleFlags, PlateauCutsTheRateWhereValidationLossStalls) {
  const std::string text = train("plateau", 5,
                                 {"--reduce-lr-on-plateau", "--plateau-patience", "1",
                                  "--plateau-factor", "0.5", "--lr", "0.05"});
  EXPECT_NE(text.find("reduce lr on plateau (patience 1, factor 0.5)"), std::string::npos) << text;
  // Keras' rule on the logged validation losses: the lr an epoch ends with is the one it
  // trained at; each epoch that does not beat the best halves the next one's.
  const std::vector<double> val_loss = column("plateau", "val_loss"), lr = column("plateau", "lr");
  ASSERT_EQ(lr.size(), 5u);
  double expected = 0.05, best = val_loss[0];
  int cuts = 0;
  for (size_t e = 0; e < lr.size(); ++e) {
    EXPECT_NEAR(lr[e], expected, 1e-12) << "epoch " << e + 1;
    if (e == 0 || val_loss[e] < best) {
      best = val_loss[e];
    } else {
      expected *= 0.5;
      ++cuts;
    }
  }
  EXPECT_GE(cuts, 1) << "the run never stalled: nothing was tested";
}

TEST_F(ScheduleFlags, LabelSmoothingAndClippingChangeTheSteps) {
  const auto losses = [&](const std::string& name, const std::vector<std::string>& more) {
    std::vector<std::string> flags = {"--print-losses"};
    flags.insert(flags.end(), more.begin(), more.end());
    return testing::step_losses(train(name, 1, flags));
  };
  const std::map<int, std::string> plain = losses("plain", {});
  const std::map<int, std::string> smoothed = losses("smoothed", {"--label-smoothing", "0.2"});
  const std::map<int, std::string> clipped = losses("clipped", {"--clip-grad-norm", "0.001"});
  ASSERT_EQ(plain.size(), 3u);
  ASSERT_EQ(smoothed.size(), 3u);
  ASSERT_EQ(clipped.size(), 3u);
  EXPECT_NE(smoothed.at(1), plain.at(1));  // the same logits against smoothed targets
  EXPECT_EQ(clipped.at(1), plain.at(1));   // before any update: the same
  EXPECT_NE(clipped.at(2), plain.at(2));   // after a clipped one: not
  EXPECT_NE(testing::read_text(root_ + "/clipped.out").find("clip grad norm 0.001"),
            std::string::npos);
}

TEST_F(ScheduleFlags, BadValuesAndConflictsAreNamed) {
  const std::string bad = root_ + "/bad";
  testing::expect_prompt_error(args("bad", 2, {"--label-smoothing", "1"}), bad,
                               {"--label-smoothing"});
  testing::expect_prompt_error(args("bad", 2, {"--clip-grad-norm", "-1"}), bad,
                               {"--clip-grad-norm"});
  testing::expect_prompt_error(args("bad", 2, {"--plateau-factor", "1.5"}), bad,
                               {"--plateau-factor"});
  testing::expect_prompt_error(
      args("bad", 2, {"--reduce-lr-on-plateau", "--lr-schedule", "cosine"}), bad,
      {"--reduce-lr-on-plateau", "--lr-schedule constant", "cosine"});
  testing::expect_prompt_error(args("bad", 2, {"--warmup-epochs", "1"}), bad,
                               {"--warmup-epochs 1", "--lr-schedule cosine"});
  testing::expect_prompt_error(args("bad", 2, {"--lr-schedule", "cosine", "--warmup-epochs", "2"}),
                               bad, {"--warmup-epochs 2 must be fewer than --epochs (2)"});
  // A checkpoint of another smoothing is not this run's to continue.
  train("recipe", 1, {"--label-smoothing", "0.1"});
  testing::expect_prompt_error(args("recipe", 2, {"--resume", root_ + "/recipe.st.ckpt"}), bad,
                               {"label_smoothing = 0.1, this run has 0"});
}

}  // namespace
}  // namespace loom
