// loom-catdog under hostile input (issue 14): --strict refuses any unreadable photograph and a
// class left without one decodable image is always an error; a model whose outputs are not
// finite is an error in predict and evaluate; bad output paths and non-finite numbers are refused
// before any data is read. Each ends within 2 s with a message naming the file or flag, and
// leaves every existing file as it was.
#include <sys/stat.h>

#include <chrono>
#include <cmath>
#include <set>

#include "app_runner.h"
#include "catdog/commands.h"
#include "catdog/pipeline.h"
#include "testing.h"
#include "vision/image_set.h"

namespace loom {
namespace {

namespace fs = std::filesystem;

class Hostile : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    root_ = (fs::temp_directory_path() / ("loom_catdog_hostile_" + std::to_string(::getpid())))
                .string();
    fs::remove_all(root_);
    testing::make_photo_folder(root_ + "/data", 4, 2, 9);
    fs::create_directories(root_ + "/run");
    const auto [status, text] =
        testing::run_to_end({"train", "--data", root_ + "/data", "--epochs", "1", "--batch-size",
                             "4", "--device", "cpu", "--workers", "0", "--out", root_ + "/m.st"},
                            root_ + "/train");
    train_status_ = status;
    train_out_ = text;
  }
  static void TearDownTestSuite() { fs::remove_all(root_); }

  static std::vector<std::string> train_args() {
    return {"train",    "--data", root_ + "/data", "--epochs", "1",     "--batch-size",     "4",
            "--device", "cpu",    "--workers",     "0",        "--out", root_ + "/run/m.st"};
  }
  // `args` with `flag` set to `value` (replaced, or added: CLI11 takes a flag once).
  static std::vector<std::string> with_flag(std::vector<std::string> args, const std::string& flag,
                                            const std::string& value) {
    for (size_t i = 0; i + 1 < args.size(); ++i) {
      if (args[i] == flag) {
        args[i + 1] = value;
        return args;
      }
    }
    args.insert(args.end(), {flag, value});
    return args;
  }
  static std::string expect_prompt_error(const std::vector<std::string>& args,
                                         const std::vector<std::string>& fragments) {
    return testing::expect_prompt_error(args, root_ + "/bad", fragments);
  }
  // Refused up front: no data was looked at (the header line comes just before the decoding),
  // and the output is the one error line (CLI11 adds its --help hint).
  static void expect_refused_before_data(const std::vector<std::string>& args,
                                         const std::vector<std::string>& fragments) {
    const std::string text = expect_prompt_error(args, fragments);
    EXPECT_EQ(text.find("loom-catdog: data "), std::string::npos) << text;
    std::istringstream lines(text);
    int count = 0;
    for (std::string line; std::getline(lines, line);)
      count += !line.empty() && line.rfind("Run with --help", 0) != 0;
    EXPECT_EQ(count, 1) << text;
  }
  // A copy of the photo folder under `name`.
  static std::string data_copy(const std::string& name) {
    const std::string dir = root_ + "/" + name;
    fs::remove_all(dir);
    fs::copy(root_ + "/data", dir, fs::copy_options::recursive);
    return dir;
  }
  static void write_garbage(const std::string& path) {
    std::ofstream(path, std::ios::binary) << "not an image";
  }
  static std::set<std::string> names_in(const std::string& dir) {
    std::set<std::string> names;
    for (const auto& e : fs::directory_iterator(dir)) names.insert(e.path().filename().string());
    return names;
  }

  static std::string root_;
  static int train_status_;
  static std::string train_out_;
};
std::string Hostile::root_;
int Hostile::train_status_ = -1;
std::string Hostile::train_out_;

TEST_F(Hostile, StrictRefusesAnUnreadableImageInTrainAndEvaluate) {
  ASSERT_EQ(train_status_, 0) << train_out_;
  const std::string dir = data_copy("one_bad");
  write_garbage(dir + "/train/dog/bad.png");
  write_garbage(dir +
                "/val/cat/+first.jpg");  // first in its class folder (bad.png comes last in its)
  std::vector<std::string> strict = with_flag(train_args(), "--data", dir);
  strict.push_back("--strict");
  expect_prompt_error(strict, {dir + "/train/dog/bad.png", "--strict"});
  expect_prompt_error(
      {"evaluate", "--model", root_ + "/m.st", "--data", dir, "--device", "cpu", "--strict"},
      {dir + "/val/cat/+first.jpg", "--strict"});
  // Without --strict the photograph is left out with a warning naming it.
  const auto [status, text] = testing::run_to_end(
      {"evaluate", "--model", root_ + "/m.st", "--data", dir, "--device", "cpu"},
      root_ + "/lenient");
  EXPECT_EQ(status, 0) << text;
  EXPECT_NE(text.find("+first.jpg"), std::string::npos) << text;
  EXPECT_NE(text.find("4 images"), std::string::npos) << text;
  // A library caller's strict mode.
  catdog::TrainArgs a;
  a.data = dir;
  a.device = "cpu";
  a.epochs = 1;
  a.workers = 0;
  a.out = root_ + "/run/lib.st";
  a.strict = true;
  EXPECT_LOOM_ERROR(catdog::run_train(a), dir + "/train/dog/bad.png");
  EXPECT_FALSE(fs::exists(a.out));
}

