// CPU/CUDA parity of every elementwise op and activation: the case table (elementwise_cases.h),
// forward values and the gradients of every leaf, in float32, float64 and bfloat16, on
// contiguous, broadcast, scalar-shaped and transposed operands; comparisons and where() on every
// dtype; device-mismatch errors.
#include "elementwise_cases.h"

namespace loom {
namespace {

using namespace testing;

LOOM_CASE_TABLE_TEST(Elementwise, elementwise_parity_cases, Cuda)

TEST(ElementwiseGpu, ComparisonsAndWhereMatchTheCpuOnEveryDtype) {
  LOOM_REQUIRE_CUDA();
  Generator gen(3);
  // Small integers, so equal pairs occur.
  const Tensor a = randint(0, 3, {4, 5}, kInt64, &gen);
  const Tensor b = randint(0, 3, {5}, kInt64, &gen);
  const Tensor cond = randint(0, 2, {4, 1}, kUInt8, &gen);
  using Compare = Tensor (*)(const Tensor&, const Tensor&);
  using CompareScalar = Tensor (*)(const Tensor&, double);
  const std::vector<std::pair<const char*, Compare>> compares = {
      {"eq", eq}, {"ne", ne}, {"lt", lt}, {"le", le}, {"gt", gt}, {"ge", ge}};
  const std::vector<std::pair<const char*, CompareScalar>> scalar_compares = {
      {"eq", eq}, {"lt", lt}, {"le", le}, {"gt", gt}, {"ge", ge}};
  for (DType dtype : {kFloat32, kFloat64, kBFloat16, kInt64, kInt32, kUInt8}) {
    const Tensor ac = a.to(dtype), bc = b.to(dtype);
    const Tensor ag = a.to(kCUDA, dtype), bg = b.to(kCUDA, dtype);
    for (const auto& [name, op] : compares) {
      SCOPED_TRACE(std::string(name) + " " + dtype_name(dtype));
      const Tensor out = op(ag, bg);
      EXPECT_EQ(out.dtype(), kUInt8);
      EXPECT_EQ(out.cpu().to_vector<uint8_t>(), op(ac, bc).to_vector<uint8_t>());
      EXPECT_EQ(op(ag.t(), bg.unsqueeze(1)).cpu().to_vector<uint8_t>(),
                op(ac.t(), bc.unsqueeze(1)).to_vector<uint8_t>());
    }
    for (const auto& [name, op] : scalar_compares) {
      SCOPED_TRACE(std::string(name) + " scalar " + dtype_name(dtype));
      EXPECT_EQ(op(ag, 1.0).cpu().to_vector<uint8_t>(), op(ac, 1.0).to_vector<uint8_t>());
      EXPECT_EQ(op(ag, 1.5).cpu().to_vector<uint8_t>(), op(ac, 1.5).to_vector<uint8_t>());
    }
    SCOPED_TRACE(std::string("where ") + dtype_name(dtype));
    const Tensor w = where(cond.to(kCUDA), ag, bg);
    EXPECT_EQ(w.dtype(), dtype);
    EXPECT_EQ(w.cpu().to(kInt64).to_vector<int64_t>(),
              where(cond, ac, bc).to(kInt64).to_vector<int64_t>());
  }
}

TEST(ElementwiseGpu, OperandsOnDifferentDevicesAreAnError) {
  LOOM_REQUIRE_CUDA();
  const Tensor c = ones({2});
  const Tensor g = ones({2}, kCUDA);
  EXPECT_LOOM_ERROR(add(c, g), "add: tensors are on different devices (cpu and cuda:0)");
  EXPECT_LOOM_ERROR(maximum(g, c), "maximum: tensors are on different devices (cuda:0 and cpu)");
  EXPECT_LOOM_ERROR(gt(c, g), "gt: tensors are on different devices");
  EXPECT_LOOM_ERROR(where(ones({2}, kUInt8), g, g), "where: tensors are on different devices");
}

TEST(ElementwiseGpu, ResultsStayOnTheInputsDevice) {
  LOOM_REQUIRE_CUDA();
  const int last = cuda_device_count() - 1;
  const Tensor x = randn({8}, TensorOptions().device(cuda_device(last)));
  const Tensor y = tanh(x) + x;
  EXPECT_EQ(y.device(), cuda_device(last));
  EXPECT_TENSOR_NEAR(y.cpu(), tanh(x.cpu()) + x.cpu(), 1e-6, 1e-6);
}

}  // namespace
}  // namespace loom
