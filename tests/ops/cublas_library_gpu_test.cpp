// cuBLAS is opened on first use, not at start-up (ops/cuda/cublas_library.h): a process that
// never multiplies on a GPU never pays its loading (about 0.3 s and 200 MB).
#include <fstream>
#include <string>

#include "testing.h"

#if LOOM_HAS_CUDA
#include "loom/ops/cuda/cublas_library.h"
#endif

namespace loom {
namespace {

using namespace testing;

bool cublas_is_mapped() {
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) {
    if (line.find("libcublas") != std::string::npos) return true;
  }
  return false;
}

// Read while the program starts, after libloom's own start-up and before any test runs.
const bool kCublasMappedAtStart = cublas_is_mapped();

TEST(CublasLibrary, IsNotLoadedAtStartOrByCpuWork) {
  EXPECT_FALSE(kCublasMappedAtStart);
  const bool mapped_before = cublas_is_mapped();  // another test of this process may have opened it
  const Tensor a = random_leaf({5, 7}, 1).detach(), b = random_leaf({7, 3}, 2).detach();
  EXPECT_EQ(matmul(a, b).shape(), (Shape{5, 3}));
  EXPECT_EQ(cublas_is_mapped(), mapped_before);
}

#if LOOM_HAS_CUDA
// Opening the library and finding every function needs no device (cuBLAS's own calls do).
TEST(CublasLibrary, OpensAndBindsEveryFunctionWithoutADevice) {
  const cuda::CublasLibrary& library = cuda::cublas();
#define LOOM_EXPECT_BOUND(name, type) EXPECT_NE(library.name, nullptr) << #name;
  LOOM_CUBLAS_FUNCTIONS(LOOM_EXPECT_BOUND)
#undef LOOM_EXPECT_BOUND
  EXPECT_GT(std::string(library.cublasGetStatusString(CUBLAS_STATUS_SUCCESS)).size(), 0u);
  EXPECT_TRUE(cublas_is_mapped());
}
#endif

TEST(CublasLibrary, TheFirstGpuProductLoadsItAndAgreesWithTheCpu) {
  LOOM_REQUIRE_CUDA();
  const Tensor a = random_leaf({5, 7}, 3).detach().to(kFloat32),
               b = random_leaf({7, 6}, 4).detach().to(kFloat32);
  EXPECT_TENSOR_NEAR(matmul(a.to(cuda_device(0)), b.to(cuda_device(0))).cpu(), matmul(a, b), 1e-4,
                     1e-4);
  EXPECT_TRUE(cublas_is_mapped());
}

}  // namespace
}  // namespace loom
