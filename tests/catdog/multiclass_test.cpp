// loom-catdog on more than two class folders (issue 16, item 6, and predict --top-k of item 5):
// a 3-class folder trains with softmax cross-entropy and beats chance, evaluate and predict
// report the three classes, --top-k lists them sorted with probabilities summing to 1, and the
// bad inputs (train and val of other classes, a --top-k out of range, a resume onto other
// classes) end with one clear message.
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "app_runner.h"
#include "class_folder.h"
#include "testing.h"

namespace loom {
namespace {

using testing::Child;
namespace fs = std::filesystem;

const std::vector<std::string> kClasses = {"bird", "cat", "dog"};

// What loom-catdog predict printed for TwoClassModelFile's file at commit 87c7b81 (text, and
// --json on one line per image).
const char* const GOLDEN_TEXT =
    "dog 0.65  DIR/data/val/cat/0.png\n"
    "dog 0.64  DIR/data/val/cat/1.png\n"
    "cat 0.55  DIR/data/val/cat/2.png\n"
    "cat 0.65  DIR/data/val/dog/0.png\n"
    "dog 0.56  DIR/data/val/dog/1.png\n"
    "cat 0.63  DIR/data/val/dog/2.png\n"
    "6 images: cat 3, dog 3\n";
const char* const GOLDEN_JSON = R"([
  {"image": "DIR/data/val/cat/0.png", "class": "dog", "probability": 0.6524805426597595, "outputs": [0.6524805426597595]},
  {"image": "DIR/data/val/cat/1.png", "class": "dog", "probability": 0.639934778213501, "outputs": [0.639934778213501]},
  {"image": "DIR/data/val/cat/2.png", "class": "cat", "probability": 0.5456571280956268, "outputs": [0.45434287190437317]},
  {"image": "DIR/data/val/dog/0.png", "class": "cat", "probability": 0.6507886648178101, "outputs": [0.34921133518218994]},
  {"image": "DIR/data/val/dog/1.png", "class": "dog", "probability": 0.5569185018539429, "outputs": [0.5569185018539429]},
  {"image": "DIR/data/val/dog/2.png", "class": "cat", "probability": 0.6303943693637848, "outputs": [0.3696056306362152]}
])";

class Multiclass : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    root_ = (fs::temp_directory_path() / ("loom_catdog_multiclass_" + std::to_string(::getpid())))
                .string();
    fs::remove_all(root_);
    testing::make_class_folder(root_ + "/data", kClasses, 16, 8, 7);
    Child c({"train", "--data", root_ + "/data", "--epochs", "3", "--batch-size", "8", "--device",
             "cpu", "--workers", "0", "--out", root_ + "/m3.st"},
            root_ + "/train");
    train_status_ = c.wait();
    train_out_ = c.out() + c.err();
  }
  static void TearDownTestSuite() { fs::remove_all(root_); }

  static std::pair<int, std::string> run(const std::vector<std::string>& args,
                                         const std::string& tag) {
    return testing::run_to_end(args, root_ + "/" + tag);
  }
  static std::string prompt_error(const std::vector<std::string>& args,
                                  const std::vector<std::string>& fragments,
                                  double max_seconds = 5.0) {
    return testing::expect_prompt_error(args, root_ + "/bad", fragments, max_seconds);
  }

  static std::string root_, train_out_;
  static int train_status_;
};
std::string Multiclass::root_, Multiclass::train_out_;
int Multiclass::train_status_ = -1;

// The figure after `label` in `text` (its last occurrence), or -1.
double number_after(const std::string& text, const std::string& label) {
  const size_t at = text.rfind(label);
  return at == std::string::npos ? -1.0 : std::atof(text.c_str() + at + label.size());
}

