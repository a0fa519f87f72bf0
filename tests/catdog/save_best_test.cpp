// loom-catdog train's --save best|last and --early-stopping on the CPU: the model file holds the
// weights of the epoch of the highest validation accuracy (those of a run stopped after that
// epoch), its metadata says which; early stopping ends the run after PATIENCE epochs without a
// better one, as the uninterrupted run's metrics say it should; a resume keeps the best epoch
// wherever the interrupted run wrote it; bad flags end with one clear message.
#include <map>
#include <nlohmann/json.hpp>

#include "app_runner.h"
#include "catdog/commands.h"
#include "testing.h"

namespace loom {
namespace {

namespace fs = std::filesystem;

class SaveBest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    root_ =
        (fs::temp_directory_path() / ("loom_catdog_best_" + std::to_string(::getpid()))).string();
    fs::remove_all(root_);
    testing::make_photo_folder(root_ + "/data", 12, 6, 1);
    // The reference: 10 epochs over which the validation accuracy of these few images goes up
    // and down (a peak of 0.83 in the fourth), every epoch's metrics logged, the best model kept.
    const auto [status, text] = testing::run_to_end(args("full", 10), root_ + "/full");
    full_status_ = status;
    full_out_ = text;
  }
  static void TearDownTestSuite() { fs::remove_all(root_); }

  static std::vector<std::string> args(const std::string& name, int epochs,
                                       const std::vector<std::string>& more = {}) {
    std::vector<std::string> a = {"train",
                                  "--data",
                                  root_ + "/data",
                                  "--epochs",
                                  std::to_string(epochs),
                                  "--batch-size",
                                  "4",
                                  "--device",
                                  "cpu",
                                  "--workers",
                                  "0",
                                  "--seed",
                                  "1",
                                  "--out",
                                  path(name)};
    a.insert(a.end(), more.begin(), more.end());
    return a;
  }
  static std::string path(const std::string& name) { return root_ + "/" + name + ".st"; }
  static std::pair<int, std::string> train(const std::string& name, int epochs,
                                           const std::vector<std::string>& more = {}) {
    return testing::run_to_end(args(name, epochs, more), root_ + "/" + name);
  }

  // The run's metrics from its JSON lines log, exactly as logged (its epochs counted from 1,
  // History's from 0).
  static train::History history(const std::string& name) {
    std::istringstream lines(testing::read_text(root_ + "/" + name + ".metrics.jsonl"));
    train::History h;
    std::string line;
    while (std::getline(lines, line)) {
      const nlohmann::json j = nlohmann::json::parse(line);
      EXPECT_EQ(j.at("epoch").get<int64_t>(), static_cast<int64_t>(h.epochs.size()) + 1) << line;
      train::EpochMetrics m;
      for (const auto& [key, value] : j.items()) {
        if (key != "epoch") m[key] = value.get<double>();
      }
      h.epochs.push_back(m);
    }
    return h;
  }
  static std::vector<double> accuracies(const std::string& name) {
    return history(name).values("val_accuracy");
  }
  // The first epoch of the highest validation accuracy.
  static int64_t best_of(const std::vector<double>& v) {
    return std::max_element(v.begin(), v.end()) - v.begin();
  }
  static train::SavedEpoch saved(const std::string& file) {
    const std::optional<train::SavedEpoch> s =
        train::saved_epoch(io::load_model(file).metadata, file);
    EXPECT_TRUE(s.has_value()) << file << " records no epoch";
    return s.value_or(train::SavedEpoch{-1, {}});
  }
  // Bit for bit the same tensors under the same names.
  static bool same_weights(const std::string& a, const std::string& b) {
    const io::TensorFile x = io::load_safetensors(a), y = io::load_safetensors(b);
    if (x.tensors.keys() != y.tensors.keys()) return false;
    for (const auto& [name, t] : x.tensors) {
      const Tensor& u = y.tensors.at(name);
      if (t.shape() != u.shape() || t.to_vector<float>() != u.to_vector<float>()) return false;
    }
    return true;
  }
  static void expect_clear_error(const std::vector<std::string>& a, const std::string& fragment) {
    testing::expect_clear_error(a, root_ + "/bad", fragment);
  }

  static std::string root_;
  static int full_status_;
  static std::string full_out_;
};
std::string SaveBest::root_;
int SaveBest::full_status_ = -1;
std::string SaveBest::full_out_;

