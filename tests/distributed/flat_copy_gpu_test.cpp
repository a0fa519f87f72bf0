// dist::copy_all on CUDA, against the CPU's memcpy of the same plan: copies of every size class
// (empty, a few bytes, one chunk and just past it, megabytes), 16-byte aligned and not, more
// copies than one launch takes, and nothing written outside the destinations.
#include <loom/loom.h>

#include <random>

#include "loom/distributed/flat_copy.h"
#include "testing.h"

namespace loom::dist {
namespace {

struct Plan {
  size_t src_offset, dst_offset, bytes;
};

// Random source bytes; the destinations start as 0xA5, which a random byte matches once in 256,
// so a stray or a missing write shows.
std::vector<uint8_t> random_bytes(size_t n, uint32_t seed) {
  std::mt19937 gen(seed);
  std::vector<uint8_t> v(n);
  for (uint8_t& b : v) b = static_cast<uint8_t>(gen());
  return v;
}

void expect_copies_as_on_the_cpu(const std::vector<Plan>& plan, uint32_t seed) {
  size_t src_size = 0, dst_size = 0;
  for (const Plan& p : plan) {
    src_size = std::max(src_size, p.src_offset + p.bytes);
    dst_size = std::max(dst_size, p.dst_offset + p.bytes);
  }
  std::vector<uint8_t> src = random_bytes(src_size, seed), expected(dst_size, 0xA5);
  const Tensor src_gpu = from_vector(src).cuda();
  Tensor dst_gpu = from_vector(expected).cuda();
  std::vector<FlatCopy> host, device;
  for (const Plan& p : plan) {
    host.push_back({src.data() + p.src_offset, expected.data() + p.dst_offset, p.bytes});
    device.push_back({static_cast<const uint8_t*>(src_gpu.raw_data()) + p.src_offset,
                      static_cast<uint8_t*>(dst_gpu.raw_data()) + p.dst_offset, p.bytes});
  }
  copy_all(host, kCPU);
  copy_all(device, src_gpu.device());
  const std::vector<uint8_t> got = dst_gpu.cpu().to_vector<uint8_t>();
  ASSERT_EQ(got.size(), expected.size());
  size_t wrong = 0, first = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    if (got[i] != expected[i] && wrong++ == 0) first = i;
  }
  EXPECT_EQ(wrong, 0u) << "first wrong byte at " << first;
}

// Copies laid end to end in both buffers, each destination 16-byte aligned when `aligned`.
std::vector<Plan> laid_out(const std::vector<size_t>& sizes, bool aligned, size_t src_skew) {
  std::vector<Plan> plan;
  size_t src = src_skew, dst = 0;
  for (size_t bytes : sizes) {
    plan.push_back({src, dst, bytes});
    src += bytes;
    dst += aligned ? (bytes + 15) / 16 * 16 : bytes + 3;
  }
  return plan;
}

const std::vector<size_t> kSizes = {0,
                                    1,
                                    3,
                                    15,
                                    16,
                                    17,
                                    4096,
                                    16384,
                                    16384 + 16,
                                    16384 * 3 + 5,
                                    100000,
                                    1 << 20,
                                    4718592 /* resnet18's 512x512x3x3 bf16 */,
                                    48,
                                    0,
                                    7};

TEST(FlatCopyGpu, AlignedCopiesOfEverySize) {
  LOOM_REQUIRE_CUDA();
  // Aligned sizes and offsets go 16 bytes an access; the sizes not a multiple of 16 byte by byte.
  expect_copies_as_on_the_cpu(laid_out(kSizes, true, 0), 1);
}

TEST(FlatCopyGpu, UnalignedSourcesAndDestinations) {
  LOOM_REQUIRE_CUDA();
  expect_copies_as_on_the_cpu(laid_out(kSizes, false, 5), 2);
}

TEST(FlatCopyGpu, MoreCopiesThanOneLaunchTakes) {
  LOOM_REQUIRE_CUDA();
  std::mt19937 gen(3);
  std::vector<size_t> sizes;
  for (int i = 0; i < 200; ++i) sizes.push_back(gen() % 3 == 0 ? gen() % 70000 : (gen() % 64) * 16);
  expect_copies_as_on_the_cpu(laid_out(sizes, true, 0), 4);
}

}  // namespace
}  // namespace loom::dist
