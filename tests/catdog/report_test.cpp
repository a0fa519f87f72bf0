// loom-catdog's reports (issue 16, items 5 and 7): evaluate --json against its text output and a
// hand computation from the confusion matrix; predict over folders with a summary line and the
// unreadable files named on stderr; --version; train --summary's layer table.
#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>

#include "app_runner.h"
#include "catdog/class_metrics.h"
#include "testing.h"

namespace loom {
namespace {

using testing::Child;
namespace fs = std::filesystem;

class Report : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    root_ =
        (fs::temp_directory_path() / ("loom_catdog_report_" + std::to_string(::getpid()))).string();
    fs::remove_all(root_);
    testing::make_photo_folder(root_ + "/data", 8, 5, 4);
    Child c({"train", "--data", root_ + "/data", "--epochs", "1", "--batch-size", "8", "--device",
             "cpu", "--workers", "0", "--summary", "--out", root_ + "/m.st"},
            root_ + "/train");
    train_status_ = c.wait();
    train_out_ = c.out();
    train_text_ = c.out() + c.err();
  }
  static void TearDownTestSuite() { fs::remove_all(root_); }

  static std::string root_, train_out_, train_text_;
  static int train_status_;
};
std::string Report::root_, Report::train_out_, Report::train_text_;
int Report::train_status_ = -1;

// The hand computation, from the matrix's rows (true) and columns (predicted).
TEST(CatdogClassMetrics, PrecisionRecallAndF1FromTheConfusionMatrix) {
  // 3 classes: row sums 5, 4, 1; column sums 4, 6, 0 (nothing predicted as class 2).
  const std::vector<int64_t> m = {3, 2, 0, 1, 3, 0, 0, 1, 0};
  const std::vector<catdog::ClassMetrics> r = catdog::class_metrics(m, 3);
  ASSERT_EQ(r.size(), 3u);
  EXPECT_DOUBLE_EQ(r[0].precision, 3.0 / 4);
  EXPECT_DOUBLE_EQ(r[0].recall, 3.0 / 5);
  EXPECT_DOUBLE_EQ(r[0].f1, 2 * 0.75 * 0.6 / (0.75 + 0.6));
  EXPECT_EQ(r[0].support, 5);
  EXPECT_DOUBLE_EQ(r[1].precision, 3.0 / 6);
  EXPECT_DOUBLE_EQ(r[1].recall, 3.0 / 4);
  EXPECT_EQ(r[1].support, 4);
  // No prediction of class 2: precision 0 (zero_division=0), and so recall and F1 0, not NaN.
  EXPECT_EQ(r[2].precision, 0.0);
  EXPECT_EQ(r[2].recall, 0.0);
  EXPECT_EQ(r[2].f1, 0.0);
  EXPECT_EQ(r[2].support, 1);
  EXPECT_THROW(catdog::class_metrics(m, 2), Error);
}

TEST_F(Report, EvaluateJsonMatchesTheTextAndTheConfusionMatrix) {
  ASSERT_EQ(train_status_, 0) << train_text_;
  const std::vector<std::string> args = {"evaluate", "--model",       root_ + "/m.st",
                                         "--data",   root_ + "/data", "--device",
                                         "cpu",      "--workers",     "0"};
  Child text_run(args, root_ + "/eval_text");
  ASSERT_EQ(text_run.wait(), 0) << text_run.out() << text_run.err();
  std::vector<std::string> json_args = args;
  json_args.push_back("--json");
  Child json_run(json_args, root_ + "/eval_json");
  ASSERT_EQ(json_run.wait(), 0) << json_run.err();
  const nlohmann::json j = nlohmann::json::parse(json_run.out());  // stdout is the one object
  const std::string text = text_run.out();

  ASSERT_EQ(j["classes"], nlohmann::json({"cat", "dog"}));
  EXPECT_EQ(j["samples"].get<int64_t>(), 10);
  const auto matrix = j["confusion_matrix"].get<std::vector<std::vector<int64_t>>>();
  ASSERT_EQ(matrix.size(), 2u);
  int64_t total = 0, correct = 0;
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(matrix[i][0] + matrix[i][1], 5) << "row " << i;
    total += matrix[i][0] + matrix[i][1];
    correct += matrix[i][i];
  }
  EXPECT_DOUBLE_EQ(j["accuracy"].get<double>(), static_cast<double>(correct) / total);

  char line[64];
  std::snprintf(line, sizeof line, "accuracy %.4f\nloss %.4f\n", j["accuracy"].get<double>(),
                j["loss"].get<double>());
  EXPECT_NE(text.find(line), std::string::npos) << line << " not in:\n" << text;
  EXPECT_NE(text.find("10 images"), std::string::npos) << text;
  std::snprintf(line, sizeof line, "%12s %10lld %10lld\n", "cat", (long long)matrix[0][0],
                (long long)matrix[0][1]);
  EXPECT_NE(text.find(line), std::string::npos) << line << " not in:\n" << text;
  EXPECT_NE(text.find("   precision     recall         f1    support\n"), std::string::npos)
      << text;

  const char* names[] = {"cat", "dog"};
  for (size_t c = 0; c < 2; ++c) {
    SCOPED_TRACE(names[c]);
    const int64_t tp = matrix[c][c], predicted = matrix[0][c] + matrix[1][c],
                  actual = matrix[c][0] + matrix[c][1];
    const double p = predicted ? static_cast<double>(tp) / predicted : 0.0;
    const double r = static_cast<double>(tp) / actual;
    const double f1 = p + r > 0 ? 2 * p * r / (p + r) : 0.0;
    const nlohmann::json& m = j["per_class"][names[c]];
    EXPECT_NEAR(m["precision"].get<double>(), p, 1e-12);
    EXPECT_NEAR(m["recall"].get<double>(), r, 1e-12);
    EXPECT_NEAR(m["f1"].get<double>(), f1, 1e-12);
    EXPECT_EQ(m["support"].get<int64_t>(), actual);
    // The text table's row holds the same numbers.
    std::snprintf(line, sizeof line, "%12s %10.4f %10.4f %10.4f %10lld\n", names[c], p, r, f1,
                  (long long)actual);
    EXPECT_NE(text.find(line), std::string::npos) << line << " not in:\n" << text;
  }
}

