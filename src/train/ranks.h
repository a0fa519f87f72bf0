// What fit() does across the ranks of a process group: host values reduced or gathered over
// the ranks (the few numbers of a progress line, an epoch's metrics, a checkpoint) and the
// checks that every rank's loaders hold its own shard.
#pragma once

#include <cstdint>
#include <vector>

#include "loom/data/data_loader.h"
#include "loom/distributed/process_group.h"
#include "loom/nn/module.h"

namespace loom::train {

// values[i] <- op over the ranks of values[i], on every rank. The values travel as one float64
// tensor through the group's device (exact for integers below 2^53); one collective.
std::vector<double> all_reduce_values(dist::ProcessGroup& group, const std::vector<double>& values,
                                      dist::ReduceOp op = dist::ReduceOp::Sum);
// op over the ranks of an int64 (as a step count is agreed: Min), on every rank.
int64_t all_reduce_value(dist::ProcessGroup& group, int64_t value, dist::ReduceOp op);
// Every rank's values, rank-major: rank r's n values at [r * n, (r + 1) * n), on every rank.
std::vector<double> all_gather_values(dist::ProcessGroup& group, const std::vector<double>& values);

// Throws, naming the rank and both shards, unless `loader`'s sampler deals this rank's shard of
// the group (a DistributedSampler for training, a DistributedEvalSampler for validation:
// data::train_shard_options / eval_shard_options). `which` names the loader in the message.
void check_loader_shard(const data::DataLoader& loader, const dist::ProcessGroup& group,
                        const char* which);

}  // namespace loom::train
