// Writes the seed corpora of fuzz/safetensors_fuzz.cpp into $LOOM_SAFETENSORS_CORPUS (valid
// files of every dtype, a model file's head, broken variants) and of fuzz/model_file_fuzz.cpp
// into $LOOM_MODEL_CORPUS (whole small model files and checkpoints, deep and duplicate JSON);
// each skipped when its variable is unset.
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "loom/io/checkpoint.h"
#include "testing.h"

namespace loom {
namespace {

TEST(SafetensorsFuzzCorpus, Write) {
  const char* dir = std::getenv("LOOM_SAFETENSORS_CORPUS");
  if (dir == nullptr) GTEST_SKIP() << "LOOM_SAFETENSORS_CORPUS is not set";
  std::filesystem::create_directories(dir);
  const std::string root(dir);
  auto put = [&](const std::string& name, const std::string& bytes) {
    std::ofstream(root + "/" + name, std::ios::binary) << bytes;
  };
  Generator gen(1);
  const std::string all = io::serialize_safetensors({{"f", randn({2, 3}, kFloat32, &gen)},
                                                     {"d", randn({2}, kFloat64, &gen)},
                                                     {"i", randint(0, 9, {3}, kInt64, &gen)},
                                                     {"j", randint(0, 9, {1, 1}, kInt32, &gen)},
                                                     {"u", randint(0, 9, {4}, kUInt8, &gen)},
                                                     {"s", scalar_tensor(1.0)}},
                                                    {{"k", "v"}});
  put("all_dtypes.st", all);
  put("truncated.st", all.substr(0, all.size() - 7));
  put("header_only.st", all.substr(0, 40));
  put("empty.st", io::serialize_safetensors({}));
  Generator g2(2);
  auto model = nn::seed_cnn(nn::Init::Keras, &g2);
  const std::string path = root + "/model.tmp";
  io::Preprocessing prep;
  prep.class_names = {"cat", "dog"};
  io::save_model(path, *model, prep);
  // Keep the corpus small: the header of a real model file with a short data section.
  const std::string model_bytes = io::read_file(path);
  put("model_head.st", model_bytes.substr(0, 4096));
  std::filesystem::remove(path);
  size_t written = 0;
  for (const auto& entry : std::filesystem::directory_iterator(root)) {
    ++written;
    try {
      io::parse_safetensors(io::read_file(entry.path().string()), entry.path().string());
    } catch (const Error&) {
    }
  }
  EXPECT_GE(written, 5u);
}

// The model of fuzz/model_file_fuzz.cpp's checkpoints: small, so whole files fit the fuzzer's
// 1 MB inputs.
std::shared_ptr<nn::Sequential> corpus_model() {
  Generator gen(3);
  GeneratorGuard guard(gen);
  auto m = std::make_shared<nn::Sequential>();
  m->add(std::make_shared<nn::Conv2d>(3, 4, 3));
  m->add(std::make_shared<nn::ReLU>());
  m->add(std::make_shared<nn::MaxPool2d>(2));
  m->add(std::make_shared<nn::Flatten>());
  m->add(std::make_shared<nn::Linear>(4 * 3 * 3, 1));
  return m;
}

TEST(ModelFuzzCorpus, Write) {
  const char* dir = std::getenv("LOOM_MODEL_CORPUS");
  if (dir == nullptr) GTEST_SKIP() << "LOOM_MODEL_CORPUS is not set";
  const std::string root(dir);
  std::filesystem::create_directories(root);
  auto model = corpus_model();
  io::Preprocessing prep;
  prep.height = prep.width = 8;
  prep.class_names = {"cat", "dog"};
  io::save_model(root + "/model.st", *model, prep);
  optim::Adam adam(model->parameters(), optim::GroupOptions().with_lr(1e-3));
  nn::binary_cross_entropy_with_logits(model->forward(rand({2, 3, 8, 8})), rand({2, 1})).backward();
  adam.step();  // so the checkpoint holds Adam's moments
  io::TrainingState state;
  state.epoch = 1;
  state.history_json = R"([{"epoch": 0, "loss": 0.69, "val_accuracy": 0.5}])";
  io::save_checkpoint(root + "/checkpoint.st", *model, adam, state, prep);
  // Variants that reach the new checks at once: a spec nested deep, a duplicated key.
  const std::string bytes = io::read_file(root + "/model.st");
  io::TensorFile file = io::parse_safetensors(bytes, "model.st");
  io::Metadata deep = file.metadata, twice = file.metadata;
  deep["loom.spec"] = std::string(200, '[') + std::string(200, ']');
  twice["loom.preprocessing"] = R"({"height": 8, "height": 8})";
  std::ofstream(root + "/deep_spec.st", std::ios::binary)
      << io::serialize_safetensors(file.tensors, deep);
  std::ofstream(root + "/duplicate_key.st", std::ios::binary)
      << io::serialize_safetensors(file.tensors, twice);
  for (const char* name : {"model.st", "checkpoint.st", "deep_spec.st", "duplicate_key.st"}) {
    const auto size = std::filesystem::file_size(root + "/" + name);
    EXPECT_LT(size, 1u << 20) << name << " must fit the fuzzer's -max_len";
  }
  EXPECT_NO_THROW(io::load_model(root + "/model.st"));
  EXPECT_NO_THROW(io::read_checkpoint(root + "/checkpoint.st"));
  EXPECT_LOOM_ERROR(io::load_model(root + "/deep_spec.st"), "deep_spec.st");
  EXPECT_LOOM_ERROR(io::load_model(root + "/duplicate_key.st"), "duplicate_key.st");
}

}  // namespace
}  // namespace loom
