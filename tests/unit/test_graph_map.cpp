// Graph mapping (place/graph_map.hpp): the graph's construction, the invariants of every mapping
// (each node gets exactly its size, each rank one slot), graphs with a known optimum, the baseline
// kept where it is optimal, determinism, and the intra-node placement on distances.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "place/graph_map.hpp"

using namespace loom::place;

namespace {

uint64_t test_seed(uint64_t fallback) {
  const char* text = std::getenv("LOOM_TEST_SEED");
  return text != nullptr ? std::strtoull(text, nullptr, 10) : fallback;
}

// Every method a user can name, the partitioners not built in left out.
std::vector<std::string> methods() {
  std::vector<std::string> names{"auto", "random", "identity"};
  for (Partitioner p : kPartitioners)
    if (partitioner_available(p)) names.push_back(partitioner_name(p));
  return names;
}

std::vector<int> block_nodes(int slots, int per_node) {
  std::vector<int> node(static_cast<size_t>(slots));
  for (int s = 0; s < slots; ++s) node[static_cast<size_t>(s)] = s / per_node;
  return node;
}

// A 2-D grid of nx x ny ranks, x fastest, each rank sending 1 to its four neighbours.
std::vector<Edge> grid_2d(int nx, int ny) {
  std::vector<Edge> edges;
  for (int y = 0; y < ny; ++y)
    for (int x = 0; x < nx; ++x) {
      const int v = y * nx + x;
      if (x + 1 < nx) edges.push_back({v, v + 1, 1});
      if (y + 1 < ny) edges.push_back({v, v + nx, 1});
    }
  return edges;
}

std::vector<Edge> random_graph(int n, int edges_per_rank, std::mt19937_64& rng) {
  std::vector<Edge> edges;
  for (int v = 0; v < n; ++v)
    for (int k = 0; k < edges_per_rank; ++k)
      edges.push_back({v, static_cast<int>(rng() % static_cast<uint64_t>(n)),
                       static_cast<double>(1 + rng() % 1000)});
  return edges;
}

void expect_valid(const GraphMapping& m, const std::vector<int>& node_of_slot, const CommGraph& g,
                  const std::string& what) {
  const size_t n = node_of_slot.size();
  ASSERT_EQ(m.vertex_of_slot.size(), n) << what;
  std::vector<int> seen(n, 0);
  for (int v : m.vertex_of_slot) {
    ASSERT_GE(v, 0) << what;
    ASSERT_LT(v, static_cast<int>(n)) << what;
    ++seen[static_cast<size_t>(v)];
  }
  for (size_t v = 0; v < n; ++v) EXPECT_EQ(seen[v], 1) << what << ": rank " << v;
  // The figures reported are those of the numbering returned.
  std::vector<int> part(n);
  for (size_t s = 0; s < n; ++s) part[static_cast<size_t>(m.vertex_of_slot[s])] = node_of_slot[s];
  EXPECT_NEAR(m.cut, cut_weight(g, part), 1e-6 * std::max(1.0, m.total)) << what;
  // Only the random numbering, an experiment, is kept whatever it costs.
  if (what.rfind("random", 0) != 0) {
    EXPECT_LE(m.cut, m.baseline_cut + 1e-9 * m.total) << what << ": worse than the baseline";
  }
}

}  // namespace

TEST(CommGraph, MergesBothDirectionsAndDropsSelfEdges) {
  const std::vector<Edge> edges{{0, 1, 2}, {1, 0, 3}, {0, 1, 1}, {2, 2, 9}, {1, 2, 0}, {2, 3, 4}};
  const CommGraph g(4, edges);
  ASSERT_EQ(g.vertices(), 4);
  ASSERT_EQ(g.neighbours(0).size(), 1u);
  EXPECT_EQ(g.neighbours(0)[0], 1);
  EXPECT_EQ(g.weights(0)[0], 6);
  EXPECT_EQ(g.weights(1)[0], 6);
  EXPECT_EQ(g.neighbours(2).size(), 1u);  // the self edge and the zero-weight edge are gone
  EXPECT_EQ(g.total_weight(), 10);
  const std::vector<int> apart{0, 1, 1, 0};
  EXPECT_EQ(cut_weight(g, apart), 10);
}

