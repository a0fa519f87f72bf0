// Every collective of a ProcessGroup on inputs valued by rank, against answers in closed form:
// rank r's element i is (r + 1) * (i % 7 + 1), so over N ranks the sum is (i % 7 + 1) * N(N+1)/2,
// the max N * (i % 7 + 1) and the min (i % 7 + 1); every value fits uint8 up to 8 ranks.
// Called on every rank of a group (any backend, CPU or CUDA); failures are EXPECTs.
#pragma once

#include <gtest/gtest.h>
#include <loom/loom.h>

#include <string>
#include <vector>

#include "loom/distributed/distributed.h"

namespace loom::testing {

inline double rank_value(int rank, int64_t i) { return (rank + 1) * (i % 7 + 1); }

// A tensor of n elements on the group's device, element i = rank_value(rank, i + first).
inline Tensor rank_tensor(const dist::ProcessGroup& g, int64_t n, DType dtype, int64_t first = 0) {
  std::vector<double> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = rank_value(g.rank(), i + first);
  return from_vector(v, {n}, TensorOptions(dtype)).to(g.device());
}

inline std::vector<double> host_values(const Tensor& t) {
  return t.cpu().to(kFloat64).to_vector<double>();
}

inline double expected_reduce(dist::ReduceOp op, int world, int64_t i) {
  const double base = i % 7 + 1;
  switch (op) {
    case dist::ReduceOp::Sum:
      return base * world * (world + 1) / 2;
    case dist::ReduceOp::Avg:
      return base * (world + 1) / 2.0;
    case dist::ReduceOp::Max:
      return base * world;
    case dist::ReduceOp::Min:
      return base;
  }
  return 0;
}

#define LOOM_EXPECT_VALUES(got, expected_of_i, what)                                          \
  do {                                                                                        \
    const std::vector<double> loom_got_ = (got);                                              \
    for (size_t i = 0; i < loom_got_.size(); ++i) {                                           \
      const double want = (expected_of_i);                                                    \
      if (loom_got_[i] != want) {                                                             \
        ADD_FAILURE() << what << ": element " << i << " is " << loom_got_[i] << ", expected " \
                      << want << " (" << g.who() << ")";                                      \
        break;                                                                                \
      }                                                                                       \
    }                                                                                         \
  } while (0)

// Runs every collective in `dtype` with n elements per rank (n = 0 included by callers).
inline void check_all_collectives(dist::ProcessGroup& g, DType dtype, int64_t n) {
  using dist::ReduceOp;
  const int world = g.size();
  const std::string tag = std::string(dtype_name(dtype)) + " n=" + std::to_string(n);
  for (ReduceOp op : {ReduceOp::Sum, ReduceOp::Avg, ReduceOp::Max, ReduceOp::Min}) {
    if (op == ReduceOp::Avg && !is_floating(dtype)) continue;
    Tensor t = rank_tensor(g, n, dtype);
    g.all_reduce(t, op)->wait();
    LOOM_EXPECT_VALUES(host_values(t), expected_reduce(op, world, int64_t(i)),
                       "all_reduce " << dist::reduce_op_name(op) << " " << tag);
  }
  for (int root = 0; root < world; ++root) {
    Tensor t = rank_tensor(g, n, dtype);
    g.broadcast(t, root)->wait();
    LOOM_EXPECT_VALUES(host_values(t), rank_value(root, int64_t(i)),
                       "broadcast root " << root << " " << tag);
  }
  {
    Tensor in = rank_tensor(g, n, dtype);
    Tensor out = full({world * n}, -1.0, TensorOptions(dtype).device(g.device()));
    g.all_gather(out, in)->wait();
    LOOM_EXPECT_VALUES(host_values(out),
                       rank_value(static_cast<int>(int64_t(i) / std::max<int64_t>(n, 1)),
                                  int64_t(i) % std::max<int64_t>(n, 1)),
                       "all_gather " << tag);
  }
  for (ReduceOp op : {ReduceOp::Sum, ReduceOp::Avg, ReduceOp::Max, ReduceOp::Min}) {
    if (op == ReduceOp::Avg && !is_floating(dtype)) continue;
    Tensor in = rank_tensor(g, world * n, dtype);
    Tensor out = full({n}, -1.0, TensorOptions(dtype).device(g.device()));
    g.reduce_scatter(out, in, op)->wait();
    LOOM_EXPECT_VALUES(host_values(out), expected_reduce(op, world, int64_t(i) + g.rank() * n),
                       "reduce_scatter " << dist::reduce_op_name(op) << " " << tag);
  }
  g.barrier()->wait();
}

// Several collectives queued before any is waited on, waited in reverse order, two of them on
// the same tensor: results as if run one after another.
inline void check_queued_collectives(dist::ProcessGroup& g) {
  const int world = g.size();
  Tensor a = rank_tensor(g, 1000, kFloat32);
  Tensor b = rank_tensor(g, 10, kInt64);
  std::vector<dist::WorkPtr> works;
  works.push_back(g.all_reduce(a));                       // a = sum
  works.push_back(g.broadcast(b, world - 1));             // b = last rank's
  works.push_back(g.all_reduce(a, dist::ReduceOp::Max));  // max over ranks of the same sum
  works.push_back(g.barrier());
  for (auto it = works.rbegin(); it != works.rend(); ++it) (*it)->wait();
  LOOM_EXPECT_VALUES(host_values(a), expected_reduce(dist::ReduceOp::Sum, world, int64_t(i)),
                     "queued all_reduce");
  LOOM_EXPECT_VALUES(host_values(b), rank_value(world - 1, int64_t(i)), "queued broadcast");
  for (const auto& w : works) {
    EXPECT_TRUE(w->is_completed());
    EXPECT_FALSE(w->is_failed());
  }
  EXPECT_EQ(works[2]->info().sequence, works[0]->info().sequence + 2);
}

inline const std::vector<DType>& all_dtypes() {
  static const std::vector<DType> dtypes = {kFloat32, kFloat64, kInt64, kInt32, kUInt8};
  return dtypes;
}

}  // namespace loom::testing
