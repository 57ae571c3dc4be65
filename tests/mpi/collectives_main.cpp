// main() of the collective tests (collectives_*_test.cpp), and the parameterised tests their
// files instantiate, each for its own family of collectives.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cstdio>
#include <vector>

#include "tests/mpi/collectives_harness.hpp"
#include "tests/mpi/gtest_mpi.hpp"
#include "tests/mpi/loom_env.hpp"

namespace {

using namespace loom::test::coll;

TEST_P(Collectives, SameBytesAsHost) {
  const auto [kind, family, mode, form] = GetParam();
  Case c;
  c.family = &families()[static_cast<size_t>(family)];
  c.mode = mode;
  c.form = form;
  run(kCollectives[kind].coll, kCollectives[kind].topology, c);
}

TEST_P(InPlace, SameBytesAsHost) {
  const auto [kind, family, mode, form] = GetParam();
  Case c;
  c.family = &families()[static_cast<size_t>(family)];
  c.mode = mode;
  c.form = form;
  c.in_place = true;
  if (kInPlace[kind] == Coll::Alltoallw && kHostInPlaceAlltoallwFails &&
      loom::test::loom_disabled_by_env())
    GTEST_SKIP() << "Loom is disabled: this would only run the host's failing in-place Alltoallw";
  run(kInPlace[kind], Topology::None, c);
}

TEST_P(ZeroCounts, SameBytesAsHost) {
  const auto [kind, form] = GetParam();
  for (Mode mode : {Mode::Derived, Mode::MixedRanks}) {
    Case c;
    c.family = &families()[1];  // vector
    c.mode = mode;
    c.form = form;
    c.zero = true;
    run(kCollectives[kind].coll, kCollectives[kind].topology, c);
  }
}

TEST_P(NoPlanOnOneRank, SameBytesAsHost) {
  ASSERT_FALSE(no_plan().empty()) << "no candidate type lacks a Loom plan: pick a new one";
  const auto [kind, form] = GetParam();
  for (const Family& family : no_plan()) {
    SCOPED_TRACE(family.name);
    Case c;
    c.family = &family;
    c.mode = Mode::FirstRankDerived;
    c.form = form;
    run(kCollectives[kind].coll, kCollectives[kind].topology, c);
  }
}

TEST_P(LargeCountForms, SameBytesAsHostAndThroughLoomAsTheClassicForms) {
#if MPI_VERSION >= 4
  const auto [kind, form] = GetParam();
  // Every route of a derived-type call, the host's for a type not planned yet included (lazy
  // planning: the vector type may be planned between the two forms' calls).
  const auto through_loom = [] {
    const loom_stats s = stats_now();
    uint64_t unplanned = 0;
    EXPECT_EQ(loom_get_counter("collectives.host_(not_planned_yet)", &unplanned), 1);
    return s.collective_packed + s.collective_host + s.collective_shared + unplanned;
  };
  for (Mode mode : {Mode::Derived, Mode::MixedRanks}) {
    uint64_t seen[2] = {0, 0};  // classic, large-count
    for (const bool large_count : {false, true}) {
      SCOPED_TRACE(large_count ? "large-count form" : "classic form");
      Case c;
      c.family = &families()[1];  // vector
      c.mode = mode;
      c.form = form;
      c.large_count = large_count;
      const uint64_t before = through_loom();
      run(kCollectives[kind].coll, kCollectives[kind].topology, c);
      seen[large_count] = through_loom() - before;
    }
    EXPECT_EQ(seen[1], seen[0]) << "calls Loom saw in the large-count and the classic form";
    // A rank with nothing to move may see nothing (a gatherv's zero contribution); some must.
    uint64_t seen_anywhere = 0;
    PMPI_Allreduce(&seen[0], &seen_anywhere, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
    if (loom_is_active() && mode == Mode::Derived) {
      EXPECT_GT(seen_anywhere, 0u);
    }
  }
#else
  GTEST_SKIP() << "the host MPI is MPI-" << MPI_VERSION << "." << MPI_SUBVERSION
               << ": no large-count functions to test";
#endif
}

// Each family's file instantiates these for its own collectives: InPlace only where they
// have in-place forms, none of them in collectives_loom_test.cpp.
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(Collectives);
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(InPlace);
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(ZeroCounts);
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(NoPlanOnOneRank);
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(LargeCountForms);

class FailurePrinter : public ::testing::EmptyTestEventListener {
  void OnTestPartResult(const ::testing::TestPartResult& result) override {
    if (result.failed())
      std::fprintf(stderr, "[rank %d] %s:%d: %s\n", g_rank,
                   result.file_name() ? result.file_name() : "?", result.line_number(),
                   result.summary());
  }
};

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &g_size);
  if (g_size < 2 || g_size % 2 != 0) {
    if (g_rank == 0) std::fprintf(stderr, "run with an even number of ranks (2, 4, ...)\n");
    MPI_Finalize();
    return 1;
  }
  // Rank 0 prints GoogleTest's progress; the other ranks print only their failures.
  if (g_rank != 0) {
    ::testing::TestEventListeners& listeners = ::testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
    listeners.Append(new FailurePrinter);
  }
  return loom::test::run_tests_and_finalize(&argc, argv);
}
