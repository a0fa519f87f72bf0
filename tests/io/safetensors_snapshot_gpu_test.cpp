// SafetensorsSnapshot of CUDA tensors (fit's checkpoints and model files on a GPU): the bytes
// written later, on another thread and on a stream of their own, are the tensors' at the
// snapshot, while the compute stream goes on changing them; and they agree with the bytes of
// the same tensors copied to the host first.
#include <thread>

#include "loom/io/safetensors.h"
#include "testing.h"

namespace loom {
namespace {

std::string bytes_of(const io::SafetensorsSnapshot& snapshot) {
  std::string out;
  snapshot.write(
      [&out](const void* data, size_t size) { out.append(static_cast<const char*>(data), size); });
  return out;
}

TEST(SafetensorsSnapshotGpu, WritesTheDeviceTensorsAsTheyWereWhileTheyChange) {
  LOOM_REQUIRE_CUDA();
  Generator gen(21);
  // 16 MB of weights, so that the in-place updates queued after the snapshot take a while.
  const Tensor host_w = randn({1024, 4096}, kFloat32, &gen);
  const Tensor host_b = randn({4096}, kBFloat16, &gen);
  Tensor w = host_w.cuda(), b = host_b.cuda();
  const Tensor wt_host = randn({64, 32}, kFloat32, &gen);
  const Tensor wt = wt_host.cuda().t();  // non-contiguous on the device
  const io::Metadata metadata{{"loom.kind", "test"}};
  const std::string expected =
      io::serialize_safetensors({{"w", host_w}, {"b", host_b}, {"wt", wt_host.t()}}, metadata);

  const io::SafetensorsSnapshot snapshot({{"w", w}, {"b", b}, {"wt", wt}}, metadata);
  std::string written;
  std::thread writer([&] { written = bytes_of(snapshot); });  // as fit's writer thread does
  for (int i = 0; i < 50; ++i) {  // the training thread goes on: in place, on the compute stream
    w.copy_(w * 1.5);
    b.add_(b);
  }
  writer.join();
  EXPECT_EQ(written.size(), expected.size());
  EXPECT_TRUE(written == expected)
      << "the snapshot's bytes differ from the tensors it was taken of";
  EXPECT_NE(w.cpu().to_vector<float>(), host_w.to_vector<float>());  // they did change
}

TEST(SafetensorsSnapshotGpu, SerializeOfDeviceTensorsMatchesTheirHostCopies) {
  LOOM_REQUIRE_CUDA();
  Generator gen(22);
  const Tensor a = randn({3, 5, 7}, kFloat64, &gen);
  const Tensor n = from_vector<int64_t>({4, -9, 1 << 30});
  const Tensor empty = zeros({0, 3}, kFloat32);
  EXPECT_TRUE(io::serialize_safetensors({{"a", a.cuda()}, {"n", n.cuda()}, {"e", empty.cuda()}}) ==
              io::serialize_safetensors({{"a", a}, {"n", n}, {"e", empty}}));
}

}  // namespace
}  // namespace loom
