// Model files and checkpoints: a saved model rebuilds with no code and predicts the same; a
// checkpoint restores optimizer and generator; every bad file names itself and its problem.
#include "loom/io/model_file.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "loom/io/checkpoint.h"
#include "testing.h"

namespace loom {
namespace {

namespace fs = std::filesystem;

class ModelFile : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("loom_mf_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  static io::Preprocessing prep() {
    io::Preprocessing p;
    p.class_names = {"cat", "dog"};
    p.mean = {0.5, 0.4, 0.3};
    p.std = {0.2, 0.25, 0.3};
    return p;
  }
  fs::path dir_;
};

TEST_F(ModelFile, RoundTripRebuildsTheModelAndItsPredictions) {
  Generator gen(3);
  auto model = nn::seed_cnn(nn::Init::Keras, &gen);
  io::save_model(path("m.safetensors"), *model, prep());
  const io::LoadedModel loaded = io::load_model(path("m.safetensors"));
  EXPECT_EQ(loaded.model->spec_json(), model->spec_json());
  EXPECT_EQ(loaded.preprocessing.class_names, prep().class_names);
  EXPECT_EQ(loaded.preprocessing.std, prep().std);
  EXPECT_EQ(loaded.preprocessing.rescale, 1.0 / 255.0);
  EXPECT_FALSE(loaded.model->is_training());
  const Tensor x = rand({2, 3, 64, 64}, kFloat32, &gen);
  EXPECT_EQ(nn::predict(*loaded.model, x).to_vector<float>(),
            nn::predict(*model, x).to_vector<float>());
  // PyTorch's names: the file's tensors are the state_dict's, with no prefix.
  const io::TensorFile file = io::load_safetensors(path("m.safetensors"));
  EXPECT_EQ(file.tensors.keys().front(), "0.weight");
  EXPECT_EQ(file.metadata.at("format"), "pt");
}

// A model file's spec implies float32 weights; bfloat16 weights are written as BF16 but refused
// on loading, as every dtype conversion is, naming the tensor and both dtypes.
TEST_F(ModelFile, BFloat16WeightsAreWrittenButRefusedAgainstTheSpec) {
  Generator gen(5);
  auto model = nn::seed_cnn(nn::Init::Keras, &gen);
  model->to(kBFloat16);
  io::save_model(path("b.safetensors"), *model, prep());
  EXPECT_EQ(io::load_safetensors(path("b.safetensors")).at("0.weight").dtype(), kBFloat16);
  EXPECT_LOOM_ERROR(io::load_model(path("b.safetensors")),
                    "0.weight is bfloat16, the model's float32");
}

TEST_F(ModelFile, TruncatedGarbageAndForeignFilesNameTheFileAndProblem) {
  Generator gen(4);
  auto model = nn::seed_cnn(nn::Init::Keras, &gen);
  io::save_model(path("m.safetensors"), *model, prep());
  const std::string bytes = io::read_file(path("m.safetensors"));
  std::ofstream(path("truncated"), std::ios::binary) << bytes.substr(0, bytes.size() - 100);
  EXPECT_LOOM_ERROR(io::load_model(path("truncated")), path("truncated"));
  std::ofstream(path("garbage"), std::ios::binary) << "this is not a model file at all, just text";
  EXPECT_LOOM_ERROR(io::load_model(path("garbage")), path("garbage"));
  EXPECT_LOOM_ERROR(io::load_model(path("missing")), path("missing"));
  // Safetensors, but not loom's: no spec.
  io::save_safetensors(path("plain"), {{"w", zeros({2})}});
  EXPECT_LOOM_ERROR(io::load_model(path("plain")), "not a loom model file");
  // The weights of another architecture under this spec.
  auto other = nn::classic_cnn(nn::Init::Keras, &gen);
  const io::NamedTensors tensors = other->state_dict();
  io::save_safetensors(path("mixed"), tensors, io::detail::model_metadata(*model, prep(), "model"));
  EXPECT_LOOM_ERROR(io::load_model(path("mixed")), "do not fit the architecture");
  // A spec that names no known module.
  io::Metadata bad_spec = io::detail::model_metadata(*model, prep(), "model");
  bad_spec["loom.spec"] = "{\"type\": \"Teleporter\", \"config\": {}}";
  io::save_safetensors(path("bad_spec"), tensors, bad_spec);
  EXPECT_LOOM_ERROR(io::load_model(path("bad_spec")), "cannot rebuild the model");
  io::Metadata future = io::detail::model_metadata(*model, prep(), "model");
  future["loom.format_version"] = "99";
  io::save_safetensors(path("future"), tensors, future);
  EXPECT_LOOM_ERROR(io::load_model(path("future")), "format version 99");
  io::Metadata odd_kind = io::detail::model_metadata(*model, prep(), "optimizer");
  io::save_safetensors(path("odd_kind"), tensors, odd_kind);
  EXPECT_LOOM_ERROR(io::load_model(path("odd_kind")), "unknown loom.kind");
}

TEST_F(ModelFile, PreprocessingJsonIsChecked) {
  EXPECT_EQ(io::Preprocessing::from_json(prep().to_json(), "x").mean, prep().mean);
  EXPECT_LOOM_ERROR(io::Preprocessing::from_json("{", "f.st"),
                    "f.st: loom.preprocessing: malformed JSON");
  io::Preprocessing p = prep();
  p.channels = 2;
  EXPECT_LOOM_ERROR(io::Preprocessing::from_json(p.to_json(), "f"), "2 channels");
  p = prep();
  p.height = 0;
  EXPECT_LOOM_ERROR(io::Preprocessing::from_json(p.to_json(), "f"),
                    "\"height\" must be an integer in [1, 4096], got 0");
  p = prep();
  p.mean = {0.1};
  EXPECT_LOOM_ERROR(io::Preprocessing::from_json(p.to_json(), "f"), "mean/std");
}

TEST_F(ModelFile, InterpolationRoundTripsAndOlderFilesReadAsNearest) {
  Generator gen(8);
  auto model = nn::seed_cnn(nn::Init::Keras, &gen);
  for (data::Interpolation i :
       {data::Interpolation::Area, data::Interpolation::Bilinear, data::Interpolation::Nearest}) {
    io::Preprocessing p = prep();
    p.interpolation = i;
    io::save_model(path("m.st"), *model, p);
    EXPECT_EQ(io::load_model(path("m.st")).preprocessing.interpolation, i)
        << data::interpolation_name(i);
  }
  // The field as written in the file: a name a Python reader can use.
  io::Preprocessing area = prep();
  area.interpolation = data::Interpolation::Area;
  EXPECT_EQ(nlohmann::json::parse(area.to_json()).at("interpolation"), "area");
  // A checkpoint carries it too (evaluate and predict also read checkpoints).
  optim::Adam optimizer(model->parameters());
  io::save_checkpoint(path("c.ckpt"), *model, optimizer, {}, area);
  EXPECT_EQ(io::read_checkpoint(path("c.ckpt")).preprocessing.interpolation,
            data::Interpolation::Area);
  EXPECT_EQ(io::load_model(path("c.ckpt")).preprocessing.interpolation, data::Interpolation::Area);
  // A file written before the field existed: its inputs were resized with nearest.
  nlohmann::json old = nlohmann::json::parse(area.to_json());
  old.erase("interpolation");
  io::Metadata metadata = io::detail::model_metadata(*model, area, "model");
  metadata["loom.preprocessing"] = old.dump();
  const io::NamedTensors tensors = model->state_dict();
  io::save_safetensors(path("old.st"), tensors, metadata);
  const io::LoadedModel loaded = io::load_model(path("old.st"));
  EXPECT_EQ(loaded.preprocessing.interpolation, data::Interpolation::Nearest);
  EXPECT_EQ(loaded.preprocessing.class_names, prep().class_names);
}

TEST_F(ModelFile, UnknownInterpolationNamesTheFileAndValue) {
  Generator gen(9);
  auto model = nn::seed_cnn(nn::Init::Keras, &gen);
  nlohmann::json j = nlohmann::json::parse(prep().to_json());
  j["interpolation"] = "bicubic";
  io::Metadata metadata = io::detail::model_metadata(*model, prep(), "model");
  metadata["loom.preprocessing"] = j.dump();
  const io::NamedTensors tensors = model->state_dict();
  io::save_safetensors(path("bicubic.st"), tensors, metadata);
  EXPECT_LOOM_ERROR(io::load_model(path("bicubic.st")),
                    path("bicubic.st") + ": preprocessing interpolation \"bicubic\"");
  // Not a string at all.
  j["interpolation"] = 2;
  EXPECT_LOOM_ERROR(io::Preprocessing::from_json(j.dump(), "f.st"),
                    "f.st: loom.preprocessing: \"interpolation\" must be a string");
  // The names are interpolation_name's, and nothing else parses.
  EXPECT_EQ(io::interpolation_from_name("area"), data::Interpolation::Area);
  EXPECT_EQ(io::interpolation_from_name("bilinear"), data::Interpolation::Bilinear);
  EXPECT_EQ(io::interpolation_from_name("nearest"), data::Interpolation::Nearest);
  EXPECT_FALSE(io::interpolation_from_name("Nearest").has_value());
  EXPECT_FALSE(io::interpolation_from_name("").has_value());
}

TEST_F(ModelFile, CheckpointRestoresOptimizerGeneratorAndState) {
  Generator gen(5);
  auto model = nn::seed_cnn(nn::Init::Keras, &gen);
  optim::Adam optimizer(model->parameters(), optim::GroupOptions().with_lr(3e-3));
  const Tensor x = rand({2, 3, 64, 64}, kFloat32, &gen);
  mean(model->forward(x)).backward();
  optimizer.step();
  default_generator().set_state(1234, 77);
  io::TrainingState s;
  s.epoch = 2;
  s.step_in_epoch = 3;
  s.global_step = 13;
  s.rng_seed = 1234;
  s.rng_offset = 77;
  s.loader_seed = 8;
  s.augment_seed = 9;
  s.loss_sum = scalar_tensor(1.25);
  s.correct_sum = scalar_tensor(7.0);
  s.samples_seen = 12;
  s.history_json = "[{\"epoch\":0,\"loss\":0.5},{\"epoch\":1,\"loss\":0.25}]";
  s.extra = {{"model", "seed_cnn"}};
  io::save_checkpoint(path("c.ckpt"), *model, optimizer, s, prep());

  Generator gen2(6);
  auto fresh = nn::seed_cnn(nn::Init::Keras, &gen2);
  optim::Adam fresh_opt(fresh->parameters());
  default_generator().set_state(1, 1);
  const io::TrainingState back = io::load_checkpoint(path("c.ckpt"), *fresh, fresh_opt);
  EXPECT_EQ(back.epoch, 2);
  EXPECT_EQ(back.step_in_epoch, 3);
  EXPECT_EQ(back.global_step, 13);
  EXPECT_EQ(back.loader_seed, 8u);
  EXPECT_EQ(back.augment_seed, 9u);
  EXPECT_EQ(back.samples_seen, 12);
  EXPECT_EQ(back.loss_sum.item<double>(), 1.25);
  EXPECT_EQ(back.correct_sum.item<double>(), 7.0);
  EXPECT_EQ(back.extra, s.extra);
  EXPECT_EQ(default_generator().seed(), 1234u);
  EXPECT_EQ(default_generator().offset(), 77u);
  EXPECT_EQ(fresh_opt.lr(), 3e-3);
  EXPECT_EQ(fresh_opt.step_count(0), 1);
  EXPECT_EQ(fresh->forward(x).to_vector<float>(), model->forward(x).to_vector<float>());
  const auto ms = optimizer.state_dict(), fs_ = fresh_opt.state_dict();
  for (const auto& [name, t] : ms.tensors)
    EXPECT_EQ(t.to_vector<float>(), fs_.tensors.at(name).to_vector<float>()) << name;
  // A checkpoint also loads as a model file, for evaluate/predict.
  EXPECT_EQ(io::load_model(path("c.ckpt")).model->spec_json(), model->spec_json());
}

TEST_F(ModelFile, CheckpointErrorsNameTheFile) {
  Generator gen(7);
  auto model = nn::seed_cnn(nn::Init::Keras, &gen);
  optim::Adam optimizer(model->parameters());
  io::save_checkpoint(path("c.ckpt"), *model, optimizer, {});
  auto other = nn::classic_cnn(nn::Init::Keras, &gen);
  optim::Adam other_opt(other->parameters());
  EXPECT_LOOM_ERROR(io::load_checkpoint(path("c.ckpt"), *other, other_opt), "another architecture");
  optim::SGD sgd(model->parameters(), optim::GroupOptions().with_lr(0.1));
  EXPECT_LOOM_ERROR(io::load_checkpoint(path("c.ckpt"), *model, sgd),
                    "optimizer state does not fit");
  io::save_model(path("m.st"), *model, prep());
  EXPECT_LOOM_ERROR(io::read_checkpoint(path("m.st")), "not a checkpoint");
  io::TrainingState half;
  half.loss_sum = scalar_tensor(1.0);
  EXPECT_LOOM_ERROR(io::save_checkpoint(path("h.ckpt"), *model, optimizer, half), "both be set");
  const std::string bytes = io::read_file(path("c.ckpt"));
  std::ofstream(path("t.ckpt"), std::ios::binary) << bytes.substr(0, bytes.size() / 2);
  EXPECT_LOOM_ERROR(io::load_checkpoint(path("t.ckpt"), *model, optimizer), path("t.ckpt"));
}

}  // namespace
}  // namespace loom

namespace loom {
namespace {

// Training and serving decode through Preprocessing::decode_options: what a model file says,
// and for a preprocessing of defaults exactly the decoder's own defaults but the size.
TEST(Preprocessing, DecodeOptionsAreTheModelFilesAndTheDecodersDefaults) {
  io::Preprocessing p;
  p.height = 48;
  p.width = 40;
  p.interpolation = data::Interpolation::Area;
  const data::DecodeOptions o = p.decode_options();
  EXPECT_EQ(o.height, 48);
  EXPECT_EQ(o.width, 40);
  EXPECT_EQ(o.interpolation, data::Interpolation::Area);
  EXPECT_FALSE(o.dct_scaling);
  const data::DecodeOptions defaults;
  EXPECT_EQ(io::Preprocessing().decode_options().interpolation, defaults.interpolation);
  EXPECT_EQ(io::Preprocessing().decode_options().max_pixels, defaults.max_pixels);
  const io::Preprocessing back = io::Preprocessing::from_json(p.to_json(), "test");
  EXPECT_EQ(back.decode_options().interpolation, o.interpolation);
  EXPECT_EQ(back.decode_options().height, o.height);
}

}  // namespace
}  // namespace loom