TEST_F(Hostile, AClassWithoutOneDecodableImageIsAnError) {
  const std::string dir = data_copy("dead_class");
  for (const auto& f : fs::directory_iterator(dir + "/train/dog")) write_garbage(f.path().string());
  // Not even --strict is needed: a one-class model at 50% is never what was asked for.
  expect_prompt_error(with_flag(train_args(), "--data", dir), {dir + "/train/dog", "decod"});
  EXPECT_FALSE(fs::exists(root_ + "/run/m.st"));
}

TEST_F(Hostile, NonFiniteOutputsAreAnErrorInPredictAndEvaluate) {
  ASSERT_EQ(train_status_, 0) << train_out_;
  io::TensorFile file = io::load_safetensors(root_ + "/m.st");
  for (const auto& [name, t] : file.tensors)
    Tensor(t).fill_(std::nan(""));  // the handle shares the storage
  const std::string nan_model = root_ + "/nan.st", image = root_ + "/data/val/dog/1.png";
  io::save_safetensors(nan_model, file.tensors, file.metadata);
  const std::string text =
      expect_prompt_error({"predict", "--device", "cpu", "--model", nan_model, image},
                          {nan_model, image, "non-finite"});
  EXPECT_EQ(text.find("dog "), std::string::npos) << text;
  EXPECT_EQ(text.find("cat "), std::string::npos) << text;
  expect_prompt_error({"predict", "--json", "--device", "cpu", "--model", nan_model, image},
                      {nan_model, image, "non-finite"});
  expect_prompt_error(
      {"evaluate", "--device", "cpu", "--model", nan_model, "--data", root_ + "/data"},
      {nan_model, root_ + "/data/val/", "non-finite"});
}

TEST_F(Hostile, BadOutputPathsAreRefusedBeforeTheDataIsRead) {
  const std::string fifo = root_ + "/fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0644), 0);
  for (const std::string flag : {"--out", "--checkpoint", "--metrics"}) {
    SCOPED_TRACE(flag);
    expect_refused_before_data(with_flag(train_args(), flag, root_ + "/no_such/x"),
                               {flag, root_ + "/no_such", "does not exist"});
    expect_refused_before_data(with_flag(train_args(), flag, root_ + "/run"),
                               {flag, root_ + "/run", "is a folder"});
    expect_refused_before_data(with_flag(train_args(), flag, root_ + "/run/"),
                               {flag, "is a folder"});
    expect_refused_before_data(with_flag(train_args(), flag, root_ + "/m.st/x"),
                               {flag, root_ + "/m.st", "not a folder"});
    expect_refused_before_data(with_flag(train_args(), flag, ""), {flag, "empty"});
    // Replacing a FIFO (or a device, as root) with a regular file would damage it.
    expect_refused_before_data(with_flag(train_args(), flag, fifo),
                               {flag, fifo, "not a regular file"});
  }
  struct stat st {};
  ASSERT_EQ(::stat(fifo.c_str(), &st), 0);
  EXPECT_TRUE(S_ISFIFO(st.st_mode));
  // The JSON lines log beside --metrics too, and predict's --dump.
  fs::create_directories(root_ + "/run/log.jsonl");
  expect_refused_before_data(with_flag(train_args(), "--metrics", root_ + "/run/log.csv"),
                             {"--metrics", root_ + "/run/log.jsonl", "is a folder"});
  const std::string text =
      expect_prompt_error({"predict", "--device", "cpu", "--model", root_ + "/m.st", "--dump",
                           root_ + "/no_such/d.st", root_ + "/data/val/dog/1.png"},
                          {"--dump", root_ + "/no_such", "does not exist"});
  EXPECT_EQ(text.find("1.png\n"), std::string::npos)
      << "predicted before checking --dump: " << text;
}

TEST_F(Hostile, AnUnwritableFolderIsRefusedBeforeTheDataIsRead) {
  // root writes into a folder of mode 0555 regardless; sysfs refuses new files even to root.
  std::string folder = root_ + "/read_only";
  if (::geteuid() == 0) {
    if (!fs::is_directory("/sys"))
      GTEST_SKIP() << "running as root and /sys is absent: no folder root cannot write in";
    folder = "/sys";
  } else {
    fs::create_directories(folder);
    fs::permissions(folder, fs::perms::owner_read | fs::perms::owner_exec);
  }
  for (const std::string flag : {"--out", "--checkpoint", "--metrics"}) {
    SCOPED_TRACE(flag);
    expect_refused_before_data(with_flag(train_args(), flag, folder + "/loom_catdog_x"),
                               {flag, folder, "cannot create"});
  }
  if (folder != "/sys") fs::permissions(folder, fs::perms::owner_all);
}

