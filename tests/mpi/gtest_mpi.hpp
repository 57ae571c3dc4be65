// The common main() body of the GoogleTest-based MPI tests: MPI is initialised by the
// caller; errors return instead of aborting, and a run where Loom is inactive (without
// LOOM_DISABLE=1) fails, since it would only compare the host with itself.
#pragma once

#include <gtest/gtest.h>
#include <mpi.h>

#include <string>

#include "tests/mpi/loom_env.hpp"

namespace loom::test {

// The value after `--mode` among a test's arguments, or `fallback`.
inline std::string mode_argument(int argc, char** argv, const char* fallback) {
  for (int i = 1; i + 1 < argc; ++i)
    if (std::string(argv[i]) == "--mode") return argv[i + 1];
  return fallback;
}

inline int run_tests_and_finalize(int* argc, char** argv) {
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
  ::testing::InitGoogleTest(argc, argv);
  const int rc = loom_active_unless_disabled() ? RUN_ALL_TESTS() : 1;
  MPI_Finalize();
  return rc;
}

}  // namespace loom::test
