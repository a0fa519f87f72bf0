// libFuzzer target for the readers of model files and checkpoints as the programs call them:
// load_model (the spec rebuilt and checked against the file's tensors), read_checkpoint, and
// load_checkpoint into a small model with Adam. Any bytes must give a result or a loom::Error,
// never a crash, a hang, a huge allocation or a sanitizer report. The bytes go through a file,
// as a user's download does. Seed corpus: tests/io/fuzz_corpus_test.cpp writes it.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>

#include "loom/io/checkpoint.h"
#include "loom/io/model_file.h"
#include "loom/nn/nn.h"
#include "loom/optim/adam.h"

namespace {

// The model the corpus' checkpoints were saved from (tests/io/fuzz_corpus_test.cpp).
std::shared_ptr<loom::nn::Sequential> corpus_model() {
  auto m = std::make_shared<loom::nn::Sequential>();
  m->add(std::make_shared<loom::nn::Conv2d>(3, 4, 3));
  m->add(std::make_shared<loom::nn::ReLU>());
  m->add(std::make_shared<loom::nn::MaxPool2d>(2));
  m->add(std::make_shared<loom::nn::Flatten>());
  m->add(std::make_shared<loom::nn::Linear>(4 * 3 * 3, 1));
  return m;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string path = (std::filesystem::temp_directory_path() /
                                   ("loom_model_fuzz_" + std::to_string(getpid()) + ".safetensors"))
                                      .string();
  std::ofstream(path, std::ios::binary | std::ios::trunc)
      .write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  try {
    loom::io::load_model(path);
  } catch (const loom::Error&) {
  }
  try {
    loom::io::read_checkpoint(path);
  } catch (const loom::Error&) {
  }
  try {
    auto model = corpus_model();
    loom::optim::Adam adam(model->parameters(), loom::optim::GroupOptions().with_lr(1e-3));
    loom::io::load_checkpoint(path, *model, adam);
  } catch (const loom::Error&) {
  }
  return 0;
}
