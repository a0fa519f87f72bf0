// The loom side of tests/reference/onnx_export.py: `onnx_tool DIR` exports seed_cnn, classic_cnn
// (3 logits), resnet18 (2 logits, batch norm statistics moved off their initial values) and a
// Sequential of every other exportable layer to DIR/NAME.onnx, and saves one random batch and
// loom's eval-mode outputs for it in DIR/NAME.safetensors ("input", "output"); it also writes a
// model file of the classic_cnn (DIR/classic_cnn.model.safetensors) for `loom-catdog export`.
#include <loom/loom.h>

#include <cstdio>
#include <string>

namespace {

using namespace loom;

void write_case(const std::string& dir, const std::string& name, nn::Module& model,
                const Shape& example, Generator& gen, const io::OnnxExportOptions& options = {}) {
  io::export_onnx(model, example, dir + "/" + name + ".onnx", options);
  Shape batch{4};
  batch.insert(batch.end(), example.begin(), example.end());
  const Tensor x = uniform(batch, 0.0, 1.0, kFloat32, &gen);
  Tensor y;
  {
    nn::EvalModeGuard eval(model);
    NoGradGuard no_grad;
    y = model.forward(x);
    if (options.probabilities) y = y.size(1) == 1 ? sigmoid(y) : softmax(y, -1);
  }
  io::save_safetensors(dir + "/" + name + ".safetensors", {{"input", x}, {"output", y}});
  std::printf("%s: %s -> %s\n", name.c_str(), shape_str(x.shape()).c_str(),
              shape_str(y.shape()).c_str());
}

}  // namespace

int main(int argc, char** argv) try {
  if (argc != 2) throw Error("usage: onnx_tool DIR");
  const std::string dir = argv[1];
  Generator gen(37);

  auto seed = nn::seed_cnn(nn::Init::Keras, &gen);
  write_case(dir, "seed_cnn", *seed, {3, 64, 64}, gen);
  io::OnnxExportOptions probabilities;
  probabilities.probabilities = true;
  write_case(dir, "seed_cnn_probabilities", *seed, {3, 64, 64}, gen, probabilities);

  auto classic = nn::classic_cnn(3, nn::Init::PyTorch, &gen);
  write_case(dir, "classic_cnn", *classic, {3, 64, 64}, gen);
  io::Preprocessing prep;
  prep.class_names = {"cat", "dog", "fox"};
  io::save_model(dir + "/classic_cnn.model.safetensors", *classic, prep);

  // Training-mode forwards move the running statistics (and count the batches) as training does.
  auto resnet = nn::resnet18(2, nn::Init::PyTorch, &gen);
  {
    NoGradGuard no_grad;
    for (int i = 0; i < 3; ++i) resnet->forward(uniform({8, 3, 32, 32}, -1.0, 2.5, kFloat32, &gen));
  }
  write_case(dir, "resnet18", *resnet, {3, 32, 32}, gen);

  auto layers = std::make_shared<nn::Sequential>(std::initializer_list<nn::ModulePtr>{
      std::make_shared<nn::Conv2d>(3, 8, 3, Conv2dOptions().stride(2).padding(Padding::Same)),
      std::make_shared<nn::BatchNorm2d>(8), std::make_shared<nn::LeakyReLU>(0.1),
      std::make_shared<nn::Conv2d>(8, 8, 3, Conv2dOptions().dilation(2).padding(1)),
      std::make_shared<nn::Tanh>(), std::make_shared<nn::AvgPool2d>(3, 1, 1, false),
      std::make_shared<nn::MaxPool2d>(2, 1, 1), std::make_shared<nn::Sigmoid>(),
      std::make_shared<nn::Dropout>(0.5), std::make_shared<nn::Flatten>(2),
      std::make_shared<nn::Linear>(63, 6), std::make_shared<nn::ReLU>(),
      std::make_shared<nn::Flatten>(), std::make_shared<nn::Identity>(),
      std::make_shared<nn::Linear>(48, 4), std::make_shared<nn::Softmax>(1)});
  {
    NoGradGuard no_grad;
    layers->forward(uniform({8, 3, 16, 19}, -1.0, 2.5, kFloat32, &gen));
  }
  write_case(dir, "layers", *layers, {3, 16, 19}, gen);
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "onnx_tool: %s\n", e.what());
  return 1;
}
