// seed_cnn and classic_cnn as Sequential models (their specs rebuild them without this code).
#include "loom/nn/models/cnn.h"

#include "loom/nn/activation.h"
#include "loom/nn/conv.h"
#include "loom/nn/linear.h"
#include "loom/nn/pooling.h"

namespace loom::nn {

std::shared_ptr<Sequential> seed_cnn(int64_t num_outputs, Init init, Generator* gen) {
  LOOM_CHECK(num_outputs >= 1, "seed_cnn: num_outputs must be at least 1, got ", num_outputs);
  auto model = std::make_shared<Sequential>();
  model->add(std::make_shared<Conv2d>(3, 32, 3, Conv2dOptions().stride(3)))
      .add(std::make_shared<ReLU>())
      .add(std::make_shared<MaxPool2d>(2))
      .add(std::make_shared<Flatten>())
      .add(std::make_shared<Dense>(32 * 10 * 10, 128))
      .add(std::make_shared<ReLU>())
      .add(std::make_shared<Dense>(128, num_outputs));
  model->init_parameters(init, gen);
  return model;
}

std::shared_ptr<Sequential> seed_cnn(Init init, Generator* gen) { return seed_cnn(1, init, gen); }

std::shared_ptr<Sequential> classic_cnn(int64_t num_outputs, Init init, Generator* gen) {
  LOOM_CHECK(num_outputs >= 1, "classic_cnn: num_outputs must be at least 1, got ", num_outputs);
  auto model = std::make_shared<Sequential>();
  model->add(std::make_shared<Conv2d>(3, 32, 3))
      .add(std::make_shared<ReLU>())
      .add(std::make_shared<MaxPool2d>(2))
      .add(std::make_shared<Conv2d>(32, 32, 3))
      .add(std::make_shared<ReLU>())
      .add(std::make_shared<MaxPool2d>(2))
      .add(std::make_shared<Flatten>())
      .add(std::make_shared<Dense>(32 * 14 * 14, 128))
      .add(std::make_shared<ReLU>())
      .add(std::make_shared<Dense>(128, num_outputs));
  model->init_parameters(init, gen);
  return model;
}

std::shared_ptr<Sequential> classic_cnn(Init init, Generator* gen) {
  return classic_cnn(1, init, gen);
}

}  // namespace loom::nn
