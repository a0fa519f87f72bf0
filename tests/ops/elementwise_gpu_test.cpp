// CPU/CUDA parity of every elementwise op and activation: forward values and the gradients of
// every leaf, in float32, float64 and bfloat16, on contiguous, broadcast, scalar-shaped and
// transposed operands; comparisons and where() on every dtype; device-mismatch errors.
#include "elementwise_cases.h"

namespace loom {
namespace {

using namespace testing;

struct Tolerance {
  double atol, rtol;            // of the outputs
  double grad_atol, grad_rtol;  // of the gradients
};

Tolerance tolerance(DType dtype) {
  const double tol = dtype == kFloat32 ? 2e-5 : 1e-12;
  return {tol, tol, tol, tol};
}

// bfloat16 is computed in float and rounded with the same function on both devices, so ops
// made of IEEE-exact float operations agree exactly (zero tolerance), gradients included. A
// libm result (exp, log, tanh, pow) may differ in float's last bit, so by one bfloat16 ulp
// (2^-7 relative at most); a gradient chains two or three of them (pow's: pow, then two
// products), hence four ulps, and tanh's and sigmoid's read their output y, whose one ulp moves
// 1 - y^2 and y (1 - y) by up to 2^-7 of the weight (|w| < 5) however small they are.
Tolerance bf16_tolerance(const std::string& op) {
  if (!uses_libm(op)) return {0.0, 0.0, 0.0, 0.0};
  return {0.0, 0x1p-7, 5 * 0x1p-7, 0x1p-5};
}

// Runs f on CPU leaves and on CUDA copies of them, then compares the outputs and, after a
// backward() with the same random weights, every leaf's gradient.
void expect_parity(const Function& f, const std::vector<Tensor>& values, DType dtype,
                   const Tolerance& tol) {
  std::vector<Tensor> cpu, gpu;
  for (const Tensor& v : values) {
    cpu.push_back(v.detach().to(dtype).set_requires_grad(true));
    gpu.push_back(v.detach().to(kCUDA, dtype).set_requires_grad(true));
  }
  const Tensor out_cpu = f(cpu);
  const Tensor out_gpu = f(gpu);
  ASSERT_TRUE(out_gpu.is_cuda());
  EXPECT_EQ(out_gpu.dtype(), dtype);
  EXPECT_TENSOR_NEAR(out_gpu.cpu(), out_cpu, tol.atol, tol.rtol);
  Generator gen(77);
  const Tensor weights = randn(out_cpu.shape(), dtype, &gen);
  out_cpu.backward(weights);
  out_gpu.backward(weights.to(kCUDA));
  for (size_t i = 0; i < cpu.size(); ++i) {
    SCOPED_TRACE("gradient of input " + std::to_string(i));
    ASSERT_TRUE(gpu[i].grad().defined());
    EXPECT_TRUE(gpu[i].grad().is_cuda());
    EXPECT_TENSOR_NEAR(gpu[i].grad().cpu(), cpu[i].grad(), tol.grad_atol, tol.grad_rtol);
  }
}

TEST(ElementwiseGpu, EveryDifferentiableOpMatchesTheCpu) {
  LOOM_REQUIRE_CUDA();
  uint64_t seed = 500;
  for (const OpCase& c : differentiable_cases()) {
    for (const Layout& layout : layouts_for(c)) {
      std::vector<Tensor> values;
      for (const Shape& shape : layout.shapes) values.push_back(make_input(c, shape, ++seed));
      for (DType dtype : {kFloat32, kFloat64, kBFloat16}) {
        SCOPED_TRACE(c.name + " on " + layout.name + " " + dtype_name(dtype));
        const Tolerance tol = dtype == kBFloat16 ? bf16_tolerance(c.name) : tolerance(dtype);
        expect_parity(with_layout(c.f, layout), values, dtype, tol);
      }
    }
  }
}

TEST(ElementwiseGpu, LargeTensorsMatchTheCpu) {
  LOOM_REQUIRE_CUDA();
  Tensor a = random_leaf({1031, 2049}, 1);
  Tensor b = random_leaf({2049}, 2);
  for (DType dtype : {kFloat32, kFloat64}) {
    SCOPED_TRACE(dtype_name(dtype));
    // b's gradient sums 1031 rows, in a different order on each device.
    const double tol = dtype == kFloat32 ? 1e-3 : 1e-10;
    expect_parity([](const std::vector<Tensor>& in) { return sigmoid(in[0] * in[1]); }, {a, b},
                  dtype, {tol, tol, tol, tol});
    expect_parity([](const std::vector<Tensor>& in) { return in[0].t() - 1.5; }, {a}, dtype,
                  tolerance(dtype));
  }
  // bfloat16: a broadcast product whose second gradient sums 1031 rows in double, in another
  // order on each device (a few double ulps apart, which could change the rounding to bfloat16
  // only for a sum that close to a tie), and a libm op on a transposed operand.
  expect_parity([](const std::vector<Tensor>& in) { return in[0] * in[1] + 0.5; }, {a, b},
                kBFloat16, bf16_tolerance("mul"));
  expect_parity(
      [](const std::vector<Tensor>& in) { return sigmoid(in[0].t()) - in[1].unsqueeze(1); }, {a, b},
      kBFloat16, bf16_tolerance("sigmoid"));
}

// Dense operands whose size is a multiple of 8 take the 16-byte kernel (8 bfloat16, 4 float or
// 2 double a thread); views one element in (misaligned) and odd sizes take the scalar one. Both
// must give the CPU's values, gradients included.
TEST(ElementwiseGpu, VectorisedAndScalarKernelsMatchTheCpu) {
  LOOM_REQUIRE_CUDA();
  const Tensor a = random_leaf({8193}, 3), b = random_leaf({8193}, 4);
  for (DType dtype : {kFloat32, kFloat64, kBFloat16}) {
    const Tolerance tol = dtype == kBFloat16 ? bf16_tolerance("mul") : tolerance(dtype);
    for (int64_t start : {0, 1}) {
      for (int64_t length : {8192, 8191}) {
        SCOPED_TRACE(std::string(dtype_name(dtype)) + " from " + std::to_string(start) + ", " +
                     std::to_string(length) + " elements");
        expect_parity(
            [start, length](const std::vector<Tensor>& in) {
              const Tensor x = in[0].narrow(0, start, length), y = in[1].narrow(0, start, length);
              return relu(x * y) + x;
            },
            {a, b}, dtype, tol);
      }
    }
  }
}

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

TEST(ElementwiseGpu, WhereGradientsWithABroadcastConditionMatchTheCpu) {
  LOOM_REQUIRE_CUDA();
  Generator gen(4);
  const Tensor cond = randint(0, 2, {3, 1}, kUInt8, &gen);
  for (DType dtype : {kFloat32, kFloat64}) {
    SCOPED_TRACE(dtype_name(dtype));
    expect_parity(
        [cond](const std::vector<Tensor>& in) {
          return where(cond.to(in[0].device()), in[0], in[1]);
        },
        {random_leaf({1, 4}, 5), random_leaf({3, 4}, 6)}, dtype, tolerance(dtype));
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
