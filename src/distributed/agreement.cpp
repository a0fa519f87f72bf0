// all_equal of agreement.h.
#include "loom/distributed/agreement.h"

#include <vector>

namespace loom::dist {

bool all_equal(ProcessGroup& group, uint64_t value) {
  if (group.size() == 1) return true;
  // 32-bit halves, so that negating them cannot overflow.
  const auto low = static_cast<int64_t>(value & 0xffffffffu), high = static_cast<int64_t>(value >> 32);
  Tensor words = from_vector(std::vector<int64_t>{low, high, -low, -high}).to(group.device());
  group.all_reduce(words, ReduceOp::Min)->wait();
  const std::vector<int64_t> m = words.cpu().to_vector<int64_t>();
  // min(x) == max(x) for both halves: max(x) is -min(-x).
  return m[0] == -m[2] && m[1] == -m[3];
}

}  // namespace loom::dist
