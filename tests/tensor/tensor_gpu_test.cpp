// The tensor core on a GPU: copies across devices, CPU/CUDA agreement of fills and random
// numbers, the caching allocator's reuse and statistics, out-of-memory errors, streams.
#include <thread>

#include "loom/tensor/primitives.h"
#include "testing.h"

namespace loom {
namespace {

TEST(CudaTensor, RoundTripsAndStridedCopies) {
  LOOM_REQUIRE_CUDA();
  Generator gen(11);
  Tensor host = randn({5, 7}, kFloat64, &gen);
  Tensor dev = host.to(kCUDA);
  EXPECT_TRUE(dev.is_cuda());
  EXPECT_EQ(dev.to_vector<double>(), host.to_vector<double>());
  // Non-contiguous sources and destinations, dtype conversion on the way.
  EXPECT_EQ(dev.t().contiguous().cpu().to_vector<double>(),
            host.t().contiguous().to_vector<double>());
  EXPECT_EQ(dev.t().to(kCPU, kFloat32).to_vector<float>(),
            host.t().to(kFloat32).to_vector<float>());
  Tensor dst = zeros({7, 5}, kCUDA);
  dst.t().copy_(host);  // CPU float64 into a transposed CUDA float32 view
  EXPECT_EQ(dst.t().cpu().to_vector<float>(), host.to(kFloat32).to_vector<float>());
  Tensor narrow = dev.narrow(1, 2, 3);
  narrow.fill_(-4.0);
  EXPECT_EQ(dev.cpu().narrow(1, 2, 3).contiguous().to_vector<double>(),
            std::vector<double>(15, -4.0));
  EXPECT_EQ(dev.cpu().narrow(1, 0, 2).contiguous().to_vector<double>(),
            host.narrow(1, 0, 2).contiguous().to_vector<double>());
  Tensor bytes = from_vector<uint8_t>({0, 7, 255}).cuda();
  EXPECT_EQ(bytes.to(kInt64).cpu().to_vector<int64_t>(), (std::vector<int64_t>{0, 7, 255}));
}

TEST(CudaTensor, RandomNumbersMatchTheCpu) {
  LOOM_REQUIRE_CUDA();
  for (DType dtype : {kFloat32, kFloat64}) {
    Generator a(99), b(99);
    EXPECT_EQ(rand({3000}, dtype, &a).to_vector<double>(),
              rand({3000}, TensorOptions(dtype).device(kCUDA), &b).to_vector<double>());
    // Normal draws go through log/cos, which may differ in the last bit between libm and CUDA.
    EXPECT_TENSOR_NEAR(randn({3000}, TensorOptions(dtype).device(kCUDA), &b).cpu(),
                       randn({3000}, dtype, &a), 1e-12, 1e-6);
  }
  Generator a(5), b(5);
  EXPECT_EQ(randint(-50, 50, {4000}, kInt64, &a).to_vector<int64_t>(),
            randint(-50, 50, {4000}, TensorOptions(kInt64).device(kCUDA), &b).to_vector<int64_t>());
}

TEST(CudaTensor, AccumulateMatchesTheCpu) {
  LOOM_REQUIRE_CUDA();
  Generator gen(3);
  Tensor a = randn({64, 33}, kFloat32, &gen), b = randn({33, 64}, kFloat32, &gen);
  Tensor ca = a.clone(), cb = b.cuda();
  Tensor da = a.cuda();
  detail::accumulate(ca, b.t());
  detail::accumulate(da, cb.t());
  EXPECT_EQ(da.cpu().to_vector<float>(), ca.to_vector<float>());
}

// Contiguous same-shape tensors take the flat fast paths: 16-byte accesses when aligned (sizes
// with a tail short of a vector: up to 7 bfloat16, 3 float, 1 double), scalar ones at an odd
// offset; against the CPU's sums, exactly.
TEST(CudaTensor, ContiguousAccumulateAndFillMatchALoop) {
  LOOM_REQUIRE_CUDA();
  Generator gen(8);
  for (DType dtype : {kFloat32, kBFloat16, kFloat64}) {
    for (int64_t n :
         {int64_t(1), int64_t(4), int64_t(7), int64_t(8), int64_t(4099), int64_t(70001)}) {
      for (int64_t offset : {int64_t(0), int64_t(1)}) {
        SCOPED_TRACE(std::string(dtype_name(dtype)) + " n " + std::to_string(n) + " offset " +
                     std::to_string(offset));
        const Tensor a = randn({n + offset}, dtype, &gen), b = randn({n + offset}, dtype, &gen);
        Tensor expected = a.clone().narrow(0, offset, n);
        detail::accumulate(expected, b.narrow(0, offset, n));
        Tensor da = a.cuda().narrow(0, offset, n);
        detail::accumulate(da, b.cuda().narrow(0, offset, n));
        const std::vector<double> got = da.cpu().to_vector<double>(),
                                  want = expected.to_vector<double>();
        for (int64_t i = 0; i < n; ++i) ASSERT_EQ(got[i], want[i]) << i;
        da.fill_(-2.5);
        for (double v : da.cpu().to_vector<double>()) ASSERT_EQ(v, -2.5);
      }
    }
  }
  Tensor i64 = randint(-1000, 1000, {1001}, TensorOptions(kInt64).device(kCUDA), &gen);
  const std::vector<int64_t> before = i64.cpu().to_vector<int64_t>();
  detail::accumulate(i64, i64.clone());
  const std::vector<int64_t> doubled = i64.cpu().to_vector<int64_t>();
  for (size_t i = 0; i < before.size(); ++i) ASSERT_EQ(doubled[i], 2 * before[i]) << i;
  Tensor f64 = zeros({33}, TensorOptions(kFloat64).device(kCUDA));
  f64.fill_(0.125);
  for (double v : f64.cpu().to_vector<double>()) ASSERT_EQ(v, 0.125);
}

TEST(CudaAllocator, ReusesBlocksInSteadyState) {
  LOOM_REQUIRE_CUDA();
  cuda::synchronize(0);
  // Warm up the bins this loop uses, then require that no further cudaMalloc happens.
  for (int i = 0; i < 2; ++i) Tensor t = empty({1000, 1000}, kCUDA), u = empty({37}, kCUDA);
  const auto before = cuda::allocator_stats(0);
  for (int i = 0; i < 100; ++i) {
    Tensor t = empty({1000, 1000}, kCUDA);
    Tensor u = empty({37}, kCUDA);
    t.fill_(i);
  }
  const auto after = cuda::allocator_stats(0);
  EXPECT_EQ(after.num_cuda_mallocs, before.num_cuda_mallocs);
  EXPECT_EQ(after.num_allocations, before.num_allocations + 200);
  EXPECT_EQ(after.allocated_bytes, before.allocated_bytes);
  EXPECT_GE(after.peak_allocated_bytes, before.allocated_bytes + 4000000);
  EXPECT_GE(after.reserved_bytes, after.allocated_bytes);
}

TEST(CudaAllocator, StatisticsFollowLiveTensors) {
  LOOM_REQUIRE_CUDA();
  const auto base = cuda::allocator_stats(0);
  Tensor big = empty({1 << 20}, kCUDA);  // 4 MiB: a bin of exactly that size
  EXPECT_EQ(cuda::allocator_stats(0).allocated_bytes, base.allocated_bytes + (4 << 20));
  big = Tensor();
  EXPECT_EQ(cuda::allocator_stats(0).allocated_bytes, base.allocated_bytes);
  cuda::empty_cache();
  EXPECT_EQ(cuda::allocator_stats(0).reserved_bytes, cuda::allocator_stats(0).allocated_bytes);
}

TEST(CudaAllocator, OutOfMemoryNamesSizeDeviceAndStatistics) {
  LOOM_REQUIRE_CUDA();
  EXPECT_LOOM_ERROR(empty({int64_t{1} << 48}, kCUDA),
                    "CUDA out of memory: could not allocate 1125899906842624 bytes");
  EXPECT_LOOM_ERROR(empty({int64_t{1} << 48}, kCUDA), "on cuda:0");
  EXPECT_LOOM_ERROR(empty({int64_t{1} << 48}, kCUDA), "cudaMalloc");
  // The device still works afterwards.
  EXPECT_EQ(ones({3}, kCUDA).cpu().to_vector<float>(), std::vector<float>(3, 1.0f));
  EXPECT_LOOM_ERROR(empty({2}, cuda_device(cuda_device_count())), "does not exist");
}

TEST(CudaStreams, ThreadsHaveTheirOwnCurrentStream) {
  LOOM_REQUIRE_CUDA();
  cuda::StreamHandle side = cuda::create_stream(0);
  cuda::StreamHandle seen_in_thread = nullptr;
  {
    cuda::StreamGuard guard(0, side);
    EXPECT_EQ(cuda::current_stream(0), side);
    std::thread other([&] { seen_in_thread = cuda::current_stream(0); });
    other.join();
    // Work on the side stream, read back through the default path.
    Tensor t = full({1000}, 3.0, kCUDA);
    EXPECT_EQ(t.cpu().to_vector<float>(), std::vector<float>(1000, 3.0f));
  }
  EXPECT_EQ(seen_in_thread, cuda::default_stream(0));
  EXPECT_EQ(cuda::current_stream(0), cuda::default_stream(0));
  cuda::destroy_stream(0, side);
}

TEST(CudaAutograd, GradientsAccumulateOnTheDevice) {
  LOOM_REQUIRE_CUDA();
  Tensor x = randn({4, 3}, TensorOptions(kFloat64).device(kCUDA)).requires_grad_();
  x.t().backward(ones({3, 4}, TensorOptions(kFloat64).device(kCUDA)));
  x.narrow(0, 1, 2).backward(full({2, 3}, 2.0, TensorOptions(kFloat64).device(kCUDA)));
  EXPECT_TRUE(x.grad().is_cuda());
  EXPECT_EQ(x.grad().cpu().to_vector<double>(),
            (std::vector<double>{1, 1, 1, 3, 3, 3, 3, 3, 3, 1, 1, 1}));
  Tensor moved = x.to(kCPU);
  moved.backward(ones({4, 3}, kFloat64));
  EXPECT_TRUE(x.grad().is_cuda());
  EXPECT_EQ(x.grad().cpu().to_vector<double>()[0], 2.0);
}

}  // namespace
}  // namespace loom
