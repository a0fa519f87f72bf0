// The Dataset interface: a fixed number of (image, label) examples, each fetched by index from
// any thread, so the DataLoader's workers can share one dataset.
#pragma once

#include <cstdint>
#include <string>

#include "loom/tensor/tensor.h"

namespace loom::data {

struct Example {
  Tensor image;  // uint8 [height, width, channels] on the CPU
  int64_t label = 0;
};

class Dataset {
 public:
  virtual ~Dataset() = default;
  virtual int64_t size() const = 0;
  // Must be safe to call concurrently. Throws BadSample (naming the file) for a sample that
  // cannot be used; the loader skips those or passes them on, as its OnBadInput says.
  virtual Example get(int64_t index) const = 0;
};

}  // namespace loom::data