TEST_F(Report, PredictTakesFoldersSummarisesAndNamesUnreadableFiles) {
  ASSERT_EQ(train_status_, 0) << train_text_;
  const fs::path dir = fs::path(root_) / "photos";
  fs::create_directories(dir / "nested" / "deeper");
  fs::copy_file(root_ + "/data/val/dog/0.png", dir / "b.png");
  fs::copy_file(root_ + "/data/val/cat/0.png", dir / "nested" / "a.PNG");
  fs::copy_file(root_ + "/data/val/cat/1.png", dir / "nested" / "deeper" / "c.png");
  std::ofstream(dir / "corrupt.jpg", std::ios::binary) << "\xff\xd8\xff not really a jpeg";
  std::ofstream(dir / "notes.txt") << "not an image: left out";
  const std::string extra = root_ + "/data/val/dog/1.png";  // a file beside the folder

  Child c({"predict", "--device", "cpu", "--model", root_ + "/m.st", dir.string(), extra},
          root_ + "/predict_dir");
  EXPECT_EQ(c.wait(), 1) << c.out() << c.err();
  const std::string out = c.out(), err = c.err();
  std::istringstream lines(out);
  std::vector<std::string> images;
  std::map<std::string, int> counts;
  std::string line, summary;
  while (std::getline(lines, line)) {
    char name[8], path[4096];
    double p = 0;
    if (std::sscanf(line.c_str(), "%7s %lf %4095s", name, &p, path) == 3) {
      images.push_back(path);
      ++counts[name];
    } else {
      EXPECT_TRUE(summary.empty()) << "a second line that is not a prediction: " << line;
      summary = line;
    }
  }
  // The folder's images in sorted order (the nested ones included, notes.txt not), then the file.
  const std::vector<std::string> expected = {(dir / "b.png").string(),
                                             (dir / "nested" / "a.PNG").string(),
                                             (dir / "nested" / "deeper" / "c.png").string(), extra};
  EXPECT_EQ(images, expected) << out;
  char want[128];
  std::snprintf(want, sizeof want, "4 images: cat %d, dog %d, 1 unreadable", counts["cat"],
                counts["dog"]);
  EXPECT_EQ(summary, want) << out;
  EXPECT_NE(err.find("cannot read " + (dir / "corrupt.jpg").string() + ": "), std::string::npos)
      << err;
  EXPECT_EQ(out.find("corrupt.jpg"), std::string::npos) << out;

  // Every image readable: exit 0; one file prints its line and nothing more, as before.
  fs::remove(dir / "corrupt.jpg");
  Child ok({"predict", "--device", "cpu", "--model", root_ + "/m.st", dir.string()},
           root_ + "/predict_ok");
  EXPECT_EQ(ok.wait(), 0) << ok.out() << ok.err();
  EXPECT_NE(ok.out().find("3 images: cat "), std::string::npos) << ok.out();
  Child one({"predict", "--device", "cpu", "--model", root_ + "/m.st", extra},
            root_ + "/predict_one");
  EXPECT_EQ(one.wait(), 0) << one.err();
  const std::string one_out = one.out();
  EXPECT_EQ(std::count(one_out.begin(), one_out.end(), '\n'), 1) << one_out;
  // A folder without one image is named too.
  fs::create_directories(root_ + "/empty_photos");
  Child empty(
      {"predict", "--device", "cpu", "--model", root_ + "/m.st", root_ + "/empty_photos", extra},
      root_ + "/predict_empty");
  EXPECT_EQ(empty.wait(), 1);
  EXPECT_NE(empty.err().find(root_ + "/empty_photos: a folder without .jpg, .jpeg or .png files"),
            std::string::npos)
      << empty.err();
}

TEST(CatdogVersion, PrintsTheVersionAndTheCommit) {
  const std::string prefix =
      (fs::temp_directory_path() / ("loom_catdog_version_" + std::to_string(::getpid()))).string();
  Child c({"--version"}, prefix);
  EXPECT_EQ(c.wait(), 0) << c.err();
  const std::string out = c.out();
  EXPECT_EQ(out.rfind("loom 0.", 0), 0u) << out;
  EXPECT_NE(out.find("(commit "), std::string::npos) << out;
  EXPECT_TRUE(out.find("built with CUDA runtime ") != std::string::npos ||
              out.find("built without CUDA") != std::string::npos)
      << out;
  fs::remove(prefix + ".out");
  fs::remove(prefix + ".err");
}

TEST_F(Report, TrainSummaryPrintsTheLayerTableBeforeTraining) {
  ASSERT_EQ(train_status_, 0) << train_text_;
  const size_t table = train_out_.find("Layer (type)");
  ASSERT_NE(table, std::string::npos) << train_out_;
  EXPECT_NE(train_out_.find("Output Shape"), std::string::npos);
  EXPECT_NE(train_out_.find("(None, 1)"), std::string::npos) << train_out_;  // the sigmoid head
  EXPECT_NE(train_out_.find("Total params: "), std::string::npos);
  EXPECT_LT(table, train_out_.find("validation accuracy: ")) << train_out_;
}

}  // namespace
}  // namespace loom
