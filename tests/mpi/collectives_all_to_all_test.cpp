// Collectives, the all-to-all family (MPI 4.0, 6.8): Alltoall, Alltoallv, Alltoallw and their
// non-blocking forms, through Loom against the host.
// (The harness and the conventions of every collective test: collectives_harness.hpp; the
// parameterised tests instantiated here: collectives_main.cpp.)
#include <gtest/gtest.h>
#include <mpi.h>

#include <climits>
#include <cstdint>
#include <vector>

#include "tests/mpi/collectives_harness.hpp"

namespace {

using namespace loom::test::coll;

const std::vector<int> kKinds = kinds_of({Coll::Alltoall, Coll::Alltoallv, Coll::Alltoallw});

INSTANTIATE_TEST_SUITE_P(Types, Collectives, types_cases(kKinds), types_name);
INSTANTIATE_TEST_SUITE_P(Types, InPlace,
                         in_place_cases(in_place_kinds_of({Coll::Alltoall, Coll::Alltoallv,
                                                           Coll::Alltoallw})),
                         in_place_name);
INSTANTIATE_TEST_SUITE_P(All, ZeroCounts, kind_cases(kKinds), kind_name);
INSTANTIATE_TEST_SUITE_P(All, NoPlanOnOneRank, kind_cases(kKinds), kind_name);
INSTANTIATE_TEST_SUITE_P(All, LargeCountForms, kind_cases(kKinds), kind_name);

#if MPI_VERSION >= 4
// A displacement beyond an int (of an empty block, so that nothing is read there): Loom cannot
// make the classic call, so the host runs MPI_Alltoallv_c as written, and the bytes are the
// host's own.
TEST_F(CollectiveTest, LargeCountArraysBeyondIntStayWithTheHost) {
  MPI_Datatype strided;
  ASSERT_EQ(MPI_Type_vector(4, 1, 2, MPI_INT, &strided), MPI_SUCCESS);
  ASSERT_EQ(MPI_Type_commit(&strided), MPI_SUCCESS);
  const int p = g_size;
  std::vector<MPI_Count> counts(static_cast<size_t>(p), 1);
  std::vector<MPI_Aint> displs(static_cast<size_t>(p));
  for (int j = 0; j < p; ++j) displs[static_cast<size_t>(j)] = j;
  // The block each rank sends itself: empty on both sides, so the call stays consistent.
  counts[static_cast<size_t>(g_rank)] = 0;
  displs[static_cast<size_t>(g_rank)] = MPI_Aint{INT_MAX} + 1;
  const size_t ints = static_cast<size_t>(8 * p);
  std::vector<int> send(ints), recv_loom(ints, -1), recv_host(ints, -1);
  for (size_t i = 0; i < ints; ++i) send[i] = g_rank * 1000 + static_cast<int>(i);
  const uint64_t before = stats_now().collective_packed + stats_now().collective_host;
  EXPECT_EQ(MPI_Alltoallv_c(send.data(), counts.data(), displs.data(), strided, recv_loom.data(),
                            counts.data(), displs.data(), strided, MPI_COMM_WORLD),
            MPI_SUCCESS);
  EXPECT_EQ(stats_now().collective_packed + stats_now().collective_host, before)
      << "Loom served a call whose displacement does not fit an int";
  EXPECT_EQ(PMPI_Alltoallv_c(send.data(), counts.data(), displs.data(), strided, recv_host.data(),
                             counts.data(), displs.data(), strided, MPI_COMM_WORLD),
            MPI_SUCCESS);
  EXPECT_EQ(recv_loom, recv_host);
  EXPECT_NE(recv_host, std::vector<int>(ints, -1)) << "the host moved nothing";
  MPI_Type_free(&strided);
}
#endif

}  // namespace