TEST_F(Multiclass, ThreeClassFoldersTrainASoftmaxHeadThatBeatsChance) {
  ASSERT_EQ(train_status_, 0) << train_out_;
  EXPECT_NE(train_out_.find("48 training and 24 validation images, classes bird cat dog"),
            std::string::npos)
      << train_out_;
  // Chance is 1/3; the colours tell the classes apart within three epochs.
  const double accuracy = number_after(train_out_, "validation accuracy: ");
  EXPECT_GT(accuracy, 0.6) << train_out_;
  const io::LoadedModel loaded = io::load_model(root_ + "/m3.st");
  EXPECT_EQ(loaded.preprocessing.class_names, kClasses);
  const Tensor p = nn::predict(*loaded.model, zeros({2, 3, 64, 64}));
  EXPECT_EQ(p.shape(), (Shape{2, 3}));  // one softmax output per class
  for (int64_t i = 0; i < 2; ++i) EXPECT_NEAR(sum(p.select(0, i)).item<double>(), 1.0, 1e-6);
  // seed_cnn's 410,753 parameters with one output, and 128 weights + 1 bias per further output.
  EXPECT_EQ(loaded.model->num_parameters(), 410753 + 2 * 129);
}

TEST_F(Multiclass, EvaluateReportsTheThreeByThreeMatrixAndEachClass) {
  ASSERT_EQ(train_status_, 0) << train_out_;
  const auto [status, text] = run({"evaluate", "--model", root_ + "/m3.st", "--data",
                                   root_ + "/data", "--device", "cpu", "--workers", "0"},
                                  "eval");
  ASSERT_EQ(status, 0) << text;
  EXPECT_NE(text.find("24 images"), std::string::npos) << text;
  // Each class's row of the matrix holds its 8 images.
  const size_t matrix = text.find("confusion matrix");
  ASSERT_NE(matrix, std::string::npos) << text;
  std::istringstream rows(text.substr(matrix));
  std::string line;
  std::getline(rows, line);  // the title
  std::getline(rows, line);  // the column names
  std::istringstream columns(line);
  std::vector<std::string> names;
  for (std::string name; columns >> name;) names.push_back(name);
  EXPECT_EQ(names, kClasses) << line;
  for (const std::string& name : kClasses) {
    ASSERT_TRUE(std::getline(rows, line)) << text;
    std::istringstream cells(line);
    std::string row_name;
    int64_t a = -1, b = -1, c = -1;
    cells >> row_name >> a >> b >> c;
    EXPECT_EQ(row_name, name) << line;
    EXPECT_EQ(a + b + c, 8) << line;
  }
  // The per-class table: "name precision recall f1 support", one row per class.
  std::istringstream table(text.substr(text.find("precision")));
  std::getline(table, line);
  for (const std::string& name : kClasses) {
    ASSERT_TRUE(std::getline(table, line)) << text;
    std::istringstream cells(line);
    std::string row_name;
    double precision = -1, recall = -1, f1 = -1;
    int64_t support = -1;
    cells >> row_name >> precision >> recall >> f1 >> support;
    EXPECT_EQ(row_name, name) << line;
    EXPECT_GE(precision, 0.0) << line;
    EXPECT_LE(recall, 1.0) << line;
    EXPECT_GE(f1, 0.0) << line;
    EXPECT_EQ(support, 8) << line;
  }
  const auto [js, json_text] = run({"evaluate", "--json", "--model", root_ + "/m3.st", "--data",
                                    root_ + "/data", "--device", "cpu", "--workers", "0"},
                                   "eval_json");
  ASSERT_EQ(js, 0) << json_text;
  const auto j = nlohmann::json::parse(json_text);
  EXPECT_EQ(j["classes"], nlohmann::json(kClasses));
  ASSERT_EQ(j["confusion_matrix"].size(), 3u);
  int64_t diagonal = 0;
  for (size_t i = 0; i < 3; ++i) {
    ASSERT_EQ(j["confusion_matrix"][i].size(), 3u);
    diagonal += j["confusion_matrix"][i][i].get<int64_t>();
    EXPECT_EQ(j["per_class"][kClasses[i]]["support"].get<int64_t>(), 8);
  }
  EXPECT_NEAR(j["accuracy"].get<double>(), diagonal / 24.0, 1e-12);
}

