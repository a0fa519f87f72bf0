// loom-catdog's CPU path end to end (train one epoch, evaluate, predict) on a generated photo
// folder, and every bad input ending with one clear message and a non-zero exit, never a crash.
#include <cstdlib>
#include <nlohmann/json.hpp>

#include "app_runner.h"
#include "catdog/data_source.h"
#include "testing.h"
#include "vision/data_split.h"

namespace loom {
namespace {

using testing::Child;
namespace fs = std::filesystem;

class Catdog : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    root_ = (fs::temp_directory_path() / ("loom_catdog_" + std::to_string(::getpid()))).string();
    fs::remove_all(root_);
    testing::make_photo_folder(root_ + "/data", 12, 6, 1);
    // One trained model for the evaluate and predict tests.
    Child c({"train", "--data", root_ + "/data", "--epochs", "1", "--batch-size", "8", "--device",
             "cpu", "--workers", "0", "--out", root_ + "/m.safetensors"},
            root_ + "/train");
    train_status_ = c.wait();
    train_out_ = c.out() + c.err();
  }
  static void TearDownTestSuite() { fs::remove_all(root_); }

  static std::pair<int, std::string> run(const std::vector<std::string>& args,
                                         const std::string& tag) {
    return testing::run_to_end(args, root_ + "/" + tag);
  }
  static void expect_clear_error(const std::vector<std::string>& args,
                                 const std::string& fragment) {
    testing::expect_clear_error(args, root_ + "/bad", fragment);
  }

  static std::string root_;
  static int train_status_;
  static std::string train_out_;
};
std::string Catdog::root_;
int Catdog::train_status_ = -1;
std::string Catdog::train_out_;

TEST_F(Catdog, TrainsOneEpochAndWritesModelMetricsAndCheckpoint) {
  ASSERT_EQ(train_status_, 0) << train_out_;
  EXPECT_NE(train_out_.find("24 training and 12 validation images, classes cat dog"),
            std::string::npos)
      << train_out_;
  EXPECT_NE(train_out_.find("validation accuracy: "), std::string::npos);
  EXPECT_TRUE(fs::exists(root_ + "/m.safetensors"));
  EXPECT_TRUE(fs::exists(root_ + "/m.safetensors.ckpt"));
  const std::string csv = testing::read_text(root_ + "/m.metrics.csv");
  EXPECT_EQ(csv.rfind("epoch,accuracy,loss,lr,val_accuracy,val_loss\n1,", 0), 0u) << csv;
  EXPECT_TRUE(fs::exists(root_ + "/m.metrics.jsonl"));
  // The chart command works from anywhere: the script and the CSV by absolute path.
  // LOOM_SOURCE_DIR (set by CTest) rather than __FILE__, which ccache's base_dir makes relative.
  const char* source_dir = std::getenv("LOOM_SOURCE_DIR");
  ASSERT_NE(source_dir, nullptr) << "run the test through ctest";
  const fs::path source_root = source_dir;
  const std::string script = (source_root / "tools" / "plot_metrics.py").string();
  EXPECT_NE(train_out_.find("(chart: python3 " + script + " " + root_ +
                            "/m.metrics.csv --saved-epoch 1)"),
            std::string::npos)
      << train_out_;
  // The default recipe: the torchvision augmentation, bilinear resizing (recorded for evaluate
  // and predict), Adam, no schedule.
  EXPECT_NE(
      train_out_.find(
          "augment torchvision on the CPU, resize bilinear, weight decay 0, lr schedule constant"),
      std::string::npos)
      << train_out_;
  EXPECT_EQ(io::load_model(root_ + "/m.safetensors").preprocessing.interpolation,
            data::Interpolation::Bilinear);
}

