// loom-catdog train's recipe flags: --resize is recorded in the model file and predict decodes
// new photographs with it; --weight-decay trains with AdamW; --lr-schedule cosine decays the LR;
// --resume refuses a checkpoint of another resize, weight decay or schedule; bad values end with
// one clear message.
#include <nlohmann/json.hpp>

#include "app_runner.h"
#include "catdog/commands.h"
#include "testing.h"

namespace loom {
namespace {

namespace fs = std::filesystem;

class RecipeFlags : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    root_ =
        (fs::temp_directory_path() / ("loom_catdog_recipe_" + std::to_string(::getpid()))).string();
    fs::remove_all(root_);
    testing::make_photo_folder(root_ + "/data", 6, 3, 11);
    // 2 epochs of 3 batches with every recipe flag away from its default.
    const auto [status, text] = testing::run_to_end(train_args(), root_ + "/train");
    train_status_ = status;
    train_out_ = text;
  }
  static void TearDownTestSuite() { fs::remove_all(root_); }

  static std::vector<std::string> train_args() {
    return {"train",
            "--data",
            root_ + "/data",
            "--epochs",
            "2",
            "--batch-size",
            "4",
            "--device",
            "cpu",
            "--workers",
            "0",
            "--resize",
            "area",
            "--weight-decay",
            "0.05",
            "--lr-schedule",
            "cosine",
            "--out",
            root_ + "/area.st"};
  }
  static std::vector<std::string> with(std::vector<std::string> args,
                                       const std::vector<std::string>& more) {
    args.insert(args.end(), more.begin(), more.end());
    return args;
  }
  // `args` with `flag` set to `value` (replaced, or added when absent: CLI11 takes a flag once).
  static std::vector<std::string> with_flag(std::vector<std::string> args, const std::string& flag,
                                            const std::string& value) {
    for (size_t i = 0; i + 1 < args.size(); ++i) {
      if (args[i] == flag) {
        args[i + 1] = value;
        return args;
      }
    }
    return with(args, {flag, value});
  }
  static std::vector<std::string> with_flag(const std::string& flag, const std::string& value) {
    return with_flag(train_args(), flag, value);
  }
  // train_args() continued from `checkpoint` up to epoch 3, writing `out`.
  static std::vector<std::string> resume_args(const std::string& checkpoint,
                                              const std::string& out) {
    return with(with_flag(with_flag("--epochs", "3"), "--out", out), {"--resume", checkpoint});
  }
  static void expect_clear_error(const std::vector<std::string>& args,
                                 const std::string& fragment) {
    testing::expect_clear_error(args, root_ + "/bad", fragment);
  }

  static std::string root_;
  static int train_status_;
  static std::string train_out_;
};
std::string RecipeFlags::root_;
int RecipeFlags::train_status_ = -1;
std::string RecipeFlags::train_out_;

// A w x h image of smooth gradients plus noise, so that the three filters give different pixels.
Tensor textured_image(int64_t h, int64_t w, uint64_t seed) {
  Generator gen(seed);
  Tensor img = uniform({h, w, 3}, 0.0, 120.0, kFloat32, &gen);
  std::vector<float> ramp(static_cast<size_t>(h * w * 3));
  for (int64_t y = 0; y < h; ++y)
    for (int64_t x = 0; x < w; ++x)
      for (int64_t c = 0; c < 3; ++c)
        ramp[(y * w + x) * 3 + c] = float(130 * ((x * (c + 1) + y) % 37) / 36);
  return (img + from_vector(ramp, {h, w, 3})).to(kUInt8);
}

// The model input predict should build: the decode with these options, / 255, channels first.
Tensor expected_input(const std::string& path, data::Interpolation interpolation,
                      bool dct_scaling) {
  data::DecodeOptions o;
  o.height = o.width = 64;
  o.interpolation = interpolation;
  o.dct_scaling = dct_scaling;
  return (data::load_image(path, o).to(kFloat32) * (1.0 / 255.0)).permute({2, 0, 1}).contiguous();
}

