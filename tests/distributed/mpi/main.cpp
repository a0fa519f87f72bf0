// The main of distributed_mpi_tests, started on every rank by mpiexec: loom initialises MPI
// (and finalises it at exit), every rank runs every test in the same order, and only rank 0
// prints, except that any rank prints its own failures.
#include <cstdio>

#include "mpi_testing.h"

namespace {

// Ranks other than 0 stay quiet unless something fails there.
class FailurePrinter : public ::testing::EmptyTestEventListener {
 public:
  explicit FailurePrinter(int rank) : rank_(rank) {}

  void OnTestPartResult(const ::testing::TestPartResult& result) override {
    if (!result.failed()) return;
    std::fprintf(stderr, "[rank %d] %s:%d: Failure\n%s\n", rank_,
                 result.file_name() ? result.file_name() : "?", result.line_number(),
                 result.message());
  }
  void OnTestEnd(const ::testing::TestInfo& info) override {
    if (info.result()->Failed()) {
      std::fprintf(stderr, "[rank %d] FAILED %s.%s\n", rank_, info.test_suite_name(), info.name());
    }
  }

 private:
  const int rank_;
};

}  // namespace

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  // The first group initialises MPI; its rank decides who prints.
  const int rank = loom::testing::fresh_group()->rank();
  if (rank != 0) {
    ::testing::TestEventListeners& listeners = ::testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
    listeners.Append(new FailurePrinter(rank));
  }
  // mpiexec exits non-zero when any rank does.
  return RUN_ALL_TESTS();
}
