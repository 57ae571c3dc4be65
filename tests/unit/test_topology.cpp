// Distances between ranks from the machine's topology (place/topology.hpp), on hwloc synthetic
// topologies whose answers are known, and placement against them.
#include <gtest/gtest.h>

#include <numeric>
#include <stdexcept>
#include <string>
#include <vector>

#include "place/partition.hpp"
#include "place/placement.hpp"
#include "place/topology.hpp"

using namespace loom::place;

namespace {

// 2 packages x 2 NUMA domains x 1 L3 x 2 cores x 2 PUs: PUs 0-1 one core, 0-3 one L3 and one
// NUMA domain, 0-7 one package.
constexpr const char* kTwoSockets = "pack:2 numa:2 l3:1 core:2 pu:2";

TEST(PlaceTopology, NearnessFollowsTheHierarchy) {
  const Topology t(kTwoSockets);
  EXPECT_EQ(t.nearness("0", "0"), Nearness::SameCore);
  EXPECT_EQ(t.nearness("0", "1"), Nearness::SameCore);
  EXPECT_EQ(t.nearness("0", "2"), Nearness::SharedCache);
  EXPECT_EQ(t.nearness("1", "3"), Nearness::SharedCache);
  EXPECT_EQ(t.nearness("0", "4"), Nearness::SamePackage);
  EXPECT_EQ(t.nearness("0", "8"), Nearness::Machine);
  EXPECT_EQ(t.nearness("6-7", "9"), Nearness::Machine);
  // Unbound (empty) or unreadable lists mean the whole machine.
  EXPECT_EQ(t.nearness("", "0"), Nearness::Machine);
  EXPECT_EQ(t.nearness("not a list", "0"), Nearness::Machine);
}

TEST(PlaceTopology, SameNumaDomainWithoutASharedCache) {
  // One NUMA domain per package holding two L3s.
  const Topology t("pack:2 numa:1 l3:2 core:2 pu:1");
  EXPECT_EQ(t.nearness("0", "1"), Nearness::SharedCache);
  EXPECT_EQ(t.nearness("0", "2"), Nearness::SameNuma);
  EXPECT_EQ(t.nearness("0", "4"), Nearness::Machine);
}

TEST(PlaceTopology, OneMemoryOverTwoPackagesStillCrossesThem) {
  // hwloc's synthetic default: one NUMA node for the whole machine.
  const Topology t("pack:2 core:4 pu:1");
  EXPECT_EQ(t.nearness("0", "1"), Nearness::SameNuma);
  EXPECT_EQ(t.nearness("0", "4"), Nearness::Machine);
}

TEST(PlaceTopology, DistancesAreSymmetricWithAZeroDiagonal) {
  const Topology t(kTwoSockets);
  const std::vector<std::string> cpus{"0", "1", "2", "4", "8", ""};
  const SquareMatrix d = t.distances(cpus);
  ASSERT_EQ(d.size(), 6);
  for (int a = 0; a < 6; ++a) {
    EXPECT_EQ(d(a, a), 0);
    for (int b = 0; b < 6; ++b) EXPECT_EQ(d(a, b), d(b, a));
  }
  EXPECT_LT(d(0, 1), d(0, 2));
  EXPECT_LT(d(0, 2), d(0, 3));
  EXPECT_LT(d(0, 3), d(0, 4));
  EXPECT_EQ(d(0, 5), static_cast<double>(Nearness::Machine));
}

TEST(PlaceTopology, UnboundRanksKeepTheRankOrder) {
  // Every rank anywhere: all distances alike, so no placement beats the rank order.
  const Topology t(kTwoSockets);
  const std::vector<std::string> cpus(8);
  const SquareMatrix d = t.distances(cpus);
  const Partition p = partition({64, 16, 16}, Radius::uniform(2), 1, 8);
  const SquareMatrix w = halo_bytes(p, Radius::uniform(2), {false, false, false}, 8, 0);
  std::vector<int> in_order(8);
  std::iota(in_order.begin(), in_order.end(), 0);
  EXPECT_DOUBLE_EQ(place(w, d).cost, placement_cost(w, d, in_order));
}

TEST(PlaceTopology, InterleavedBindingIsPlacedBySocket) {
  // Ranks bound alternately to the two packages (rank r on package r % 2), the way a
  // round-robin launcher binds them. In rank order every neighbour pair of a slab partition
  // crosses packages; placement keeps neighbours on one package.
  const Topology t("pack:2 core:4 pu:1");
  std::vector<std::string> cpus;
  for (int r = 0; r < 8; ++r) cpus.push_back(std::to_string((r % 2) * 4 + r / 2));
  const SquareMatrix d = t.distances(cpus);
  const Partition p = partition({256, 8, 8}, Radius::uniform(1), 1, 8);
  ASSERT_EQ(p.rank_grid(), (Index3{8, 1, 1}));
  const SquareMatrix w = halo_bytes(p, Radius::uniform(1), {false, false, false}, 8, 0);
  std::vector<int> in_order(8);
  std::iota(in_order.begin(), in_order.end(), 0);
  const Placement best = place(w, d);
  EXPECT_LT(best.cost, placement_cost(w, d, in_order));
  // Seven neighbour pairs along x, one of which must cross: the optimum crosses once.
  int crossings = 0;
  for (int s = 0; s + 1 < 8; ++s)
    crossings +=
        best.rank_of[static_cast<size_t>(s)] % 2 != best.rank_of[static_cast<size_t>(s + 1)] % 2;
  EXPECT_EQ(crossings, 1);
}

TEST(PlaceTopology, MalformedSyntheticTopologyThrows) {
  EXPECT_THROW(Topology("pack:two"), std::runtime_error);
}

TEST(PlaceTopology, ThisMachineLoads) {
  const Topology t;
  // Whatever the binding, one process's CPUs are as near to themselves as anything.
  const std::string mine = t.bound_cpus();
  EXPECT_LE(static_cast<int>(t.nearness(mine, mine)), static_cast<int>(t.nearness(mine, "")));
}

}  // namespace