TEST_F(RecipeFlags, TrainRecordsResizeAndUsesAdamWAndTheCosineSchedule) {
  ASSERT_EQ(train_status_, 0) << train_out_;
  EXPECT_NE(train_out_.find("resize area, weight decay 0.05, lr schedule cosine"),
            std::string::npos)
      << train_out_;
  EXPECT_EQ(io::load_model(root_ + "/area.st").preprocessing.interpolation,
            data::Interpolation::Area);
  const io::TensorFile ckpt = io::load_safetensors(root_ + "/area.st.ckpt");
  EXPECT_EQ(nlohmann::json::parse(ckpt.metadata.at("loom.optimizer")).at("type"), "AdamW");
  EXPECT_EQ(io::read_checkpoint(root_ + "/area.st.ckpt").preprocessing.interpolation,
            data::Interpolation::Area);
  // Cosine over 2 epochs: lr 1e-3 in the first, 1e-3 * (1 + cos(pi / 2)) / 2 = 5e-4 in the second.
  std::istringstream csv(testing::read_text(root_ + "/area.metrics.csv"));
  std::string line;
  std::vector<double> lrs;
  std::getline(csv, line);
  ASSERT_EQ(line, "epoch,accuracy,loss,lr,val_accuracy,val_loss");
  while (std::getline(csv, line)) {
    int epoch = 0;
    double accuracy = 0, loss = 0, lr = 0;
    ASSERT_EQ(std::sscanf(line.c_str(), "%d,%lf,%lf,%lf", &epoch, &accuracy, &loss, &lr), 4)
        << line;
    lrs.push_back(lr);
  }
  ASSERT_EQ(lrs.size(), 2u);
  EXPECT_NEAR(lrs[0], 1e-3, 1e-12);
  EXPECT_NEAR(lrs[1], 5e-4, 1e-12);
}

TEST_F(RecipeFlags, PredictAndEvaluateDecodeWithTheRecordedResize) {
  ASSERT_EQ(train_status_, 0) << train_out_;
  // Larger than the input size, so that nearest, bilinear and area differ; a PNG and a JPEG big
  // enough that libjpeg's DCT scaling would apply (predict decodes at full size, as PIL does).
  const std::string png = root_ + "/big.png", jpg = root_ + "/big.jpg";
  data::write_file(png, data::encode_png(textured_image(97, 83, 21)));
  data::write_file(jpg, data::encode_jpeg(textured_image(300, 260, 22), 95));
  const auto [status, text] =
      testing::run_to_end({"predict", "--device", "cpu", "--model", root_ + "/area.st", "--dump",
                           root_ + "/dump.st", png, jpg},
                          root_ + "/predict");
  ASSERT_EQ(status, 0) << text;
  const Tensor inputs = io::load_safetensors(root_ + "/dump.st").at("inputs");
  ASSERT_EQ(inputs.shape(), (Shape{2, 3, 64, 64}));
  const std::string files[2] = {png, jpg};
  for (int64_t i = 0; i < 2; ++i) {
    const Tensor got = inputs.narrow(0, i, 1).squeeze(0);
    EXPECT_TENSOR_NEAR(got, expected_input(files[i], data::Interpolation::Area, false), 1e-6, 0.0);
    // The test can tell the filters apart: the other decodes differ by whole grey levels.
    for (data::Interpolation other :
         {data::Interpolation::Nearest, data::Interpolation::Bilinear}) {
      EXPECT_GT(max(abs(got - expected_input(files[i], other, false))).item<double>(), 2.0 / 255.0)
          << files[i] << " " << data::interpolation_name(other);
    }
  }
  EXPECT_GT(max(abs(inputs.narrow(0, 1, 1).squeeze(0) -
                    expected_input(jpg, data::Interpolation::Area, true)))
                .item<double>(),
            1.0 / 255.0);
  // evaluate reads the same preprocessing (a smoke run: its decode is load_image_set's, shared
  // with train).
  const auto [es, etext] = testing::run_to_end(
      {"evaluate", "--device", "cpu", "--model", root_ + "/area.st", "--data", root_ + "/data"},
      root_ + "/evaluate");
  EXPECT_EQ(es, 0) << etext;
  EXPECT_NE(etext.find("6 images"), std::string::npos) << etext;
}