TEST_F(Multiclass, PredictPrintsTheMostProbableClassAndTheCountsPerClass) {
  ASSERT_EQ(train_status_, 0) << train_out_;
  const auto [status, text] = run(
      {"predict", "--device", "cpu", "--model", root_ + "/m3.st", root_ + "/data/val"}, "predict");
  ASSERT_EQ(status, 0) << text;
  std::istringstream lines(text);
  std::string line;
  std::map<std::string, int> per_class;
  int images = 0;
  while (std::getline(lines, line) && images < 24) {
    char name[16], path[512];
    double p = 0;
    ASSERT_EQ(std::sscanf(line.c_str(), "%15s %lf %511s", name, &p, path), 3) << line;
    EXPECT_NE(std::find(kClasses.begin(), kClasses.end(), name), kClasses.end()) << line;
    EXPECT_GE(p, 1.0 / 3 - 0.005) << line;  // the largest of three probabilities, printed to 0.01
    EXPECT_LE(p, 1.0) << line;
    ++per_class[name];
    ++images;
  }
  EXPECT_EQ(images, 24) << text;
  char want[128];
  std::snprintf(want, sizeof want, "24 images: bird %d, cat %d, dog %d", per_class["bird"],
                per_class["cat"], per_class["dog"]);
  EXPECT_EQ(line, want) << text;
}

// Each image's N most probable classes, from the most probable down; all K of them are the
// model's softmax, summing to 1, and the first is the class predict names.
TEST_F(Multiclass, TopKListsTheMostProbableClassesInOrder) {
  ASSERT_EQ(train_status_, 0) << train_out_;
  const std::string image = root_ + "/data/val/cat/0.png";
  const auto [js, json_text] =
      run({"predict", "--json", "--top-k", "3", "--device", "cpu", "--model", root_ + "/m3.st",
           image, root_ + "/data/val/dog/1.png"},
          "topk_json");
  ASSERT_EQ(js, 0) << json_text;
  const auto j = nlohmann::json::parse(json_text);
  ASSERT_EQ(j.size(), 2u);
  for (const auto& result : j) {
    const auto& top = result["top_k"];
    ASSERT_EQ(top.size(), 3u) << result;
    EXPECT_EQ(top[0]["class"], result["class"]);
    EXPECT_EQ(top[0]["probability"], result["probability"]);
    double total = 0;
    std::vector<std::string> seen;
    for (size_t i = 0; i < 3; ++i) {
      const double p = top[i]["probability"].get<double>();
      if (i > 0) EXPECT_LE(p, top[i - 1]["probability"].get<double>()) << result;
      // The probability is the model's output for that class.
      const std::string name = top[i]["class"].get<std::string>();
      const size_t c =
          static_cast<size_t>(std::find(kClasses.begin(), kClasses.end(), name) - kClasses.begin());
      ASSERT_LT(c, 3u) << name;
      EXPECT_EQ(p, result["outputs"][c].get<double>()) << result;
      seen.push_back(name);
      total += p;
    }
    EXPECT_NEAR(total, 1.0, 1e-5) << result;
    std::sort(seen.begin(), seen.end());
    EXPECT_EQ(seen, kClasses) << result;
  }
  // The text: "cat 0.71, dog 0.20  PATH", the same classes and probabilities to 0.01.
  const auto [status, text] = run(
      {"predict", "--top-k", "2", "--device", "cpu", "--model", root_ + "/m3.st", image}, "topk");
  ASSERT_EQ(status, 0) << text;
  char first[16], second[16], path[512];
  double p1 = 0, p2 = 0;
  ASSERT_EQ(std::sscanf(text.c_str(), "%15s %lf, %15s %lf %511s", first, &p1, second, &p2, path), 5)
      << text;
  const auto& top = j[0]["top_k"];
  EXPECT_EQ(first, top[0]["class"].get<std::string>()) << text;
  EXPECT_EQ(second, top[1]["class"].get<std::string>()) << text;
  EXPECT_NEAR(p1, top[0]["probability"].get<double>(), 0.005) << text;
  EXPECT_NEAR(p2, top[1]["probability"].get<double>(), 0.005) << text;
  EXPECT_EQ(path, image);
  // --top-k 1 is the plain line.
  const auto [one_status, one] = run(
      {"predict", "--top-k", "1", "--device", "cpu", "--model", root_ + "/m3.st", image}, "top1");
  const auto [plain_status, plain] =
      run({"predict", "--device", "cpu", "--model", root_ + "/m3.st", image}, "plain");
  EXPECT_EQ(one_status, 0);
  EXPECT_EQ(one, plain);
}

