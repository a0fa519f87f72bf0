// Host values across ranks, and the loader shard checks of ranks.h.
#include "loom/train/ranks.h"

#include <string>

namespace loom::train {

std::vector<double> all_reduce_values(dist::ProcessGroup& group, const std::vector<double>& values,
                                      dist::ReduceOp op) {
  Tensor t = from_vector(values).to(group.device());
  group.all_reduce(t, op)->wait();
  return t.cpu().to_vector<double>();
}

int64_t all_reduce_value(dist::ProcessGroup& group, int64_t value, dist::ReduceOp op) {
  Tensor t = from_vector(std::vector<int64_t>{value}).to(group.device());
  group.all_reduce(t, op)->wait();
  return t.cpu().to_vector<int64_t>()[0];
}

std::vector<double> all_gather_values(dist::ProcessGroup& group,
                                      const std::vector<double>& values) {
  const Tensor mine = from_vector(values).to(group.device());
  Tensor all = empty({group.size() * mine.numel()}, TensorOptions(kFloat64).device(group.device()));
  group.all_gather(all, mine)->wait();
  return all.cpu().to_vector<double>();
}

void check_loader_shard(const data::DataLoader& loader, const dist::ProcessGroup& group,
                        const char* which) {
  const data::Shard s = loader.options().sampler->shard();
  LOOM_CHECK(s.rank == group.rank() && s.world_size == group.size(), "fit: the ", which,
             " loader of ", group.who(), " deals shard ", s.rank, " of ", s.world_size,
             ", not this rank's ", group.rank(), " of ", group.size(),
             "; shard it (data::", which == std::string("training") ? "train" : "eval",
             "_shard_options)");
}

}  // namespace loom::train
