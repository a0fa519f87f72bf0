// InMemoryDataset: every example of another dataset decoded once, in parallel, and kept as uint8
// so that later epochs cost no decoding (a 64x64 RGB image is 12 KiB).
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include "loom/data/bad_input.h"
#include "loom/data/dataset.h"

namespace loom::data {

class InMemoryDataset : public Dataset {
 public:
  // progress(done, total): called on the constructing thread as samples are decoded (about a
  // hundred times, and once with done == total at the end), for a progress display.
  using Progress = std::function<void(int64_t done, int64_t total)>;
  // Samples that throw BadSample are left out with a warning (Skip) or end the construction
  // (Throw); skipped() counts them. A source none of whose samples can be used is an error.
  InMemoryDataset(const Dataset& source, int num_threads = 1,
                  OnBadInput on_bad_input = OnBadInput::Skip, const Progress& progress = nullptr);

  int64_t size() const override { return static_cast<int64_t>(examples_.size()); }
  // Returns the cached image itself (no copy): treat it as read-only.
  Example get(int64_t index) const override;
  int64_t skipped() const { return skipped_; }

 private:
  std::vector<Example> examples_;
  int64_t skipped_ = 0;
};

}  // namespace loom::data
