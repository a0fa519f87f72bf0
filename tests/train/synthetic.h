// A small in-memory image dataset for the training tests: 8x8 RGB images whose label is 1 when
// the left half is brighter than the right, so a tiny model learns it in a few steps.
#pragma once

#include <loom/loom.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

namespace loom::testing {

class HalvesDataset : public data::Dataset {
 public:
  HalvesDataset(int64_t count, uint64_t seed, int64_t size = 8) {
    Generator gen(seed);
    for (int64_t i = 0; i < count; ++i) {
      const int64_t label = i % 2;
      Tensor img = uniform({size, size, 3}, 0.0, 200.0, kFloat32, &gen);
      Tensor bright = img.narrow(1, label == 1 ? 0 : size / 2, size / 2);
      bright.copy_(bright + 55);
      examples_.push_back({img.to(kUInt8), label});
    }
  }
  int64_t size() const override { return static_cast<int64_t>(examples_.size()); }
  data::Example get(int64_t index) const override { return examples_[index]; }

 private:
  std::vector<data::Example> examples_;
};

// Conv + dropout + dense: a one-logit head for HalvesDataset (dropout draws from the default
// generator, so resume tests cover its state). Without dropout, N ranks of batch b compute
// the same maths as one rank of batch N*b (each rank's dropout masks are its own draws).
inline std::shared_ptr<nn::Sequential> tiny_model(uint64_t seed, int64_t size = 8,
                                                  bool dropout = true) {
  Generator gen(seed);
  auto model = std::make_shared<nn::Sequential>();
  model->add(std::make_shared<nn::Conv2d>(3, 4, 3, Conv2dOptions().padding(1), true,
                                          nn::Init::PyTorch, &gen));
  model->add(std::make_shared<nn::ReLU>());
  model->add(std::make_shared<nn::MaxPool2d>(2));
  model->add(std::make_shared<nn::Flatten>());
  if (dropout) model->add(std::make_shared<nn::Dropout>(0.25));
  model->add(
      std::make_shared<nn::Linear>(4 * (size / 2) * (size / 2), 1, true, nn::Init::PyTorch, &gen));
  return model;
}

// Loader options for the tests' datasets: the images rescaled to [0, 1].
inline data::DataLoaderOptions loader_options(int64_t batch, bool shuffle, uint64_t seed = 3) {
  data::DataLoaderOptions o;
  o.batch_size = batch;
  o.shuffle = shuffle;
  o.seed = seed;
  o.augment.rescale = 1.0 / 255.0;
  return o;
}

// A fresh empty folder in the system's temporary directory, named after `prefix`, this process
// and `name`.
inline std::string temp_dir(const std::string& prefix, const std::string& name) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() /
                                    (prefix + "_" + std::to_string(::getpid()) + "_" + name);
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir.string();
}

}  // namespace loom::testing
