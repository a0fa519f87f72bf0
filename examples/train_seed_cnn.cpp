// Trains the seed's cat/dog CNN (nn::seed_cnn) on generated 64x64 images on the CPU or a GPU:
// label 1 when the image's left half is brighter than its right half. Keras-style in about
// thirty lines of user code: build, summary, Adam, mini-batches, predict.
//   train_seed_cnn [--device cpu|cuda|cuda:N] [--epochs N]
#include <loom/loom.h>

#include <cstdio>
#include <cstring>
#include <iostream>
#include <string>

namespace nn = loom::nn;

// n images [n, 3, 64, 64] in [0, 1) with a brighter left or right half, and labels [n, 1].
static std::pair<loom::Tensor, loom::Tensor> make_data(int64_t n, loom::Device device) {
  loom::Tensor images = loom::rand({n, 3, 64, 64}, device);
  loom::Tensor labels = loom::ge(loom::rand({n, 1, 1, 1}, device), 0.5).to(loom::kFloat32);
  loom::Tensor left = images.narrow(3, 0, 32), right = images.narrow(3, 32, 32);  // views
  left.copy_(left * 0.9 + labels * 0.1);  // the labelled half is brighter by 0.1 on average
  right.copy_(right * 0.9 + (1.0 - labels) * 0.1);
  return {images, labels.reshape({n, 1})};
}

int main(int argc, char** argv) try {
  std::string device_name = loom::cuda_is_available() ? "cuda" : "cpu";
  int epochs = 3;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--device"))
      device_name = argv[i + 1];
    else if (!std::strcmp(argv[i], "--epochs"))
      epochs = std::stoi(argv[i + 1]);
    else
      throw loom::Error(std::string("unknown flag ") + argv[i]);
  }
  const loom::Device device(device_name);
  loom::manual_seed(0);

  auto model = nn::seed_cnn();  // Conv2d(32, 3x3, stride 3) relu, pool, dense 128 relu, dense 1
  model->to(device);            // before the optimizer, so its state lives on the device too
  std::cout << model->summary({3, 64, 64});
  loom::optim::Adam optimizer(model->parameters(), loom::optim::GroupOptions().with_lr(1e-3));

  auto [images, labels] = make_data(1024, device);
  const int64_t batch_size = 32;
  for (int epoch = 1; epoch <= epochs; ++epoch) {
    loom::Tensor epoch_loss = loom::zeros({}, device);
    for (int64_t start = 0; start < images.size(0); start += batch_size) {
      loom::Tensor loss = nn::binary_cross_entropy_with_logits(
          model->forward(images.narrow(0, start, batch_size)), labels.narrow(0, start, batch_size));
      optimizer.zero_grad();
      loss.backward();
      optimizer.step();
      epoch_loss = epoch_loss + loss.detach();  // stays on the device: no sync per step
    }
    auto [test_images, test_labels] = make_data(256, device);
    loom::Tensor predicted = loom::gt(nn::predict(*model, test_images), 0.5).to(loom::kFloat32);
    loom::Tensor correct = loom::eq(predicted, test_labels).to(loom::kFloat32);
    std::printf("epoch %d  loss %.4f  test accuracy %.3f\n", epoch,
                epoch_loss.item<float>() * batch_size / images.size(0),
                loom::mean(correct).item<float>());
  }
  return 0;
} catch (const loom::Error& e) {
  std::fprintf(stderr, "train_seed_cnn: %s\n", e.what());
  return 2;
}
