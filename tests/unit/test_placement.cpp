// Intra-node placement (place/placement.hpp): exact search against brute force, the
// heuristic on distance matrices with a known optimum, and halo bytes from a partition.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "place/partition.hpp"
#include "place/placement.hpp"

using namespace loom::place;

namespace {

uint64_t test_seed(uint64_t fallback) {
  const char* text = std::getenv("LOOM_TEST_SEED");
  return text != nullptr ? std::strtoull(text, nullptr, 10) : fallback;
}

double brute_force(const SquareMatrix& w, const SquareMatrix& d) {
  std::vector<int> rank_of(w.size());
  std::iota(rank_of.begin(), rank_of.end(), 0);
  double best = placement_cost(w, d, rank_of);
  while (std::next_permutation(rank_of.begin(), rank_of.end())) {
    best = std::min(best, placement_cost(w, d, rank_of));
  }
  return best;
}

bool is_permutation_of_ranks(const std::vector<int>& rank_of) {
  std::vector<int> sorted = rank_of;
  std::sort(sorted.begin(), sorted.end());
  for (size_t i = 0; i < sorted.size(); ++i) {
    if (sorted[i] != static_cast<int>(i)) return false;
  }
  return true;
}

// A node's cost of moving a byte between two of its ranks, from a hierarchy: ranks
// [0, n) in groups of `per_l3` sharing an L3 and `per_socket` sharing a socket.
SquareMatrix hierarchy_distance(int n, int per_l3, int per_socket) {
  SquareMatrix d(n);
  for (int a = 0; a < n; ++a) {
    for (int b = 0; b < n; ++b) {
      if (a == b)
        d(a, b) = 0;
      else if (a / per_l3 == b / per_l3)
        d(a, b) = 1;
      else if (a / per_socket == b / per_socket)
        d(a, b) = 2;
      else
        d(a, b) = 5;
    }
  }
  return d;
}

// Traffic with the same hierarchy as hierarchy_distance, but over subdomains relabelled by
// `label` (subdomain label[k] plays the part of rank k): heavy inside an L3-sized group,
// lighter between the groups of one socket, none across sockets. Placing subdomain
// label[k] on rank k is then optimal: every pair sits as close as the hierarchy allows
// for its weight.
SquareMatrix clustered_traffic(const std::vector<int>& label, int per_l3, int per_socket) {
  const int n = static_cast<int>(label.size());
  SquareMatrix w(n);
  for (int a = 0; a < n; ++a) {
    for (int b = 0; b < n; ++b) {
      if (a == b) continue;
      double bytes = 0;
      if (a / per_l3 == b / per_l3)
        bytes = 1000;
      else if (a / per_socket == b / per_socket)
        bytes = 10;
      w(label[a], label[b]) = bytes;
    }
  }
  return w;
}

}  // namespace

TEST(PlacePlacement, ExactEqualsBruteForceRandomised) {
  const uint64_t seed = test_seed(424242);
  std::printf("seed %llu (LOOM_TEST_SEED)\n", static_cast<unsigned long long>(seed));
  std::mt19937_64 rng(seed);
  int cases = 0;
  for (int c = 0; c < 300; ++c) {
    const int n = 1 + c % 8;
    const bool symmetric = (c / 8) % 2 == 0;
    SquareMatrix w(n), d(n);
    std::uniform_int_distribution<int> value(0, 9);
    std::bernoulli_distribution sparse(0.4);
    for (int i = 0; i < n; ++i) {
      for (int j = 0; j < n; ++j) {
        if (symmetric && j < i) {
          w(i, j) = w(j, i);
          d(i, j) = d(j, i);
          continue;
        }
        w(i, j) = sparse(rng) ? 0 : value(rng) * 128;
        d(i, j) = value(rng) + 1;
      }
    }
    const std::string where = "seed " + std::to_string(seed) + " case " + std::to_string(c);
    const double optimum = brute_force(w, d);
    const Placement exact = place_exact(w, d);
    ASSERT_TRUE(is_permutation_of_ranks(exact.rank_of)) << where;
    ASSERT_TRUE(exact.exact) << where;
    ASSERT_DOUBLE_EQ(exact.cost, optimum) << where;
    ASSERT_DOUBLE_EQ(placement_cost(w, d, exact.rank_of), optimum) << where;
    const Placement chosen = place(w, d);
    ASSERT_DOUBLE_EQ(chosen.cost, optimum) << where;
    const Placement heuristic = place_heuristic(w, d);
    ASSERT_TRUE(is_permutation_of_ranks(heuristic.rank_of)) << where;
    ASSERT_GE(heuristic.cost, optimum) << where;
    ++cases;
  }
  std::printf("%d cases\n", cases);
}