TEST_F(Multiclass, TopKOutsideTheModelsClassesIsRefusedBeforeAnyImage) {
  ASSERT_EQ(train_status_, 0) << train_out_;
  const std::string image = root_ + "/data/val/cat/0.png";
  for (const char* k : {"0", "4", "-1"}) {
    prompt_error({"predict", "--top-k", k, "--device", "cpu", "--model", root_ + "/m3.st", image},
                 {std::string("--top-k ") + k + ": expected 1 to 3", "m3.st", "[bird, cat, dog]"});
  }
}

// The train and val folders must hold the same classes: the message names both sets.
TEST_F(Multiclass, TrainAndValOfOtherClassesEndWithBothLists) {
  const std::string data = root_ + "/mismatch";
  testing::make_class_folder(data, kClasses, 2, 2, 9);
  fs::remove_all(data + "/val/dog");
  prompt_error({"train", "--data", data, "--epochs", "1", "--device", "cpu", "--workers", "0",
                "--out", root_ + "/never.st"},
               {"hold different class folders: [bird, cat, dog] and [bird, cat]"}, 20.0);
  EXPECT_FALSE(fs::exists(root_ + "/never.st"));
  // One class folder only.
  const std::string one = root_ + "/one_class";
  testing::make_class_folder(one, {"cat"}, 2, 2, 9);
  prompt_error({"train", "--data", one, "--epochs", "1", "--device", "cpu", "--workers", "0",
                "--out", root_ + "/never.st"},
               {"training needs at least 2 class folders, found [cat]"}, 20.0);
  // A class folder with no image that decodes is an error naming it, as for two classes.
  const std::string broken = root_ + "/broken_class";
  testing::make_class_folder(broken, kClasses, 2, 2, 9);
  for (const auto& f : fs::directory_iterator(broken + "/train/bird"))
    std::ofstream(f.path()) << "not a png";
  prompt_error({"train", "--data", broken, "--epochs", "1", "--device", "cpu", "--workers", "0",
                "--out", root_ + "/never.st"},
               {"train/bird"}, 20.0);
}

// evaluate on a folder of other classes names both sets; a resume onto other classes names the
// checkpoint's.
TEST_F(Multiclass, OtherClassesThanTheModelsAreRefused) {
  ASSERT_EQ(train_status_, 0) << train_out_;
  const std::string two = root_ + "/two";
  testing::make_photo_folder(two, 4, 2, 3);
  prompt_error(
      {"evaluate", "--model", root_ + "/m3.st", "--data", two, "--device", "cpu", "--workers", "0"},
      {"[cat, dog] do not match the classes the model", "m3.st", "[bird, cat, dog]"}, 20.0);
  prompt_error(
      {"train", "--data", two, "--epochs", "4", "--batch-size", "8", "--device", "cpu", "--workers",
       "0", "--out", root_ + "/resumed.st", "--resume", root_ + "/m3.st.ckpt"},
      {"--resume", "trained on the classes [bird, cat, dog]", "holds [cat, dog]"}, 20.0);
}

// A model file whose outputs do not fit its classes (one logit, three class names) is refused
// by evaluate and predict, each naming the file.
TEST_F(Multiclass, AModelWhoseOutputsDoNotFitItsClassesIsRefused) {
  Generator gen(3);
  auto model = nn::seed_cnn(1, nn::Init::Keras, &gen);
  io::Preprocessing prep;
  prep.class_names = kClasses;
  io::save_model(root_ + "/misfit.st", *model, prep);
  testing::expect_clear_error(
      {"evaluate", "--model", root_ + "/misfit.st", "--data", root_ + "/data", "--device", "cpu",
       "--workers", "0"},
      root_ + "/bad",
      "misfit.st: the model outputs [24, 1] for a batch of 24, but its 3 classes need [N, 3]");
  testing::expect_clear_error({"predict", "--model", root_ + "/misfit.st", "--device", "cpu",
                               root_ + "/data/val/cat/0.png"},
                              root_ + "/bad",
                              "misfit.st: a one-output model needs 2 class names, it has 3");
  prep.class_names = {"cat"};
  io::save_model(root_ + "/one.st", *model, prep);
  prompt_error(
      {"predict", "--model", root_ + "/one.st", "--device", "cpu", root_ + "/data/val/cat/0.png"},
      {"one.st: its preprocessing names 1 class ([cat]); a model needs at least 2"});
}

