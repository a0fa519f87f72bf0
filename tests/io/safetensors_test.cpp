// safetensors: round trips, the exact byte layout, and every malformed-file error.
#include "loom/io/safetensors.h"

#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "loom/io/atomic_file.h"
#include "testing.h"

namespace loom {
namespace {

namespace fs = std::filesystem;

class Safetensors : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("loom_st_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  // A file made of a given header JSON and data bytes.
  static std::string file_bytes(const std::string& header, const std::string& data) {
    std::string out(8, '\0');
    const uint64_t n = header.size();
    std::memcpy(out.data(), &n, 8);
    return out + header + data;
  }

  fs::path dir_;
};

TEST_F(Safetensors, RoundTripsEveryDtypeAndMetadata) {
  Generator gen(1);
  const io::NamedTensors tensors = {
      {"w", randn({3, 4}, kFloat32, &gen)},
      {"d", randn({5}, kFloat64, &gen)},
      {"i", randint(-100, 100, {2, 2, 2}, kInt64, &gen)},
      {"j", randint(-100, 100, {7}, kInt32, &gen)},
      {"u", randint(0, 256, {9}, kUInt8, &gen)},
      {"scalar", scalar_tensor(2.5)},
      {"empty", zeros({0, 3})},
      {"strided", randn({4, 3}, kFloat32, &gen).t()},
  };
  io::save_safetensors(path("m.safetensors"), tensors,
                       {{"spec", "{\"layers\": []}"}, {"epoch", "3"}});
  const io::TensorFile file = io::load_safetensors(path("m.safetensors"));
  ASSERT_EQ(file.tensors.size(), tensors.size());
  for (const auto& [name, t] : tensors) {
    const Tensor& back = file.at(name);
    EXPECT_EQ(back.shape(), t.shape()) << name;
    EXPECT_EQ(back.dtype(), t.dtype()) << name;
    EXPECT_EQ(back.to_vector<double>(), t.to_vector<double>()) << name;
  }
  EXPECT_EQ(file.metadata.at("epoch"), "3");
  EXPECT_EQ(file.metadata.at("spec"), "{\"layers\": []}");
  EXPECT_LOOM_ERROR(file.at("missing"), "no tensor named \"missing\"");
}

// BF16 is stored as the raw little-endian 16-bit patterns, as Python's safetensors and PyTorch
// write torch.bfloat16: NaN payloads, infinities and subnormals come back bit for bit.
TEST_F(Safetensors, BFloat16RoundTripsBitForBit) {
  Generator gen(2);
  std::vector<BFloat16> special;
  for (uint16_t bits : {0x3F80, 0xC020, 0x0001, 0x8000, 0x7F7F, 0x7F80, 0xFF80, 0x7FC1, 0xFF81}) {
    special.push_back(BFloat16::from_bits(bits));
  }
  const io::NamedTensors tensors = {
      {"w", randn({6, 5}, kFloat32, &gen).to(kBFloat16)},
      {"strided", randn({4, 3}, kBFloat16, &gen).t()},
      {"special", from_vector<BFloat16>(special)},
      {"f", randn({3}, kFloat32, &gen)},
  };
  io::save_safetensors(path("b.safetensors"), tensors);
  const io::TensorFile file = io::load_safetensors(path("b.safetensors"));
  for (const auto& [name, t] : tensors) {
    const Tensor& back = file.at(name);
    EXPECT_EQ(back.dtype(), t.dtype()) << name;
    EXPECT_EQ(back.shape(), t.shape()) << name;
    if (t.dtype() != kBFloat16) continue;
    std::vector<uint16_t> want, got;
    for (const BFloat16& v : t.to_vector<BFloat16>()) want.push_back(v.bits);
    for (const BFloat16& v : back.to_vector<BFloat16>()) got.push_back(v.bits);
    EXPECT_EQ(got, want) << name;
  }
  // The bytes: "BF16" in the header, 1.0 as 0x3F80 low byte first.
  const std::string bytes = io::serialize_safetensors({{"one", ones({1}, kBFloat16)}});
  uint64_t n = 0;
  std::memcpy(&n, bytes.data(), 8);
  EXPECT_NE(bytes.substr(8, n).find(R"("dtype":"BF16","shape":[1],"data_offsets":[0,2])"),
            std::string::npos);
  EXPECT_EQ(bytes.substr(8 + n), std::string("\x80\x3f", 2));
}

TEST_F(Safetensors, ByteLayoutIsTheFormat) {
  const std::string bytes = io::serialize_safetensors({{"a", from_vector<float>({1.0f, -2.0f})}});
  uint64_t n = 0;
  std::memcpy(&n, bytes.data(), 8);
  EXPECT_EQ(n % 8, 0u);  // padded so data is aligned
  const std::string header = bytes.substr(8, n);
  EXPECT_EQ(header.substr(0, header.find_last_not_of(' ') + 1),
            R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})");
  ASSERT_EQ(bytes.size(), 8 + n + 8);
  float values[2];
  std::memcpy(values, bytes.data() + 8 + n, 8);
  EXPECT_EQ(values[0], 1.0f);
  EXPECT_EQ(values[1], -2.0f);
}

// What a snapshot writes later is the tensors as they were when it was taken: training goes on
// changing them in place meanwhile. Its bytes are serialize_safetensors' of that moment, a
// transposed (non-contiguous) tensor's included, handed to the sink in pieces.
TEST_F(Safetensors, SnapshotWritesTheTensorsAsTheyWereWhenTaken) {
  Generator gen(3);
  Tensor w = randn({4, 6}, kFloat32, &gen), steps = from_vector<int64_t>({7});
  const Tensor wt = randn({5, 3}, kFloat32, &gen).t();
  const io::NamedTensors tensors{{"w", w}, {"steps", steps}, {"wt", wt}};
  const io::Metadata metadata{{"epoch", "2"}};
  const std::string then = io::serialize_safetensors(tensors, metadata);
  const io::SafetensorsSnapshot snapshot(tensors, metadata);
  w.copy_(w * 2.0);
  steps.add_(steps);
  EXPECT_NE(io::serialize_safetensors(tensors, metadata), then);
  std::string written;
  int pieces = 0;
  snapshot.write([&](const void* data, size_t size) {
    written.append(static_cast<const char*>(data), size);
    ++pieces;
  });
  EXPECT_EQ(written, then);
  EXPECT_EQ(snapshot.size(), then.size());
  EXPECT_EQ(pieces, 4);  // the header, then each tensor
}

TEST_F(Safetensors, MalformedFilesAreRejectedBeforeAnyData) {
  const auto parse = [](const std::string& bytes) { return io::parse_safetensors(bytes, "f"); };
  const std::string good_data(8, '\x01');
  EXPECT_LOOM_ERROR(parse(""), "too short");
  EXPECT_LOOM_ERROR(parse(std::string("\xff\xff\xff\xff\xff\xff\xff\x7f", 8) + "{}"),
                    "header length");
  EXPECT_LOOM_ERROR(parse(file_bytes("{not json", "")), "the safetensors header: malformed JSON");
  EXPECT_LOOM_ERROR(parse(file_bytes("[1,2]", "")), "not a JSON object");
  EXPECT_LOOM_ERROR(
      parse(file_bytes(R"({"a":{"dtype":"F16","shape":[4],"data_offsets":[0,8]}})", good_data)),
      "unsupported dtype \"F16\"");
  EXPECT_LOOM_ERROR(
      parse(file_bytes(R"({"a":{"dtype":"BF16","shape":[3],"data_offsets":[0,8]}})", good_data)),
      "shape [3] of bfloat16 needs 6");
  EXPECT_LOOM_ERROR(
      parse(file_bytes(R"({"a":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}})", good_data)),
      "invalid shape");
  EXPECT_LOOM_ERROR(
      parse(file_bytes(R"({"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", good_data)),
      "needs 12");
  EXPECT_LOOM_ERROR(
      parse(file_bytes(R"({"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}})", good_data)),
      "outside the 8-byte data section");
  EXPECT_LOOM_ERROR(
      parse(file_bytes(
          R"({"a":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,8]}})",
          good_data)),
      "overflows");
  EXPECT_LOOM_ERROR(parse(file_bytes(R"({"a":{"dtype":"U8","shape":[8],"data_offsets":[0,8]},)"
                                     R"("b":{"dtype":"U8","shape":[4],"data_offsets":[4,8]}})",
                                     good_data)),
                    "overlaps");
  EXPECT_LOOM_ERROR(
      parse(file_bytes(R"({"a":{"dtype":"U8","shape":[4],"data_offsets":[4,8]}})", good_data)),
      "leaves a gap");
  EXPECT_LOOM_ERROR(
      parse(file_bytes(R"({"a":{"dtype":"U8","shape":[4],"data_offsets":[0,4]}})", good_data)),
      "4 bytes after the last tensor");
  EXPECT_LOOM_ERROR(parse(file_bytes(R"({"a":{"dtype":"U8","shape":[8]}})", good_data)),
                    "needs dtype, shape");
  EXPECT_LOOM_ERROR(parse(file_bytes(R"({"__metadata__":{"k":1}})", "")), "is not a string");
}

TEST_F(Safetensors, TruncatedFilesAreRejected) {
  io::save_safetensors(path("m.safetensors"), {{"w", ones({100})}});
  const std::string whole = io::read_file(path("m.safetensors"));
  for (size_t keep : {size_t{0}, size_t{5}, size_t{12}, whole.size() / 2, whole.size() - 1}) {
    EXPECT_THROW(io::parse_safetensors(whole.substr(0, keep), "t"), Error) << keep;
  }
}

TEST_F(Safetensors, WritesAreAtomicAndFailuresLeaveNothing) {
  const std::string target = path("m.safetensors");
  io::save_safetensors(target, {{"w", ones({4})}});
  // A failed write (a bad tensor name, found only while serialising) keeps the old file.
  EXPECT_LOOM_ERROR(io::save_safetensors(target, {{"w", ones({2})}, {"__metadata__", ones({2})}}),
                    "invalid tensor name \"__metadata__\"");
  // Duplicate names cannot even be put together: NamedTensors refuses the second.
  EXPECT_LOOM_ERROR((io::NamedTensors{{"w", ones({4})}, {"w", ones({2})}}), "duplicate name \"w\"");
  EXPECT_EQ(io::load_safetensors(target).at("w").numel(), 4);
  // A failure inside the byte stream removes the temporary file.
  EXPECT_LOOM_ERROR(io::write_file_atomically(target,
                                              [](const io::ByteSink& sink) {
                                                sink("partial", 7);
                                                LOOM_FAIL("disk on fire");
                                              }),
                    "disk on fire");
  EXPECT_EQ(io::load_safetensors(target).at("w").numel(), 4);
  size_t files = 0;
  for (const auto& entry : fs::directory_iterator(dir_)) files += entry.is_regular_file();
  EXPECT_EQ(files, 1u);
  EXPECT_LOOM_ERROR(io::save_safetensors(path("no/such/folder/m.safetensors"), {{"w", ones({1})}}),
                    "cannot write");
  EXPECT_LOOM_ERROR(io::load_safetensors(path("missing.safetensors")), "cannot open");
  EXPECT_LOOM_ERROR(io::load_safetensors(dir_.string()), "not a regular file");
}

}  // namespace
}  // namespace loom