// A 2-socket node of 8 ranks, two per L3 (Summit-like pairs), with traffic of the same
// shape hidden under a random relabelling: exact finds the planted optimum.
TEST(PlacePlacement, ExactFindsPlantedOptimum) {
  std::mt19937_64 rng(7);
  for (int trial = 0; trial < 20; ++trial) {
    std::vector<int> label(8);
    std::iota(label.begin(), label.end(), 0);
    std::shuffle(label.begin(), label.end(), rng);
    const SquareMatrix d = hierarchy_distance(8, 2, 4);
    const SquareMatrix w = clustered_traffic(label, 2, 4);
    std::vector<int> planted(8);
    for (int k = 0; k < 8; ++k) planted[label[k]] = k;
    const double optimum = placement_cost(w, d, planted);
    EXPECT_DOUBLE_EQ(brute_force(w, d), optimum);
    EXPECT_DOUBLE_EQ(place(w, d).cost, optimum) << "trial " << trial;
  }
}

// Beyond exact search: the heuristic recovers the planted optimum on 16- and 32-rank
// nodes (L3 groups of 4, sockets of 8 or 16), and never does worse than the identity.
TEST(PlacePlacement, HeuristicFindsPlantedOptimumOnLargeNodes) {
  std::mt19937_64 rng(11);
  for (auto [n, per_l3, per_socket] : {std::array<int, 3>{16, 4, 8}, {32, 4, 16}, {24, 3, 12}}) {
    for (int trial = 0; trial < 10; ++trial) {
      std::vector<int> label(n);
      std::iota(label.begin(), label.end(), 0);
      std::shuffle(label.begin(), label.end(), rng);
      const SquareMatrix d = hierarchy_distance(n, per_l3, per_socket);
      const SquareMatrix w = clustered_traffic(label, per_l3, per_socket);
      std::vector<int> planted(n);
      for (int k = 0; k < n; ++k) planted[label[k]] = k;
      const Placement chosen = place(w, d);
      EXPECT_FALSE(chosen.exact);
      ASSERT_TRUE(is_permutation_of_ranks(chosen.rank_of));
      EXPECT_DOUBLE_EQ(chosen.cost, placement_cost(w, d, planted))
          << n << " ranks, trial " << trial;
    }
  }
}

// On random dense 9- and 10-rank cases (hard for local search) the heuristic is checked
// against the exact search: never better (it cannot be), never worse than the identity,
// within 10%; how often it is optimal is printed.
TEST(PlacePlacement, HeuristicAgainstExactOnMidSizes) {
  std::mt19937_64 rng(test_seed(99));
  int optimal = 0, total = 0;
  double worst_gap = 0;
  for (int c = 0; c < 20; ++c) {
    const int n = 9 + c % 2;
    SquareMatrix w(n), d(n);
    std::uniform_real_distribution<double> value(0, 1);
    for (int i = 0; i < n; ++i) {
      for (int j = 0; j < n; ++j) {
        w(i, j) = value(rng) < 0.5 ? 0 : value(rng);
        d(i, j) = value(rng);
      }
    }
    const double exact = place_exact(w, d).cost;
    const Placement heuristic = place_heuristic(w, d);
    std::vector<int> identity(n);
    std::iota(identity.begin(), identity.end(), 0);
    EXPECT_GE(heuristic.cost, exact * (1 - 1e-12));
    EXPECT_LE(heuristic.cost, placement_cost(w, d, identity));
    EXPECT_LE(heuristic.cost, exact * 1.10);
    optimal += heuristic.cost <= exact * (1 + 1e-12) ? 1 : 0;
    worst_gap = std::max(worst_gap, heuristic.cost / exact - 1);
    ++total;
  }
  std::printf("heuristic optimal in %d of %d cases, worst gap %.1f%%\n", optimal, total,
              100 * worst_gap);
}

// Realistic 9- and 10-rank nodes: halo bytes of a partition's node against an L3 / socket
// hierarchy. The heuristic is held to within 5% of the optimum (it found it in every case
// when written) and reports how often it is optimal.
TEST(PlacePlacement, HeuristicAgainstExactOnHaloTraffic) {
  const uint64_t seed = test_seed(5);
  std::printf("seed %llu (LOOM_TEST_SEED)\n", static_cast<unsigned long long>(seed));
  std::mt19937_64 rng(seed);
  auto uniform = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  int optimal = 0, total = 0;
  for (int c = 0; c < 16; ++c) {
    const int n = 9 + c % 2;
    const Extent3 global{uniform(20, 200), uniform(20, 200), uniform(20, 200)};
    const Radius radius = Radius::uniform(1 + c % 3);
    const Partition p = partition(global, radius, 2, n);
    const SquareMatrix w = halo_bytes(p, radius, {c % 2 == 0, true, c % 3 == 0}, 8, 1);
    const SquareMatrix d = hierarchy_distance(n, 2 + c % 3, n / 2 + 1);
    const double exact = place_exact(w, d).cost;
    const double heuristic = place_heuristic(w, d).cost;
    EXPECT_LE(heuristic, exact * 1.05) << "seed " << seed << " case " << c;
    optimal += heuristic <= exact * (1 + 1e-12) ? 1 : 0;
    ++total;
  }
  std::printf("heuristic optimal in %d of %d cases\n", optimal, total);
}