// --tensorboard makes its folder and fills its train/ and validation/ runs with an event file
// each (Keras' layout); a path that cannot be a folder is refused before any photograph is read.
TEST_F(Catdog, TensorBoardEventFilesGoIntoAFolderItMakes) {
  const std::string dir = root_ + "/tb/run1";
  const auto [status, out] =
      run({"train", "--data", root_ + "/data", "--epochs", "1", "--batch-size", "8", "--device",
           "cpu", "--workers", "0", "--out", root_ + "/tb.safetensors", "--tensorboard", dir},
          "tensorboard");
  ASSERT_EQ(status, 0) << out;
  int runs = 0;
  for (const auto& run_dir : fs::directory_iterator(dir)) {
    const std::string run = run_dir.path().filename().string();
    EXPECT_TRUE(run == "train" || run == "validation") << run;
    ++runs;
    int files = 0;
    for (const auto& entry : fs::directory_iterator(run_dir.path())) {
      EXPECT_EQ(entry.path().filename().string().rfind("events.out.tfevents.", 0), 0u)
          << entry.path();
      EXPECT_GT(fs::file_size(entry.path()), 0u);
      ++files;
    }
    EXPECT_EQ(files, 1) << run;
  }
  EXPECT_EQ(runs, 2);
  std::ofstream(root_ + "/not_a_folder") << "x";
  expect_clear_error(
      {"train", "--data", root_ + "/data", "--epochs", "1", "--device", "cpu", "--out",
       root_ + "/tb2.safetensors", "--tensorboard", root_ + "/not_a_folder"},
      "--tensorboard");
}

TEST_F(Catdog, EvaluatePrintsAccuracyLossAndConfusion) {
  ASSERT_EQ(train_status_, 0);
  const auto [status, text] = run({"evaluate", "--model", root_ + "/m.safetensors", "--data",
                                   root_ + "/data", "--device", "cpu"},
                                  "eval");
  ASSERT_EQ(status, 0) << text;
  EXPECT_NE(text.find("12 images"), std::string::npos) << text;
  EXPECT_NE(text.find("accuracy 0."), std::string::npos) << text;
  EXPECT_NE(text.find("confusion matrix"), std::string::npos);
  // The two rows of the matrix add up to the 6 + 6 images.
  const size_t cat_row = text.rfind("cat ");
  int a = 0, b = 0, c = 0, d = 0;
  ASSERT_EQ(std::sscanf(text.c_str() + cat_row, " cat %d %d dog %d %d", &a, &b, &c, &d), 4) << text;
  EXPECT_EQ(a + b, 6);
  EXPECT_EQ(c + d, 6);
}

TEST_F(Catdog, PredictPrintsOneLinePerImageAndJson) {
  ASSERT_EQ(train_status_, 0);
  const std::string dog = root_ + "/data/val/dog/0.png", cat = root_ + "/data/val/cat/1.png";
  const auto [status, text] =
      run({"predict", "--device", "cpu", "--model", root_ + "/m.safetensors", dog, cat}, "predict");
  ASSERT_EQ(status, 0) << text;
  std::istringstream lines(text);
  std::string line;
  int count = 0, summaries = 0;
  std::map<std::string, int> per_class;
  while (std::getline(lines, line)) {
    if (count == 2) {  // two images end with the counts per class
      char want[64];
      std::snprintf(want, sizeof want, "2 images: cat %d, dog %d", per_class["cat"],
                    per_class["dog"]);
      EXPECT_EQ(line, want);
      ++summaries;
      continue;
    }
    char name[8];
    double p = 0;
    ASSERT_EQ(std::sscanf(line.c_str(), "%7s %lf", name, &p), 2) << line;
    EXPECT_TRUE(std::string(name) == "cat" || std::string(name) == "dog") << line;
    EXPECT_GE(p, 0.5);
    EXPECT_LE(p, 1.0);
    ++per_class[name];
    ++count;
  }
  EXPECT_EQ(count, 2);
  EXPECT_EQ(summaries, 1) << text;
  const auto [js, json_text] = run({"predict", "--json", "--device", "cpu", "--model",
                                    root_ + "/m.safetensors", "--dump", root_ + "/dump.st", dog},
                                   "json");
  ASSERT_EQ(js, 0) << json_text;
  const auto j = nlohmann::json::parse(json_text);
  ASSERT_EQ(j.size(), 1u);
  const double p_dog = j[0]["outputs"][0].get<double>();
  EXPECT_EQ(j[0]["class"].get<std::string>(), p_dog >= 0.5 ? "dog" : "cat");
  EXPECT_NEAR(j[0]["probability"].get<double>(), p_dog >= 0.5 ? p_dog : 1 - p_dog, 1e-12);
  // The dump for tools/compare_torch.py: the preprocessed input in [0, 1] and the same output.
  const io::TensorFile dump = io::load_safetensors(root_ + "/dump.st");
  EXPECT_EQ(dump.at("inputs").shape(), (Shape{1, 3, 64, 64}));
  EXPECT_LE(max(dump.at("inputs")).item<double>(), 1.0);
  EXPECT_GT(max(dump.at("inputs")).item<double>(), 0.3);
  EXPECT_EQ(dump.at("outputs").item<double>(), p_dog);
}