TEST_F(Hostile, AFailedRunDamagesNoExistingFile) {
  const std::string dir = root_ + "/keep";
  fs::create_directories(dir);
  std::ofstream(dir + "/m.st") << "the previous model";
  std::ofstream(dir + "/m.st.ckpt") << "the previous checkpoint";
  const std::set<std::string> before = names_in(dir);
  const std::vector<std::string> args = with_flag(train_args(), "--out", dir + "/m.st");
  // --out's probe (beside it, in its folder) succeeds, then --metrics fails.
  expect_refused_before_data(with_flag(args, "--metrics", root_ + "/no_such/m.csv"),
                             {"--metrics", "does not exist"});
  // One file for two outputs: the model would overwrite the checkpoint (or the log) at the end.
  expect_refused_before_data(with_flag(args, "--checkpoint", dir + "/m.st"),
                             {"--checkpoint", "--out", dir + "/m.st"});
  expect_refused_before_data(with_flag(args, "--metrics", dir + "/m.st.ckpt"),
                             {"--metrics", "--checkpoint"});
  EXPECT_EQ(names_in(dir), before);  // no probe left behind
  EXPECT_EQ(testing::read_text(dir + "/m.st"), "the previous model");
  EXPECT_EQ(testing::read_text(dir + "/m.st.ckpt"), "the previous checkpoint");
}

// A copy of `from` (a model file or checkpoint) whose preprocessing asks for side x side images.
void with_input_side(const std::string& from, const std::string& to, int64_t side) {
  io::TensorFile file = io::load_safetensors(from);
  io::Preprocessing p = io::Preprocessing::from_json(file.metadata.at("loom.preprocessing"), from);
  p.height = p.width = side;
  file.metadata["loom.preprocessing"] = p.to_json();
  io::save_safetensors(to, file.tensors, file.metadata);
}

// A crafted file asking for 4096x4096 images of the 64x64 seed_cnn would have evaluate decode a
// whole folder at that size (up to 16 GiB): evaluate, predict and --resume refuse it from the
// spec alone, before any image is decoded (the first photograph is not an image at all, so
// decoding it would be the error), naming both sizes.
TEST_F(Hostile, APreprocessingSizeTheSpecDoesNotTakeIsRefusedBeforeDecoding) {
  ASSERT_EQ(train_status_, 0) << train_out_;
  const std::string model = root_ + "/huge_input.st", ckpt = root_ + "/huge_input.ckpt";
  with_input_side(root_ + "/m.st", model, 4096);
  with_input_side(root_ + "/m.st.ckpt", ckpt, 4096);
  const std::string dir = data_copy("huge_input");
  const std::string bad = dir + "/val/cat/+first.jpg";
  write_garbage(bad);
  const std::vector<std::string> sizes = {
      "asks for 3-channel 4096x4096 images", "its spec takes 60x60 to 65x65",
      "layer \"4\": Linear(3200 -> 128) takes inputs ending in 3200"};
  auto refused = [&](const std::vector<std::string>& args, const std::string& file) {
    std::vector<std::string> fragments = sizes;
    fragments.push_back(file);
    const auto start = std::chrono::steady_clock::now();
    const std::string text = expect_prompt_error(args, fragments);
    EXPECT_LT(std::chrono::steady_clock::now() - start, testing::scaled(std::chrono::seconds(2)));
    EXPECT_EQ(text.find("+first.jpg"), std::string::npos) << "decoded an image: " << text;
  };
  refused({"evaluate", "--model", model, "--data", dir, "--device", "cpu", "--strict"}, model);
  refused({"evaluate", "--model", ckpt, "--data", dir, "--device", "cpu", "--strict"}, ckpt);
  refused({"predict", "--device", "cpu", "--model", model, bad}, model);
  expect_refused_before_data(with_flag(train_args(), "--resume", ckpt),
                             {"--resume " + ckpt, sizes[0], sizes[1]});
  // The file as trained, at 64x64, still evaluates.
  const auto [status, text] = testing::run_to_end(
      {"evaluate", "--model", root_ + "/m.st", "--data", root_ + "/data", "--device", "cpu"},
      root_ + "/normal_size");
  EXPECT_EQ(status, 0) << text;
}