TEST(CommGraph, RejectsBadEdges) {
  const std::vector<Edge> out_of_range{{0, 4, 1}};
  const std::vector<Edge> negative{{0, 1, -1}};
  EXPECT_THROW(CommGraph(4, out_of_range), std::invalid_argument);
  EXPECT_THROW(CommGraph(4, negative), std::invalid_argument);
  EXPECT_THROW(CommGraph(-1, {}), std::invalid_argument);
}

TEST(GraphMap, EveryNodeGetsItsSizeAndEveryRankOneSlot) {
  const uint64_t seed = test_seed(62);
  std::printf("GraphMap seed %llu (LOOM_TEST_SEED)\n", static_cast<unsigned long long>(seed));
  std::mt19937_64 rng(seed);
  for (int trial = 0; trial < 6; ++trial) {
    // Uneven nodes under scattered labels: nodes are whatever slots share a label.
    const int n = 20 + static_cast<int>(rng() % 60);
    std::vector<int> node(static_cast<size_t>(n));
    for (int& label : node) label = 100 + static_cast<int>(rng() % 5) * 7;
    const CommGraph g(n, random_graph(n, 3, rng));
    for (const std::string& name : methods()) {
      const GraphMapping m = map_graph(g, node, *map_options_named(name));
      expect_valid(m, node, g, name + " trial " + std::to_string(trial));
      if (name == "random") {
        EXPECT_TRUE(m.kept);
      }
      if (name == "identity") {
        EXPECT_FALSE(m.kept);
      }
    }
  }
}

TEST(GraphMap, RepairGivesExactSizes) {
  std::mt19937_64 rng(test_seed(7));
  const int n = 50;
  const CommGraph g(n, random_graph(n, 4, rng));
  const std::vector<int> sizes{5, 20, 10, 15};
  std::vector<int> part(static_cast<size_t>(n), 1);  // everything on one part
  repair_sizes(g, sizes, part);
  std::vector<int> count(sizes.size(), 0);
  for (int p : part) ++count[static_cast<size_t>(p)];
  EXPECT_EQ(count, sizes);
}

TEST(GraphMap, ShuffledDisjointCliquesLandOneCliquePerNode) {
  // 8 cliques of 6 ranks under a shuffled numbering, on nodes of 6: the optimum cuts nothing.
  const int cliques = 8, size = 6, n = cliques * size;
  std::vector<int> label(static_cast<size_t>(n));
  std::iota(label.begin(), label.end(), 0);
  std::mt19937_64 rng(test_seed(3));
  std::shuffle(label.begin(), label.end(), rng);
  std::vector<Edge> edges;
  for (int c = 0; c < cliques; ++c)
    for (int i = 0; i < size; ++i)
      for (int j = 0; j < size; ++j)
        if (i != j)
          edges.push_back({label[static_cast<size_t>(c * size + i)],
                           label[static_cast<size_t>(c * size + j)], 10});
  const CommGraph g(n, edges);
  const std::vector<int> node = block_nodes(n, size);
  for (const std::string& name : methods()) {
    if (name == "random" || name == "identity") continue;
    const GraphMapping m = map_graph(g, node, *map_options_named(name));
    expect_valid(m, node, g, name);
    EXPECT_TRUE(m.kept) << name;
    EXPECT_EQ(m.cut, 0) << name;
    EXPECT_EQ(m.inside_share(), 1) << name;
  }
}

TEST(GraphMap, GridSplitsIntoNodeSizedTiles) {
  // A 2-D grid in rows, nodes of k*k ranks: k x k tiles are optimal (a part of k*k cells has at
  // most 2k(k-1) edges inside), while the rows the numbering gives cut more.
  struct Case {
    int side, tile;
  };
  for (const Case c : {Case{8, 2}, Case{12, 3}, Case{16, 4}}) {
    const int n = c.side * c.side, per_node = c.tile * c.tile, parts = n / per_node;
    const CommGraph g(n, grid_2d(c.side, c.side));
    const double optimum = g.total_weight() - parts * 2.0 * c.tile * (c.tile - 1);
    const GraphMapping m = map_graph(g, block_nodes(n, per_node), MapOptions{});
    expect_valid(m, block_nodes(n, per_node), g, "grid " + std::to_string(c.side));
    EXPECT_TRUE(m.kept);
    EXPECT_EQ(m.cut, optimum) << c.side << "x" << c.side << " on nodes of " << per_node
                              << ", found by " << m.found_by;
  }
}

