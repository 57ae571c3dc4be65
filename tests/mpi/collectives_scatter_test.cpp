// Collectives, scatter (MPI 4.0, 6.6): Scatter, Scatterv and their non-blocking forms,
// through Loom against the host.
// (The harness and the conventions of every collective test: collectives_harness.hpp; the
// parameterised tests instantiated here: collectives_main.cpp.)
#include <gtest/gtest.h>
#include <mpi.h>

#include "tests/mpi/collectives_harness.hpp"

namespace {

using namespace loom::test::coll;

const std::vector<int> kKinds = kinds_of({Coll::Scatter, Coll::Scatterv});

INSTANTIATE_TEST_SUITE_P(Types, Collectives, types_cases(kKinds), types_name);
INSTANTIATE_TEST_SUITE_P(Types, InPlace,
                         in_place_cases(in_place_kinds_of({Coll::Scatter, Coll::Scatterv})),
                         in_place_name);
INSTANTIATE_TEST_SUITE_P(All, ZeroCounts, kind_cases(kKinds), kind_name);
INSTANTIATE_TEST_SUITE_P(All, NoPlanOnOneRank, kind_cases(kKinds), kind_name);
INSTANTIATE_TEST_SUITE_P(All, LargeCountForms, kind_cases(kKinds), kind_name);

}  // namespace