TEST(PlacePlacement, RejectsBadMatrices) {
  SquareMatrix w(3), d(4);
  EXPECT_THROW(place(w, d), std::invalid_argument);
  SquareMatrix negative(3);
  negative(0, 1) = -1;
  EXPECT_THROW(place(negative, SquareMatrix(3)), std::invalid_argument);
  EXPECT_THROW(place(SquareMatrix(3), negative), std::invalid_argument);
  EXPECT_EQ(place(SquareMatrix(0), SquareMatrix(0)).rank_of.size(), 0u);
}

// One node of 8 ranks over 8^3 cells: a 2x2x2 grid of 4^3 subdomains, radius 1, doubles.
TEST(PlaceHaloBytes, FacesEdgesCorners) {
  const Partition p = partition({8, 8, 8}, Radius::uniform(1), 1, 8);
  ASSERT_EQ(p.rank_grid(), (Index3{2, 2, 2}));
  const SquareMatrix open = halo_bytes(p, Radius::uniform(1), {false, false, false}, 8, 0);
  // Rank 0 at (0,0,0): face neighbours 1 (x), 2 (y), 4 (z); edges 3, 5, 6; corner 7.
  EXPECT_EQ(open(0, 0), 0);
  EXPECT_EQ(open(0, 1), 4 * 4 * 8);
  EXPECT_EQ(open(0, 2), 4 * 4 * 8);
  EXPECT_EQ(open(0, 4), 4 * 4 * 8);
  EXPECT_EQ(open(0, 3), 4 * 8);
  EXPECT_EQ(open(0, 6), 4 * 8);
  EXPECT_EQ(open(0, 7), 8);
  for (int i = 0; i < 8; ++i) {
    for (int j = 0; j < 8; ++j) EXPECT_EQ(open(i, j), open(j, i));
  }
  // Periodic with two subdomains per dimension: each neighbour is reached both ways
  // along every dimension where it differs.
  const SquareMatrix wrapped = halo_bytes(p, Radius::uniform(1), {true, true, true}, 8, 0);
  EXPECT_EQ(wrapped(0, 1), 2 * 4 * 4 * 8);
  EXPECT_EQ(wrapped(0, 3), 4 * 4 * 8);
  EXPECT_EQ(wrapped(0, 7), 8 * 8);
  EXPECT_EQ(wrapped(0, 0), 0);
}

TEST(PlaceHaloBytes, AsymmetricRadiusAndSelfNeighbour) {
  // Grid 2x1x1 of 4x3x5 subdomains; x radius 2 below, 1 above; periodic along z only,
  // where the single subdomain is its own neighbour.
  Radius radius;
  radius.minus = {2, 1, 1};
  radius.plus = {1, 1, 1};
  const Partition p = partition({8, 3, 5}, radius, 1, 2);
  ASSERT_EQ(p.rank_grid(), (Index3{2, 1, 1}));
  const SquareMatrix bytes = halo_bytes(p, radius, {false, false, true}, 4, 0);
  // Rank 1 is above rank 0 along x: it reads 2 planes (its lower halo) from rank 0, which
  // reads 1 plane from rank 1; along z each wraps onto itself (lower and upper halo);
  // x-z edges reach the other rank too.
  const double plane = 3 * 5 * 4;
  const double x_edge = 3 * 1 * 4;  // y full, z radius 1
  EXPECT_EQ(bytes(0, 1), 2 * plane + 2 * 2 * x_edge);
  EXPECT_EQ(bytes(1, 0), 1 * plane + 2 * 1 * x_edge);
  EXPECT_EQ(bytes(0, 0), 2 * 4 * 3 * 4);
  // The whole-partition matrix agrees on a single node.
  const SquareMatrix all = halo_bytes(p, radius, {false, false, true}, 4);
  for (int i = 0; i < 2; ++i) {
    for (int j = 0; j < 2; ++j) EXPECT_EQ(all(i, j), bytes(i, j));
  }
}

// End to end: one node of the seed's Fig 4.3 partition (6 ranks) on the seed's Summit
// node, two triplets of GPUs (d = 1 / bandwidth: 100 GB/s inside a triplet, 64 GB/s
// across), and on a node of three L3 pairs over two sockets. The placement is exact and
// no worse than the default (identity) one.
TEST(PlaceHaloBytes, PlacementOfSeedNode) {
  const Radius radius = Radius::uniform(3);
  const Partition p = partition({768, 640, 576}, radius, 4, 6);
  const SquareMatrix w = halo_bytes(p, radius, {true, true, true}, 8, 2);
  SquareMatrix summit(6);
  for (int a = 0; a < 6; ++a) {
    for (int b = 0; b < 6; ++b) {
      if (a != b) summit(a, b) = a / 3 == b / 3 ? 1.0 / 100 : 1.0 / 64;
    }
  }
  const SquareMatrix pairs = hierarchy_distance(6, 2, 4);
  std::vector<int> identity(6);
  std::iota(identity.begin(), identity.end(), 0);
  for (const SquareMatrix& distance : {summit, pairs}) {
    const Placement placed = place(w, distance);
    EXPECT_TRUE(placed.exact);
    EXPECT_LE(placed.cost, placement_cost(w, distance, identity));
    EXPECT_DOUBLE_EQ(placed.cost, brute_force(w, distance));
  }
}
