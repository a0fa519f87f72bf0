// Grayscale PNG output through libpng, written atomically: a temporary file in the same folder
// is renamed over the target only once it is complete, so no half-written image is left.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace loom::gpu_basics {

// `gray` holds height rows of width 8-bit pixels. Throws loom::Error naming the path when the
// sizes disagree or the file cannot be written.
void write_gray_png(const std::string& path, const std::vector<uint8_t>& gray, int64_t width,
                    int64_t height);

}  // namespace loom::gpu_basics
