// Writes the seed corpus of fuzz/safetensors_fuzz.cpp into $LOOM_SAFETENSORS_CORPUS (skipped
// when unset): valid files of every dtype, a model file, a checkpoint, and broken variants.
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "io/checkpoint.h"
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
  const std::string all = io::serialize_safetensors(
      {{"f", randn({2, 3}, kFloat32, &gen)}, {"d", randn({2}, kFloat64, &gen)},
       {"i", randint(0, 9, {3}, kInt64, &gen)}, {"j", randint(0, 9, {1, 1}, kInt32, &gen)},
       {"u", randint(0, 9, {4}, kUInt8, &gen)}, {"s", scalar_tensor(1.0)}},
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

}  // namespace
}  // namespace loom