TEST_F(Catdog, BadDataEndsWithAClearMessage) {
  expect_clear_error({"train", "--data", root_ + "/nowhere", "--device", "cpu"},
                     "not a usable data folder");
  // An empty class folder.
  const std::string empty = root_ + "/empty_class";
  testing::make_photo_folder(empty, 2, 2, 3);
  for (const auto& f : fs::directory_iterator(empty + "/train/dog")) fs::remove(f.path());
  expect_clear_error({"train", "--data", empty, "--device", "cpu", "--epochs", "1"}, "dog");
  // Flags out of range or unknown.
  expect_clear_error({"train", "--epochs", "0"}, "--epochs");
  expect_clear_error({"train", "--batch-size", "-3"}, "--batch-size");
  expect_clear_error({"train", "--model", "vgg"}, "--model");
  expect_clear_error({"train", "--data", root_ + "/data", "--device", "tpu"}, "--device");
  expect_clear_error({"train", "--data", root_ + "/data", "--device", "cpu", "--image-size", "32"},
                     "--image-size 32");
}

TEST_F(Catdog, BadModelFilesAndImagesEndWithAClearMessage) {
  ASSERT_EQ(train_status_, 0);
  const std::string good = root_ + "/m.safetensors", image = root_ + "/data/val/dog/0.png";
  const std::string bytes = testing::read_text(good);
  std::ofstream(root_ + "/truncated.st", std::ios::binary) << bytes.substr(0, bytes.size() / 3);
  expect_clear_error({"predict", "--model", root_ + "/truncated.st", image}, "truncated.st");
  std::ofstream(root_ + "/garbage.st", std::ios::binary) << std::string(4096, '\x7f');
  expect_clear_error({"predict", "--model", root_ + "/garbage.st", image}, "garbage.st");
  // A model file of another architecture: classic_cnn's spec over seed_cnn's weights.
  Generator gen(2);
  auto seed = nn::seed_cnn(nn::Init::Keras, &gen);
  auto classic = nn::classic_cnn(nn::Init::Keras, &gen);
  const io::NamedTensors tensors = seed->state_dict();
  io::Preprocessing prep;
  prep.class_names = {"cat", "dog"};
  io::save_safetensors(root_ + "/other.st", tensors,
                       io::detail::model_metadata(*classic, prep, "model"));
  expect_clear_error({"evaluate", "--model", root_ + "/other.st", "--data", root_ + "/data"},
                     "other.st");
  expect_clear_error({"predict", "--model", good, root_ + "/no_such.jpg"}, "no_such.jpg");
  std::ofstream(root_ + "/broken.jpg", std::ios::binary) << "\xff\xd8\xff not really a jpeg";
  expect_clear_error({"predict", "--model", good, root_ + "/broken.jpg"}, "broken.jpg");
  expect_clear_error({"predict", "--model", root_ + "/missing.st", image}, "missing.st");
  expect_clear_error({"predict", "--model", good}, "images");
}

TEST_F(Catdog, ResumeRefusesACheckpointOfAnotherRecipe) {
  ASSERT_EQ(train_status_, 0);
  expect_clear_error(
      {"train", "--data", root_ + "/data", "--device", "cpu", "--batch-size", "4", "--epochs", "2",
       "--out", root_ + "/r.st", "--resume", root_ + "/m.safetensors.ckpt"},
      "batch_size = 8, this run has 4");
}

TEST(CatdogData, FindsBothLayoutsAndExplainsTheLayout) {
  const fs::path root =
      fs::temp_directory_path() / ("loom_cd_layout_" + std::to_string(::getpid()));
  fs::create_directories(root / "a" / "train");
  fs::create_directories(root / "a" / "val");
  fs::create_directories(root / "b" / "training_set");
  fs::create_directories(root / "b" / "test_set");
  EXPECT_EQ(vision::split_of((root / "a").string())->val_dir, (root / "a" / "val").string());
  EXPECT_EQ(vision::split_of((root / "b").string())->train_dir,
            (root / "b" / "training_set").string());
  EXPECT_FALSE(vision::split_of(root.string()).has_value());
  EXPECT_NE(catdog::layout_help().find("DIR/train/<class>"), std::string::npos);
  fs::remove_all(root);
}

}  // namespace
}  // namespace loom
