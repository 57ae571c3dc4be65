// The graph partitioners the mapping (graph_map.hpp) asks: METIS, Scotch's mapping onto a
// weighted complete graph of nodes, and KaHIP. Each is optional: built in where CMake found its
// library, otherwise reported unavailable. No MPI dependency. See docs/reorder.md.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "place/graph.hpp"

namespace loom::place {

enum class Partitioner { Metis, Scotch, Kahip };
constexpr std::array<Partitioner, 3> kPartitioners{Partitioner::Metis, Partitioner::Scotch,
                                                   Partitioner::Kahip};

const char* partitioner_name(Partitioner p);  // "metis", "scotch", "kahip"
std::optional<Partitioner> partitioner_named(std::string_view name);
bool partitioner_available(Partitioner p);

// The partitioner's own answer: part_of[v] in [0, sizes.size()), aiming at part k holding
// sizes[k] vertices with the least weight between parts. Partitioners allow some imbalance, so
// the sizes may be off (graph_map.hpp repairs them). Deterministic for a given seed. Throws
// std::runtime_error when the partitioner is unavailable or fails; std::invalid_argument when the
// sizes do not add up to the vertex count or one is negative.
std::vector<int> partition_graph(const CommGraph& graph, std::span<const int> sizes,
                                 Partitioner partitioner, uint32_t seed);

namespace detail {
// The graph with integer weights for the partitioners' 32-bit interfaces: every positive weight
// scaled so that their sum fits, and at least 1.
struct IntegerGraph {
  std::vector<int> offsets;
  std::vector<int> adjacency;
  std::vector<int> weights;
};
IntegerGraph integer_graph(const CommGraph& graph);

std::vector<int> partition_metis(const CommGraph& graph, std::span<const int> sizes, uint32_t seed);
std::vector<int> partition_scotch(const CommGraph& graph, std::span<const int> sizes,
                                  uint32_t seed);
std::vector<int> partition_kahip(const CommGraph& graph, std::span<const int> sizes, uint32_t seed);
}  // namespace detail

}  // namespace loom::place
