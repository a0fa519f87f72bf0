// seed_cnn and classic_cnn as Sequential models (their specs rebuild them without this code).
#include "loom/nn/models/cnn.h"

#include "loom/nn/activation.h"
#include "loom/nn/conv.h"
#include "loom/nn/linear.h"
#include "loom/nn/pooling.h"

namespace loom::nn {

std::shared_ptr<Sequential> seed_cnn(Init init, Generator* gen) {
  auto model = std::make_shared<Sequential>();
  model->add(std::make_shared<Conv2d>(3, 32, 3, Conv2dOptions().stride(3)))
      .add(std::make_shared<ReLU>())
      .add(std::make_shared<MaxPool2d>(2))
      .add(std::make_shared<Flatten>())
      .add(std::make_shared<Dense>(32 * 10 * 10, 128))
      .add(std::make_shared<ReLU>())
      .add(std::make_shared<Dense>(128, 1));
  model->init_parameters(init, gen);
  return model;
}

std::shared_ptr<Sequential> classic_cnn(Init init, Generator* gen) {
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
      .add(std::make_shared<Dense>(128, 1));
  model->init_parameters(init, gen);
  return model;
}

}  // namespace loom::nn
