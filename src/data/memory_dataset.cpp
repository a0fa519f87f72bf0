// Decoding a whole dataset into memory with a few threads; order and labels are preserved.
#include "loom/data/memory_dataset.h"

#include <algorithm>
#include <atomic>
#include <exception>
#include <mutex>
#include <thread>

namespace loom::data {

InMemoryDataset::InMemoryDataset(const Dataset& source, int num_threads, OnBadInput on_bad_input,
                                 const Progress& progress) {
  LOOM_CHECK(num_threads >= 1, "InMemoryDataset: num_threads must be at least 1, got ",
             num_threads);
  const int64_t n = source.size();
  std::vector<Example> all(static_cast<size_t>(n));
  std::vector<char> ok(static_cast<size_t>(n), 0);
  std::atomic<int64_t> next{0};
  std::atomic<bool> failed{false};
  std::mutex error_mutex;
  std::exception_ptr error;
  const int64_t report_every = std::max<int64_t>(1, n / 100);
  int64_t reported = 0;  // by the constructing thread, the only one that reports
  // The constructing thread reports how far the handing out of samples has got.
  auto work = [&](bool reports) {
    for (int64_t i = next++; i < n && !failed; i = next++) {
      if (reports && progress && i - reported >= report_every) progress(reported = i, n);
      try {
        all[i] = source.get(i);
        ok[i] = 1;
      } catch (const BadSample& e) {
        if (on_bad_input == OnBadInput::Skip) {
          warn(std::string("skipping ") + e.what());
          continue;
        }
        std::lock_guard<std::mutex> lock(error_mutex);
        if (!error) error = std::current_exception();
        failed = true;
      } catch (...) {
        std::lock_guard<std::mutex> lock(error_mutex);
        if (!error) error = std::current_exception();
        failed = true;
      }
    }
  };
  std::vector<std::thread> threads;
  for (int t = 1; t < num_threads; ++t) threads.emplace_back(work, false);
  work(true);
  for (std::thread& t : threads) t.join();
  if (error) std::rethrow_exception(error);
  if (progress) progress(n, n);
  for (int64_t i = 0; i < n; ++i) {
    if (ok[i]) {
      examples_.push_back(std::move(all[i]));
    } else {
      ++skipped_;
    }
  }
  if (skipped_ > 0) {
    warn(::loom::detail::concat("InMemoryDataset: skipped ", skipped_, " of ", n, " samples"));
  }
  // Skipping is for the odd bad file; a dataset of nothing is not what anyone meant to train on.
  LOOM_CHECK(n == 0 || !examples_.empty(), "InMemoryDataset: none of the ", n,
             " samples could be used (every one was skipped; the warnings above say why)");
}

Example InMemoryDataset::get(int64_t index) const {
  LOOM_CHECK(index >= 0 && index < size(), "InMemoryDataset: index ", index, " out of range for ",
             size(), " samples");
  return examples_[index];
}

}  // namespace loom::data
