// Every collective of a ProcessGroup on every dtype, with inputs valued by rank and answers in
// closed form (as flashlight's AllReduceTest). One copy serves the in-process tests and the
// worker program the launch tests start, and it works on any backend.
#pragma once

#include <string>
#include <vector>

#include "loom/distributed/process_group.h"

namespace loom::testing {

// Small integers (and, for avg, halves): exact in every dtype, so results compare with ==.
inline Tensor tensor_of(const std::vector<double>& values, DType dtype) {
  return from_vector<double>(values, {static_cast<int64_t>(values.size())}, TensorOptions(dtype));
}

// "" or what differs, naming the collective.
inline std::string differences(const std::string& what, const Tensor& got,
                               const std::vector<double>& want) {
  const std::vector<double> values = got.to_vector<double>();
  for (size_t i = 0; i < want.size(); ++i) {
    if (values.size() != want.size() || values[i] != want[i]) {
      return detail::concat(what, " ", dtype_name(got.dtype()), ": element ", i, " is ",
                            i < values.size() ? values[i] : -1.0, ", expected ", want[i]);
    }
  }
  return "";
}

// Runs each collective (waiting for it) and returns the mismatches; empty when all are right.
// With n ranks, m = 3 elements a rank, rank r and i < m:
//   all_reduce of x_r[i] = r + 1 + i:  sum n(n+1)/2 + n i, avg (n+1)/2 + i, max n + i, min 1 + i
//   broadcast from root n-1 of x_r[i] = 10 r + i:  10 (n-1) + i
//   all_gather of x_r[i] = 10 r + i:  element q m + i is 10 q + i
//   reduce_scatter of x_r[j] = r + j (j < n m):  sum n(n-1)/2 + n (r m + i), max n-1 + r m + i
// (uint8 holds all of these up to n = 8.)
inline std::vector<std::string> check_every_collective(dist::ProcessGroup& group) {
  using dist::ReduceOp;
  std::vector<std::string> wrong;
  auto note = [&](const std::string& d) {
    if (!d.empty()) wrong.push_back(d);
  };
  const int n = group.size(), r = group.rank();
  const int m = 3;
  for (DType dtype : {kFloat32, kFloat64, kInt64, kInt32, kUInt8}) {
    for (ReduceOp op : {ReduceOp::Sum, ReduceOp::Avg, ReduceOp::Max, ReduceOp::Min}) {
      if (op == ReduceOp::Avg && !is_floating(dtype)) continue;
      std::vector<double> x, want;
      for (int i = 0; i < m; ++i) {
        x.push_back(r + 1 + i);
        const double sum = n * (n + 1) / 2.0 + n * i;
        want.push_back(op == ReduceOp::Sum   ? sum
                       : op == ReduceOp::Avg ? sum / n
                       : op == ReduceOp::Max ? n + i
                                             : 1 + i);
      }
      Tensor t = tensor_of(x, dtype);
      group.all_reduce(t, op)->wait();
      note(differences(detail::concat("all_reduce ", dist::reduce_op_name(op)), t, want));
    }

    std::vector<double> x, want;
    for (int i = 0; i < m; ++i) {
      x.push_back(10 * r + i);
      want.push_back(10 * (n - 1) + i);
    }
    Tensor t = tensor_of(x, dtype);
    group.broadcast(t, n - 1)->wait();
    note(differences("broadcast", t, want));

    Tensor gathered = zeros({n * m}, TensorOptions(dtype));
    want.clear();
    for (int q = 0; q < n; ++q) {
      for (int i = 0; i < m; ++i) want.push_back(10 * q + i);
    }
    group.all_gather(gathered, tensor_of(x, dtype))->wait();
    note(differences("all_gather", gathered, want));

    for (ReduceOp op : {ReduceOp::Sum, ReduceOp::Max}) {
      std::vector<double> in, expected;
      for (int j = 0; j < n * m; ++j) in.push_back(r + j);
      for (int i = 0; i < m; ++i) {
        expected.push_back(op == ReduceOp::Sum ? n * (n - 1) / 2.0 + n * (r * m + i)
                                               : n - 1 + r * m + i);
      }
      Tensor out = zeros({m}, TensorOptions(dtype));
      group.reduce_scatter(out, tensor_of(in, dtype), op)->wait();
      note(differences(detail::concat("reduce_scatter ", dist::reduce_op_name(op)), out, expected));
    }
  }
  group.barrier()->wait();
  return wrong;
}

}  // namespace loom::testing
