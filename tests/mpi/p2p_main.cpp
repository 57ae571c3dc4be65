// main() of the point-to-point tests (p2p_*_test.cpp): an even number of ranks, the datatype
// corpus set up once, and on ranks other than 0 only failures printed, prefixed with the rank.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cstdio>

#include "tests/mpi/gtest_mpi.hpp"
#include "tests/mpi/p2p_harness.hpp"

namespace {

using namespace loom::test::p2p;

class FailurePrinter : public ::testing::EmptyTestEventListener {
  void OnTestPartResult(const ::testing::TestPartResult& result) override {
    if (!result.failed()) return;
    std::fprintf(stderr, "[rank %d] %s:%d: Failure\n%s\n", g_rank,
                 result.file_name() ? result.file_name() : "?", result.line_number(),
                 result.summary());
  }
};

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  PMPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  PMPI_Comm_size(MPI_COMM_WORLD, &g_size);
  if (g_size < 2 || g_size % 2 != 0) {
    if (g_rank == 0) std::fprintf(stderr, "run with an even number of ranks (2, 4, ...)\n");
    MPI_Finalize();
    return 1;
  }
  ::testing::AddGlobalTestEnvironment(new TypeCorpus);
  if (g_rank != 0) {
    ::testing::TestEventListeners& listeners = ::testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
    listeners.Append(new FailurePrinter);
  }
  return loom::test::run_tests_and_finalize(&argc, argv);
}