TEST_F(SaveBest, BestKeepsTheWeightsOfTheBestEpochAndLastTheLast) {
  ASSERT_EQ(full_status_, 0) << full_out_;
  const train::History h = history("full");
  const std::vector<double> acc = h.values("val_accuracy");
  ASSERT_EQ(acc.size(), 10u);
  const int64_t best = best_of(acc);
  ASSERT_LT(best, 9) << "the recipe should peak before its last epoch";
  // The metadata: the epoch (from 0, as the logs count) and its metrics as logged.
  const train::SavedEpoch s = saved(path("full"));
  EXPECT_EQ(s.epoch, best);
  EXPECT_EQ(s.metrics, h.epochs[static_cast<size_t>(best)]);
  EXPECT_EQ(io::load_model(path("full")).metadata.at("loom.saved_epoch"),
            std::to_string(best + 1));  // counted from 1 in the file
  char final_line[160];
  std::snprintf(final_line, sizeof final_line,
                "model saved to %s (best epoch %lld of 10, val_accuracy %.4f), metrics in",
                path("full").c_str(), static_cast<long long>(best + 1),
                acc[static_cast<size_t>(best)]);
  EXPECT_NE(full_out_.find(final_line), std::string::npos) << full_out_;

  // A run of best + 1 epochs ends with those weights; --save last of the 10 with others.
  const auto [sb, tb] = train("upto_best", static_cast<int>(best + 1), {"--save", "last"});
  ASSERT_EQ(sb, 0) << tb;
  EXPECT_TRUE(same_weights(path("full"), path("upto_best")));
  EXPECT_EQ(saved(path("upto_best")).epoch, best);
  const auto [sl, tl] = train("last", 10, {"--save", "last"});
  ASSERT_EQ(sl, 0) << tl;
  EXPECT_FALSE(same_weights(path("full"), path("last")));
  EXPECT_EQ(saved(path("last")).epoch, 9);
  EXPECT_EQ(saved(path("last")).metrics, h.epochs[9]);
  EXPECT_NE(tl.find("(last epoch 10 of 10, val_accuracy"), std::string::npos) << tl;
  // --save changes no step of training.
  EXPECT_EQ(testing::read_text(root_ + "/last.metrics.csv"),
            testing::read_text(root_ + "/full.metrics.csv"));
}

// The epoch (from 0) where early stopping with `patience` and `min_delta` ends a run of these
// validation accuracies, or -1 when it does not.
int64_t expected_stop(const std::vector<double>& acc, int64_t patience, double min_delta) {
  double best = acc[0];
  int64_t since = 0;
  for (size_t e = 1; e < acc.size(); ++e) {
    if (acc[e] > best + min_delta) {
      best = acc[e];
      since = 0;
    } else if (++since >= patience) {
      return static_cast<int64_t>(e);
    }
  }
  return -1;
}

TEST_F(SaveBest, EarlyStoppingEndsAfterPatienceEpochsWithoutABetterOne) {
  ASSERT_EQ(full_status_, 0) << full_out_;
  const std::vector<double> acc = accuracies("full");
  const std::string full_csv = testing::read_text(root_ + "/full.metrics.csv");
  for (const auto& [patience, min_delta] :
       std::vector<std::pair<int, std::string>>{{2, "0"}, {3, "0.1"}}) {
    const std::string name = "stop" + std::to_string(patience);
    const int64_t stop = expected_stop(acc, patience, std::stod(min_delta));
    ASSERT_GE(stop, 0) << "patience " << patience << " should stop the 10 epochs early";
    const auto [status, text] =
        train(name, 10, {"--early-stopping", std::to_string(patience), "--min-delta", min_delta});
    ASSERT_EQ(status, 0) << text;
    // The epochs it trained are the uninterrupted run's first ones.
    const std::string csv = testing::read_text(root_ + "/" + name + ".metrics.csv");
    EXPECT_EQ(history(name).epochs.size(), static_cast<size_t>(stop + 1)) << text;
    EXPECT_EQ(full_csv.rfind(csv, 0), 0u) << csv;
    const std::string said = "early stopping after epoch " + std::to_string(stop + 1) +
                             " of 10: val_accuracy has not improved";
    EXPECT_NE(text.find(said), std::string::npos) << text;
    EXPECT_NE(text.find("for " + std::to_string(patience) + " epochs"), std::string::npos) << text;
    // The model is still the best epoch's of those trained.
    const std::vector<double> trained(acc.begin(), acc.begin() + stop + 1);
    EXPECT_EQ(saved(path(name)).epoch, best_of(trained));
  }
  EXPECT_EQ(full_out_.find("early stopping"), std::string::npos);
}

