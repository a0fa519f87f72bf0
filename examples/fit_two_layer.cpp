// Fits a two-layer network to generated data, y = tanh(3 x0) + x1^2 / 2 plus noise, on the CPU
// or a GPU: loom's tensors, autograd and ops in about forty lines of user code.
//   fit_two_layer [--device cpu|cuda|cuda:N] [--steps N]
#include <loom/loom.h>

#include <cstdio>
#include <cstring>
#include <string>

int main(int argc, char** argv) try {
  std::string device_name = loom::cuda_is_available() ? "cuda" : "cpu";
  int steps = 500;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--device"))
      device_name = argv[i + 1];
    else if (!std::strcmp(argv[i], "--steps"))
      steps = std::stoi(argv[i + 1]);
    else
      throw loom::Error(std::string("unknown flag ") + argv[i]);
  }
  const loom::Device device(device_name);
  loom::manual_seed(0);

  // 4096 points in [-1, 1]^2 and their noisy targets.
  const loom::TensorOptions on_device = loom::TensorOptions(loom::kFloat32).device(device);
  loom::Tensor x = loom::uniform({4096, 2}, -1.0, 1.0, on_device);
  loom::Tensor x0 = x.narrow(1, 0, 1), x1 = x.narrow(1, 1, 1);
  loom::Tensor noise = loom::randn({4096, 1}, on_device) * 0.05;
  loom::Tensor y = loom::tanh(x0 * 3.0) + x1 * x1 * 0.5 + noise;

  // Two layers of 64 hidden units, initialised like PyTorch (uniform, 1/sqrt(fan_in)).
  auto param = [&](loom::Shape shape, double bound) {
    return loom::uniform(shape, -bound, bound, on_device).requires_grad_();
  };
  loom::Tensor w1 = param({64, 2}, 0.7071), b1 = param({64}, 0.7071);
  loom::Tensor w2 = param({1, 64}, 0.125), b2 = param({1}, 0.125);

  const double lr = 0.1;
  float first_loss = 0, loss_value = 0;
  for (int step = 0; step < steps; ++step) {
    loom::Tensor hidden = loom::relu(loom::linear(x, w1, b1));
    loom::Tensor pred = loom::linear(hidden, w2, b2);
    loom::Tensor loss = loom::mean(loom::pow(pred - y, 2.0));
    for (loom::Tensor* p : {&w1, &b1, &w2, &b2}) p->set_grad(loom::Tensor());
    loss.backward();
    {
      loom::NoGradGuard no_grad;  // the update is not part of the graph
      for (loom::Tensor* p : {&w1, &b1, &w2, &b2}) p->copy_(*p - p->grad() * lr);
    }
    if (step == 0 || (step + 1) % 100 == 0) {
      loss_value = loss.item<float>();  // the only host sync: once per log line
      if (step == 0) first_loss = loss_value;
      std::printf("step %4d  loss %.5f\n", step + 1, loss_value);
    }
  }
  std::printf("device %s: mean squared error %.5f -> %.5f\n", device.str().c_str(), first_loss,
              loss_value);
  return loss_value < first_loss / 4 ? 0 : 1;
} catch (const loom::Error& e) {
  std::fprintf(stderr, "fit_two_layer: %s\n", e.what());
  return 2;
}
