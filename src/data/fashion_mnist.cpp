// IDX reading through zlib's gzread, which passes uncompressed files through unchanged.
#include "loom/data/fashion_mnist.h"

#include <unistd.h>
#include <zlib.h>

#include <cstring>
#include <filesystem>
#include <memory>

#include "loom/data/input_file.h"

namespace loom::data {

using ::loom::detail::concat;

namespace detail {

constexpr int64_t kMaxIdxBytes = int64_t{1} << 28;

IdxFile read_idx(const std::string& path, uint32_t magic) {
  // Through the checked opener: a FIFO or a device named like the file is an error, not a hang.
  const int fd = open_input_file(path, uint64_t{1} << 30, "FashionMnist's file size limit");
  std::unique_ptr<gzFile_s, int (*)(gzFile)> file(gzdopen(fd, "rb"), gzclose);
  if (file == nullptr) ::close(fd);
  LOOM_CHECK(file != nullptr, "FashionMnist: cannot open ", path);
  auto read_exact = [&](void* out, size_t n, const char* what) {
    size_t done = 0;
    while (done < n) {
      const unsigned chunk = static_cast<unsigned>(std::min<size_t>(n - done, 1u << 30));
      const int got = gzread(file.get(), static_cast<char*>(out) + done, chunk);
      LOOM_CHECK(got > 0, "FashionMnist: ", path, " is truncated or corrupt (reading ", what, ", ",
                 done, " of ", n, " bytes)");
      done += static_cast<size_t>(got);
    }
  };
  auto be32 = [](const uint8_t* b) {
    return (uint32_t{b[0]} << 24) | (uint32_t{b[1]} << 16) | (uint32_t{b[2]} << 8) | b[3];
  };
  uint8_t header[4];
  read_exact(header, 4, "the magic number");
  LOOM_CHECK(be32(header) == magic, "FashionMnist: ", path, " has magic number 0x", std::hex,
             be32(header), ", expected 0x", magic, " (an IDX file of unsigned bytes)");
  const int ndims = header[3];
  IdxFile idx;
  int64_t total = 1;
  for (int d = 0; d < ndims; ++d) {
    uint8_t b[4];
    read_exact(b, 4, "the dimensions");
    idx.dims.push_back(be32(b));
    total *= idx.dims.back();
    // Checked per dimension, before the allocation: a few bytes of header must not allocate
    // gigabytes. The limit is 5x Fashion-MNIST's training images (47 MB).
    LOOM_CHECK(total <= kMaxIdxBytes, "FashionMnist: ", path, " declares ", total,
               " bytes, over the limit of ", kMaxIdxBytes);
  }
  idx.data.resize(static_cast<size_t>(total));
  read_exact(idx.data.data(), idx.data.size(), "the data");
  return idx;
}

}  // namespace detail

namespace {

// The file itself, or with .gz appended (Debian ships the gzipped files).
std::string find_file(const std::string& root, const std::string& name) {
  const std::filesystem::path plain = std::filesystem::path(root) / name;
  std::error_code ec;
  if (std::filesystem::exists(plain, ec)) return plain.string();
  const std::string gz = plain.string() + ".gz";
  LOOM_CHECK(std::filesystem::exists(gz, ec), "FashionMnist: neither ", plain.string(), " nor ", gz,
             " exists (install Debian's dataset-fashion-mnist or pass the folder)");
  return gz;
}

}  // namespace

FashionMnist::FashionMnist(const std::string& root, bool train) {
  const std::string prefix = train ? "train" : "t10k";
  const std::string image_path = find_file(root, prefix + "-images-idx3-ubyte");
  const std::string label_path = find_file(root, prefix + "-labels-idx1-ubyte");
  detail::IdxFile images = detail::read_idx(image_path, 0x803);
  detail::IdxFile labels = detail::read_idx(label_path, 0x801);
  LOOM_CHECK(images.dims.size() == 3, "FashionMnist: ", image_path, " has ", images.dims.size(),
             " dimensions, expected 3");
  LOOM_CHECK(labels.dims.size() == 1 && labels.dims[0] == images.dims[0],
             "FashionMnist: ", label_path, " holds ", labels.dims.empty() ? 0 : labels.dims[0],
             " labels for ", images.dims[0], " images in ", image_path);
  for (uint8_t l : labels.data) {
    LOOM_CHECK(l < 10, "FashionMnist: ", label_path, " holds label ", int(l), ", expected 0..9");
  }
  count_ = images.dims[0];
  rows_ = images.dims[1];
  cols_ = images.dims[2];
  images_ = empty({count_, rows_, cols_, 1}, kUInt8);
  std::memcpy(images_.raw_data(), images.data.data(), images.data.size());
  labels_ = std::move(labels.data);
}

Example FashionMnist::get(int64_t index) const {
  LOOM_CHECK(index >= 0 && index < count_, "FashionMnist: index ", index, " out of range for ",
             count_, " images");
  return Example{images_.select(0, index), labels_[index]};
}

const std::vector<std::string>& FashionMnist::classes() {
  static const std::vector<std::string> names = {"T-shirt/top", "Trouser",   "Pullover", "Dress",
                                                 "Coat",        "Sandal",    "Shirt",    "Sneaker",
                                                 "Bag",         "Ankle boot"};
  return names;
}

}  // namespace loom::data