TEST_F(SaveBest, AResumeSavesTheBestModelOfTheUninterruptedRun) {
  ASSERT_EQ(full_status_, 0) << full_out_;
  const int64_t best = best_of(accuracies("full"));
  ASSERT_LE(best, 7);
  const std::string resume = "--resume";
  // Stopped one epoch after the best, resumed with another --out: the best epoch is copied
  // from the first run's file (the checkpoint names it), and the run ends with the full run's.
  ASSERT_EQ(train("part", static_cast<int>(best + 2)).first, 0);
  const auto [s1, t1] = train("resumed", 10, {resume, path("part") + ".ckpt"});
  ASSERT_EQ(s1, 0) << t1;
  EXPECT_TRUE(same_weights(path("resumed"), path("full")));
  EXPECT_EQ(saved(path("resumed")).epoch, best);
  EXPECT_NE(t1.find("(best epoch " + std::to_string(best + 1) + " of 10"), std::string::npos) << t1;
  EXPECT_EQ(testing::read_text(root_ + "/resumed.metrics.csv"),
            testing::read_text(root_ + "/full.metrics.csv"));

  // Without the first run's file the best epoch's weights are nowhere: refused before training,
  // saying what to do; --save last resumes.
  fs::remove(path("part"));
  const auto [s2, t2] =
      testing::run_to_end(args("lost", 10, {resume, path("part") + ".ckpt"}), root_ + "/lost");
  EXPECT_EQ(s2, 1) << t2;
  EXPECT_NE(t2.find("is epoch " + std::to_string(best + 1) +
                    "'s, but no file holds that epoch's weights"),
            std::string::npos)
      << t2;
  EXPECT_NE(t2.find(path("part") + " does not exist"), std::string::npos) << t2;
  EXPECT_NE(t2.find("--save last keeps the last epoch instead"), std::string::npos) << t2;
  EXPECT_EQ(t2.find("Epoch "), std::string::npos) << t2;
  EXPECT_FALSE(fs::exists(path("lost")));
  const auto [s3, t3] = train("lost", 10, {resume, path("part") + ".ckpt", "--save", "last"});
  EXPECT_EQ(s3, 0) << t3;
  EXPECT_EQ(saved(path("lost")).epoch, 9);
  EXPECT_EQ(saved(path("lost")).metrics, history("full").epochs[9]);

  // Stopped right after the best epoch and its file lost: the checkpoint's weights are that
  // epoch's, and the resumed run saves them.
  ASSERT_EQ(train("at_best", static_cast<int>(best + 1)).first, 0);
  fs::remove(path("at_best"));
  const auto [s4, t4] = train("resumed_at_best", 10, {resume, path("at_best") + ".ckpt"});
  ASSERT_EQ(s4, 0) << t4;
  EXPECT_TRUE(same_weights(path("resumed_at_best"), path("full")));
  EXPECT_EQ(saved(path("resumed_at_best")).epoch, best);

  // Early stopping decides where the run ends, so a resume must keep it; --save need not agree.
  expect_clear_error(
      args("other", 10, {resume, path("at_best") + ".ckpt", "--early-stopping", "2"}),
      "early_stopping = off, this run has patience 2, min_delta 0");
}

TEST_F(SaveBest, AResumeOfAnEarlyStoppedRunTrainsNoFurther) {
  ASSERT_EQ(full_status_, 0) << full_out_;
  const std::vector<double> acc = accuracies("full");
  const int64_t stop = expected_stop(acc, 1, 0.0);
  ASSERT_GE(stop, 0);
  const std::vector<std::string> stopping = {"--early-stopping", "1"};
  ASSERT_EQ(train("stopped", 10, stopping).first, 0);
  std::vector<std::string> resume = stopping;
  resume.insert(resume.end(), {"--resume", path("stopped") + ".ckpt"});
  const auto [status, text] = train("again", 10, resume);
  ASSERT_EQ(status, 0) << text;
  EXPECT_EQ(text.find("\nEpoch "), std::string::npos) << text;
  EXPECT_NE(text.find("early stopping after epoch " + std::to_string(stop + 1) + " of 10"),
            std::string::npos)
      << text;
  EXPECT_TRUE(same_weights(path("again"), path("stopped")));
}

TEST_F(SaveBest, BadFlagsEndWithAClearMessage) {
  expect_clear_error(args("bad", 1, {"--save", "first"}), "--save");
  expect_clear_error(args("bad", 1, {"--early-stopping", "-1"}), "--early-stopping");
  expect_clear_error(args("bad", 1, {"--early-stopping", "2", "--min-delta", "-0.1"}),
                     "--min-delta");
  expect_clear_error(args("bad", 1, {"--early-stopping", "2", "--min-delta", "nan"}),
                     "nan is not a finite number");
  expect_clear_error(args("bad", 1, {"--early-stopping", "2", "--min-delta", "inf"}),
                     "inf is not a finite number");
  expect_clear_error(args("bad", 1, {"--min-delta", "0.01"}),
                     "--min-delta 0.01 needs --early-stopping PATIENCE");
  EXPECT_FALSE(fs::exists(path("bad")));
  // The library function checks them too (callers other than main's CLI11).
  catdog::TrainArgs a;
  a.data = root_ + "/data";
  a.device = "cpu";
  a.save = "first";
  EXPECT_LOOM_ERROR(catdog::run_train(a), "--save: expected best or last, got \"first\"");
  a.save = "last";
  a.early_stopping = -2;
  EXPECT_LOOM_ERROR(catdog::run_train(a), "--early-stopping must be >= 0 (0: off), got -2");
  a.early_stopping = 2;
  a.min_delta = std::nan("");
  EXPECT_LOOM_ERROR(catdog::run_train(a), "--min-delta must be a finite number in [0, 1]");
  a.min_delta = 2.0;
  EXPECT_LOOM_ERROR(catdog::run_train(a), "--min-delta must be a finite number in [0, 1]");
}

}  // namespace
}  // namespace loom
