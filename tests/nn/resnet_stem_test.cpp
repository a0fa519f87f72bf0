// resnet18's stem stride: 2 halves the image in the first convolution (no new parameters),
// survives the spec (a saved model rebuilds with it), and anything outside 1-4 is refused.
#include <loom/loom.h>

#include "testing.h"

namespace loom::nn {
namespace {

TEST(ResNetStem, StrideTwoHalvesTheFirstFeatureMap) {
  Generator gen_a(8), gen_b(8);
  auto plain = resnet18(1, Init::PyTorch, &gen_a);
  auto strided = resnet18(1, Init::PyTorch, &gen_b, 2);
  EXPECT_EQ(strided->num_parameters(), plain->num_parameters());
  Generator data(9);
  const Tensor x = uniform({2, 3, 24, 24}, -1.0, 1.0, kFloat32, &data);
  EXPECT_EQ((*plain)[0]->forward(x).shape(), (Shape{2, 64, 24, 24}));
  EXPECT_EQ((*strided)[0]->forward(x).shape(), (Shape{2, 64, 12, 12}));
  strided->eval();
  EXPECT_EQ(strided->forward(x).shape(), (Shape{2, 1}));
}

TEST(ResNetStem, ASavedModelRebuildsWithItsStride) {
  Generator gen(10);
  auto model = resnet18(2, Init::PyTorch, &gen, 2);
  const ModulePtr rebuilt = from_spec(model->spec_json());
  rebuilt->load_state_dict(model->state_dict());
  model->eval();
  rebuilt->eval();
  Generator data(11);
  const Tensor x = uniform({2, 3, 20, 20}, -1.0, 1.0, kFloat32, &data);
  EXPECT_TENSOR_NEAR(rebuilt->forward(x), model->forward(x), 0.0, 0.0);
}

TEST(ResNetStem, AStrideOutsideOneToFourIsRefused) {
  EXPECT_LOOM_ERROR(resnet18(1, Init::PyTorch, nullptr, 0), "stem_stride must be 1 to 4, got 0");
  EXPECT_LOOM_ERROR(resnet18(1, Init::PyTorch, nullptr, 5), "stem_stride must be 1 to 4, got 5");
}

}  // namespace
}  // namespace loom::nn
