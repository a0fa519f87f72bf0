// The encoders' shared argument check and file writing.
#include "loom/data/encode.h"

#include <fstream>

namespace loom::data {

namespace detail {

Tensor check_encodable(const Tensor& image, const char* op, int max_channels) {
  LOOM_CHECK(
      image.dim() == 3 && image.dtype() == kUInt8 && image.device().is_cpu() && image.size(0) > 0 &&
          image.size(1) > 0 && image.size(2) >= 1 && image.size(2) <= max_channels,
      op, ": expected a non-empty uint8 [height, width, 1..", max_channels, "] CPU tensor, got ",
      dtype_name(image.dtype()), " ", shape_str(image.shape()), " on ", image.device().str());
  return image.contiguous();
}

}  // namespace detail

void write_file(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  LOOM_CHECK(out.good(), "write_file: cannot open ", path, " for writing");
  out.write(reinterpret_cast<const char*>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
  LOOM_CHECK(out.good(), "write_file: writing ", bytes.size(), " bytes to ", path, " failed");
}

}  // namespace loom::data
