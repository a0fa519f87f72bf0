// check_same_across_ranks and broadcast_from_rank0 (see model_check.h).
#include "loom/distributed/model_check.h"

#include <algorithm>
#include <cstring>
#include <sstream>

#include "loom/tensor/shape.h"

namespace loom::dist {

namespace {

std::vector<std::string> describe(const NamedList& tensors) {
  std::vector<std::string> lines;
  for (const auto& [name, t] : tensors) {
    const bool nhwc = t.suggest_memory_format() == MemoryFormat::ChannelsLast;
    lines.push_back(detail::concat("'", name, "' ", dtype_name(t.dtype()), " ",
                                   shape_str(t.shape()), nhwc ? " channels-last" : ""));
  }
  return lines;
}

std::string joined(const std::vector<std::string>& lines) {
  std::string s;
  for (const std::string& line : lines) s += line + "\n";
  return s;
}

uint64_t fnv1a(const std::string& s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}

// Every rank's int64 values (the same count on each), gathered on the group's device.
std::vector<int64_t> gather_ints(ProcessGroup& group, const std::vector<int64_t>& mine) {
  const auto n = static_cast<int64_t>(mine.size());
  Tensor in = from_vector(mine, {n}).to(group.device());
  Tensor out = empty({n * group.size()}, TensorOptions(kInt64).device(group.device()));
  group.all_gather(out, in)->wait();
  return out.cpu().to_vector<int64_t>();
}

std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

}  // namespace

void check_same_across_ranks(ProcessGroup& group, const NamedList& tensors, const char* what) {
  if (group.size() == 1) return;
  const std::string mine = joined(describe(tensors));
  const std::vector<int64_t> keys =
      gather_ints(group, {static_cast<int64_t>(fnv1a(mine)), static_cast<int64_t>(mine.size())});
  bool same = true;
  int64_t longest = 0;
  for (int r = 0; r < group.size(); ++r) {
    same = same && keys[2 * r] == keys[0] && keys[2 * r + 1] == keys[1];
    longest = std::max(longest, keys[2 * r + 1]);
  }
  if (same) return;

  // Someone differs: gather every description to say where.
  Tensor text = zeros({longest}, TensorOptions(kUInt8));
  std::memcpy(text.raw_data(), mine.data(), mine.size());
  Tensor all = empty({longest * group.size()}, TensorOptions(kUInt8).device(group.device()));
  group.all_gather(all, text.to(group.device()))->wait();
  const Tensor host = all.cpu();
  auto rank_text = [&](int r) {
    const char* base = static_cast<const char*>(host.raw_data()) + r * longest;
    return std::string(base, static_cast<size_t>(keys[2 * r + 1]));
  };
  const std::vector<std::string> reference = split_lines(rank_text(0));
  for (int r = 1; r < group.size(); ++r) {
    const std::vector<std::string> other = split_lines(rank_text(r));
    if (other == reference) continue;
    size_t i = 0;
    while (i < reference.size() && i < other.size() && reference[i] == other[i]) ++i;
    const std::string on0 = i < reference.size()
                                ? reference[i]
                                : "nothing (it has " + std::to_string(reference.size()) + ")";
    const std::string onr =
        i < other.size() ? other[i] : "nothing (it has " + std::to_string(other.size()) + ")";
    throw Error(detail::concat("DistributedDataParallel: the ranks' models differ: ", what, " ", i,
                               " is ", on0, " on rank 0 but ", onr, " on rank ", r, " (",
                               group.who(), ")"));
  }
}

void broadcast_from_rank0(ProcessGroup& group, const NamedList& tensors) {
  if (group.size() == 1) return;
  std::vector<WorkPtr> works;
  for (const auto& entry : tensors) {
    // A channels-last tensor goes as its memory: every rank has the same layout (checked above).
    const Tensor& t = entry.second;
    const bool dense = t.is_contiguous(t.suggest_memory_format());
    works.push_back(group.broadcast(dense ? t.as_strided({t.numel()}, {1}, t.offset()) : t, 0));
  }
  for (const WorkPtr& w : works) w->wait();
}

}  // namespace loom::dist