TEST(GraphMap, KeepsTheBaselineWhereItIsOptimal) {
  // A ring whose numbering puts every run of 4 on one node: each node cuts only its two ends,
  // the least any balanced split of a ring can.
  const int n = 32;
  std::vector<Edge> ring;
  for (int v = 0; v < n; ++v) ring.push_back({v, (v + 1) % n, 5});
  const CommGraph g(n, ring);
  const std::vector<int> node = block_nodes(n, 4);
  std::vector<int> identity(static_cast<size_t>(n));
  std::iota(identity.begin(), identity.end(), 0);
  for (const std::string& name : methods()) {
    if (name == "random") continue;
    const GraphMapping m = map_graph(g, node, *map_options_named(name));
    EXPECT_FALSE(m.kept) << name;
    EXPECT_EQ(m.vertex_of_slot, identity) << name;
    EXPECT_EQ(m.cut, m.baseline_cut) << name;
  }
  // The same against a given baseline: a numbering that is optimal stays.
  std::vector<int> rotated(static_cast<size_t>(n));
  for (int s = 0; s < n; ++s) rotated[static_cast<size_t>(s)] = (s + 4) % n;
  const GraphMapping m = map_graph(g, node, MapOptions{}, rotated);
  EXPECT_FALSE(m.kept);
  EXPECT_EQ(m.vertex_of_slot, rotated);
}

TEST(GraphMap, DeterministicForASeed) {
  std::mt19937_64 rng(test_seed(11));
  const int n = 96;
  const CommGraph g(n, random_graph(n, 4, rng));
  const std::vector<int> node = block_nodes(n, 8);
  for (const std::string& name : methods()) {
    MapOptions options = *map_options_named(name);
    options.seed = 5;
    const GraphMapping a = map_graph(g, node, options), b = map_graph(g, node, options);
    EXPECT_EQ(a.vertex_of_slot, b.vertex_of_slot) << name;
    EXPECT_EQ(a.cut, b.cut) << name;
  }
}

TEST(GraphMap, OneNodeOrNoWeightKeepsTheNumbering) {
  std::mt19937_64 rng(test_seed(13));
  const int n = 12;
  const CommGraph g(n, random_graph(n, 3, rng));
  const GraphMapping one = map_graph(g, std::vector<int>(static_cast<size_t>(n), 0), MapOptions{});
  EXPECT_FALSE(one.kept);
  EXPECT_EQ(one.inside_share(), 1);
  const CommGraph empty(n, {});
  const GraphMapping none = map_graph(empty, block_nodes(n, 4), MapOptions{});
  EXPECT_FALSE(none.kept);
}

TEST(GraphMap, PlacesHeavyPairsOnNearSlots) {
  // Slots 0,1 share a cache, slots 2,3 another; ranks 10-12 and 11-13 talk heavily, so each pair
  // must land on one cache.
  SquareMatrix d(4);
  for (int a = 0; a < 4; ++a)
    for (int b = 0; b < 4; ++b) d(a, b) = a == b ? 0 : a / 2 == b / 2 ? 1 : 5;
  const std::vector<Edge> edges{{10, 12, 100}, {11, 13, 100}, {10, 11, 1}};
  const CommGraph g(14, edges);
  const std::vector<int> ranks{10, 11, 12, 13};
  const std::vector<int> placed = place_on_node(g, ranks, d);
  ASSERT_EQ(placed.size(), 4u);
  auto slot_of = [&](int r) {
    return static_cast<int>(std::find(placed.begin(), placed.end(), r) - placed.begin());
  };
  EXPECT_EQ(slot_of(10) / 2, slot_of(12) / 2);
  EXPECT_EQ(slot_of(11) / 2, slot_of(13) / 2);
  // Equal distances: every order costs the same, so the ranks keep theirs.
  EXPECT_EQ(place_on_node(g, ranks, SquareMatrix(4, 1)), ranks);
}

TEST(Partitioners, NamesAndAvailability) {
  for (Partitioner p : kPartitioners) {
    EXPECT_EQ(partitioner_named(partitioner_name(p)), p);
    if (!partitioner_available(p)) {
      const CommGraph g(4, grid_2d(2, 2));
      const std::vector<int> sizes{2, 2};
      EXPECT_THROW(partition_graph(g, sizes, p, 1), std::runtime_error);
    }
  }
  EXPECT_FALSE(partitioner_named("gzip").has_value());
  EXPECT_FALSE(map_options_named("gzip").has_value());
}