TEST_F(RecipeFlags, ResumeRefusesAnotherResizeWeightDecayOrSchedule) {
  ASSERT_EQ(train_status_, 0) << train_out_;
  const std::vector<std::string> resume = resume_args(root_ + "/area.st.ckpt", root_ + "/r.st");
  expect_clear_error(with_flag(resume, "--resize", "bilinear"),
                     "resize = area, this run has bilinear");
  expect_clear_error(with_flag(resume, "--resize", "nearest"),
                     "resize = area, this run has nearest");
  expect_clear_error(with_flag(resume, "--weight-decay", "0.01"),
                     "weight_decay = 0.05, this run has 0.01");
  expect_clear_error(with_flag(resume, "--weight-decay", "0"),
                     "weight_decay = 0.05, this run has 0");
  expect_clear_error(with_flag(resume, "--lr-schedule", "constant"),
                     "lr_schedule = cosine, this run has constant");
  expect_clear_error(with_flag(resume, "--init", "pytorch"), "init = keras, this run has pytorch");
  expect_clear_error(with_flag(resume, "--augment", "strong"),
                     "augment = torchvision, this run has strong");
  expect_clear_error(with_flag(resume, "--augment", "keras"),
                     "augment = torchvision, this run has keras");
  expect_clear_error(with(resume, {"--drop-last"}), "drop_last = false, this run has true");
  expect_clear_error(with_flag(resume, "--validation-from", "3"),
                     "validation = every epoch, this run has from epoch 3, every 1");
  // The same recipe resumes (the values compare as written, 0.05 included) and trains epoch 3.
  const auto [status, text] = testing::run_to_end(resume, root_ + "/resume");
  EXPECT_EQ(status, 0) << text;
  EXPECT_NE(text.find("resuming"), std::string::npos) << text;
}

TEST_F(RecipeFlags, ACheckpointFromBeforeTheFlagsCountsAsNearestAdamAndTheModelsSchedule) {
  ASSERT_EQ(train_status_, 0) << train_out_;
  io::TensorFile file = io::load_safetensors(root_ + "/area.st.ckpt");
  nlohmann::json training = nlohmann::json::parse(file.metadata.at("loom.training"));
  for (const char* key : {"resize", "weight_decay", "lr_schedule"}) training["extra"].erase(key);
  file.metadata["loom.training"] = training.dump();
  io::save_safetensors(root_ + "/old.ckpt", file.tensors, file.metadata);
  std::vector<std::string> resume = resume_args(root_ + "/old.ckpt", root_ + "/o.st");
  // The fields are checked in name order; each refusal names the next one that differs.
  expect_clear_error(resume, "lr_schedule = constant, this run has cosine");
  resume = with_flag(resume, "--lr-schedule", "constant");
  expect_clear_error(resume, "resize = nearest, this run has area");
  resume = with_flag(resume, "--resize", "nearest");
  expect_clear_error(resume, "weight_decay = 0, this run has 0.05");
}

TEST_F(RecipeFlags, BadValuesEndWithAClearMessage) {
  expect_clear_error(with_flag("--weight-decay", "-0.1"), "--weight-decay");
  expect_clear_error(with_flag("--resize", "cubic"), "--resize");
  expect_clear_error(with_flag("--lr-schedule", "linear"), "--lr-schedule");
  expect_clear_error(with_flag("--init", "xavier"), "--init");
  expect_clear_error(with_flag("--augment", "wild"), "--augment");
  expect_clear_error(with_flag("--stem-stride", "0"), "--stem-stride");
  expect_clear_error(with_flag("--stem-stride", "2"),
                     "--stem-stride 2: only resnet18 has a stem to stride (seed_cnn has");
  // 12 training images make no full batch of 16: with --drop-last no step would run.
  expect_clear_error(with(with_flag("--batch-size", "16"), {"--drop-last"}),
                     "--drop-last: 12 training images make no full batch of 16");
  // The library function checks them too (callers other than main's CLI11).
  catdog::TrainArgs args;
  args.data = root_ + "/data";
  args.device = "cpu";
  args.weight_decay = -0.1;
  EXPECT_LOOM_ERROR(catdog::run_train(args),
                    "--weight-decay must be a finite number >= 0, got -0.1");
  args.weight_decay = std::nan("");
  EXPECT_LOOM_ERROR(catdog::run_train(args), "--weight-decay");
  args.weight_decay = 0.0;
  args.resize = "cubic";
  EXPECT_LOOM_ERROR(catdog::run_train(args),
                    "--resize: expected nearest, bilinear or area, got \"cubic\"");
  args.resize = "area";
  args.lr_schedule = "linear";
  EXPECT_LOOM_ERROR(catdog::run_train(args),
                    "--lr-schedule: expected constant or cosine, got \"linear\"");
}

}  // namespace
}  // namespace loom