// A two-class model file keeps the seed's head and rule (p = the second class's probability,
// "dog" when p >= 0.5, else "cat" with 1 - p): the lines below are what loom-catdog printed for
// this file before it took more classes (commit 87c7b81), with the folder shown as DIR. The file
// is made here, from seed_cnn's Keras initialisation with generator 17 (its head's weights
// scaled, its bias set); the images are make_photo_folder's with seed 21.
TEST(TwoClassModelFile, PredictsAsBeforeAndItsTopKIsBothClasses) {
  const fs::path dir =
      fs::temp_directory_path() / ("loom_catdog_two_class_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  testing::make_photo_folder((dir / "data").string(), 0, 3, 21);
  Generator gen(17);
  auto model = nn::seed_cnn(1, nn::Init::Keras, &gen);
  {  // the head's weights times 8 and a bias, so that the predictions spread over both classes
    NoGradGuard no_grad;
    Tensor head = model->state_dict().at("6.weight");
    head.copy_(head * 8.0);
    model->state_dict().at("6.bias").fill_(-1.3);
  }
  io::Preprocessing prep;
  prep.interpolation = data::Interpolation::Bilinear;
  prep.class_names = {"cat", "dog"};
  const std::string file = (dir / "two.st").string(), val = (dir / "data" / "val").string();
  io::save_model(file, *model, prep);
  const auto shown = [&](std::string text) {
    for (size_t at = text.find(dir.string()); at != std::string::npos; at = text.find(dir.string()))
      text.replace(at, dir.string().size(), "DIR");
    return text;
  };
  const auto [status, text] = testing::run_to_end(
      {"predict", "--device", "cpu", "--model", file, val}, (dir / "predict").string());
  ASSERT_EQ(status, 0) << text;
  EXPECT_EQ(shown(text), GOLDEN_TEXT);
  const auto [js, json_text] = testing::run_to_end(
      {"predict", "--json", "--device", "cpu", "--model", file, val}, (dir / "json").string());
  ASSERT_EQ(js, 0) << json_text;
  const auto j = nlohmann::json::parse(json_text);
  const nlohmann::json before = nlohmann::json::parse(GOLDEN_JSON);
  ASSERT_EQ(j.size(), before.size()) << json_text;
  for (size_t i = 0; i < j.size(); ++i) {
    EXPECT_EQ(shown(j[i]["image"].get<std::string>()), before[i]["image"].get<std::string>());
    EXPECT_EQ(j[i]["class"], before[i]["class"]) << json_text;
    EXPECT_NEAR(j[i]["probability"].get<double>(), before[i]["probability"].get<double>(), 1e-6)
        << json_text;
    ASSERT_EQ(j[i]["outputs"].size(), 1u);
    EXPECT_NEAR(j[i]["outputs"][0].get<double>(), before[i]["outputs"][0].get<double>(), 1e-6)
        << json_text;
    EXPECT_FALSE(j[i].contains("top_k"));  // only with --top-k
  }
  // --top-k 2: the predicted class with its probability, then the other with the rest.
  const auto [ks, top_text] = testing::run_to_end(
      {"predict", "--json", "--top-k", "2", "--device", "cpu", "--model", file, val},
      (dir / "top").string());
  ASSERT_EQ(ks, 0) << top_text;
  const auto top = nlohmann::json::parse(top_text);
  ASSERT_EQ(top.size(), j.size());
  for (size_t i = 0; i < top.size(); ++i) {
    const auto& k = top[i]["top_k"];
    ASSERT_EQ(k.size(), 2u) << top[i];
    EXPECT_EQ(k[0]["class"], j[i]["class"]);
    EXPECT_EQ(k[0]["probability"], j[i]["probability"]);
    EXPECT_NE(k[1]["class"], k[0]["class"]);
    EXPECT_GE(k[0]["probability"].get<double>(), k[1]["probability"].get<double>());
    EXPECT_NEAR(k[0]["probability"].get<double>() + k[1]["probability"].get<double>(), 1.0, 1e-12);
  }
  testing::expect_prompt_error({"predict", "--top-k", "3", "--device", "cpu", "--model", file, val},
                               (dir / "bad").string(), {"--top-k 3: expected 1 to 2", "[cat, dog]"},
                               5.0);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace loom