TEST_F(Hostile, NonFiniteNumbersAreRefusedByTheFlagParser) {
  for (const std::string flag : {"--lr", "--weight-decay"}) {
    for (const std::string value : {"nan", "NaN", "inf", "1e999"}) {
      SCOPED_TRACE(flag + " " + value);
      expect_refused_before_data(with_flag(train_args(), flag, value),
                                 {flag, value, "not a finite number"});
    }
  }
}

TEST_F(Hostile, LibraryCallersGetTheSameChecks) {
  catdog::TrainArgs a;
  a.data = root_ + "/nowhere";  // the checks come first: this is never looked at
  a.device = "cpu";
  a.epochs = 1;
  a.out = root_ + "/no_such/m.st";
  EXPECT_LOOM_ERROR(catdog::run_train(a), "--out " + root_ + "/no_such/m.st: the folder " + root_ +
                                              "/no_such does not exist");
  a.out = root_ + "/run/m.st";
  a.checkpoint = root_ + "/run";
  EXPECT_LOOM_ERROR(catdog::run_train(a), "--checkpoint " + root_ + "/run: is a folder");
  a.checkpoint.clear();
  a.data = root_ + "/data";
  a.lr = std::nan("");
  EXPECT_LOOM_ERROR(catdog::run_train(a), "--lr must be a finite number > 0, got nan");
  a.lr = 1e-3;
  a.out.clear();
  EXPECT_LOOM_ERROR(catdog::run_train(a), "--out: the path is empty");
  EXPECT_FALSE(fs::exists(root_ + "/run/m.st"));
}

// A model file's preprocessing sets the size every image is decoded to: a huge one must not cost
// the memory of a whole folder at that size, nor of a batch of them.
TEST(HostileInputSize, AFolderTooLargeAtTheModelsInputSizeIsRefusedBeforeDecoding) {
  const fs::path dir =
      fs::temp_directory_path() / ("loom_catdog_input_size_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  const std::vector<uint8_t> tiny = data::encode_png(full({4, 4, 3}, 90.0, TensorOptions(kUInt8)));
  for (const char* label : {"cat", "dog"}) {
    fs::create_directories(dir / label);
    for (int i = 0; i < 180; ++i)
      data::write_file((dir / label / (std::to_string(i) + ".png")).string(), tiny);
  }
  io::Preprocessing huge;
  huge.height = huge.width = 4096;  // 360 images x 48 MiB: 17 GiB decoded
  const auto start = std::chrono::steady_clock::now();
  EXPECT_LOOM_ERROR(vision::load_image_set(dir.string(), huge, 1), "over the limit of 16384 MiB");
  EXPECT_LT(std::chrono::steady_clock::now() - start, testing::scaled(std::chrono::seconds(2)));
  io::Preprocessing normal;
  normal.height = normal.width = 64;
  EXPECT_EQ(vision::load_image_set(dir.string(), normal, 1).images->size(), 360);
  EXPECT_EQ(catdog::eval_loader_options(normal, 64, kCPU, 0, data::OnBadInput::Skip).batch_size,
            64);
  EXPECT_EQ(catdog::eval_loader_options(huge, 64, kCPU, 0, data::OnBadInput::Skip).batch_size, 1)
      << "a batch of 4096x4096 images is 192 MiB each";
  fs::remove_all(dir);
}

// The spec is checked first where it pins the input size; a fully convolutional model (resnet18)
// takes any size, so there the limits above are what bound the memory.
TEST(HostileInputSize, TheSpecPinsTheSizeWhereItCan) {
  io::Preprocessing p;
  p.height = p.width = 4096;
  EXPECT_LOOM_ERROR(catdog::check_input_size(nn::seed_cnn()->spec_json(), p, "m.st"),
                    "m.st: its preprocessing asks for 3-channel 4096x4096 images, but its spec "
                    "takes 60x60 to 65x65");
  EXPECT_LOOM_ERROR(catdog::check_input_size(nn::classic_cnn()->spec_json(), p, "m.st"),
                    "takes 62x62 to 65x65");
  EXPECT_NO_THROW(catdog::check_input_size(nn::resnet18(1)->spec_json(), p, "m.st"));
  p.height = 64;
  EXPECT_LOOM_ERROR(catdog::check_input_size(nn::seed_cnn()->spec_json(), p, "m.st"),
                    "64x4096 images");
  p.width = 64;
  EXPECT_NO_THROW(catdog::check_input_size(nn::seed_cnn()->spec_json(), p, "m.st"));
  p.channels = 1;
  EXPECT_LOOM_ERROR(
      catdog::check_input_size(nn::seed_cnn()->spec_json(), p, "m.st"),
      "m.st: its preprocessing asks for 1-channel 64x64 images, but its spec does not take them "
      "(layer \"0\": Conv2d(3 -> 32) takes 3-channel images [3, H, W], gets [1, 64, 64])");
}

}  // namespace
}  // namespace loom
