// Mapping a communication graph of P ranks onto the machine's nodes: which process slot plays
// which rank, so that the heaviest traffic stays inside nodes. Slots are the processes as they
// are numbered now (slot s: today's rank s), each on a node; a mapping gives every slot the rank
// (graph vertex) it takes, every node keeping exactly its number of slots. Used by MPI's topology
// constructors with reorder=1 (ops/topology_reorder.hpp) and measured by `loom-bench reorder`.
// No MPI dependency. See docs/reorder.md.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "place/graph.hpp"
#include "place/partitioners/partitioners.hpp"
#include "place/placement.hpp"

namespace loom::place {

// How a mapping is found.
enum class MapMethod {
  Auto,         // METIS's, Scotch's (and KaHIP's up to 1024 ranks) best, refined by swaps
  Partitioner,  // one partitioner, its answer repaired to exact node sizes
  Random,       // a random numbering (for experiments)
  Identity,     // the baseline numbering itself
};

struct MapOptions {
  MapMethod method = MapMethod::Auto;
  Partitioner partitioner = Partitioner::Metis;  // for MapMethod::Partitioner
  uint32_t seed = 1;
};

// "auto", "metis", "scotch", "kahip", "random", "identity"; nullopt for any other name.
std::optional<MapOptions> map_options_named(std::string_view name);
std::string map_method_name(const MapOptions& options);

struct GraphMapping {
  std::vector<int> vertex_of_slot;  // the rank each slot takes (a permutation of [0, P))
  double cut = 0;                   // weight between nodes under vertex_of_slot
  double baseline_cut = 0;          // ... under the baseline numbering
  double total = 0;                 // all the graph's weight
  bool kept = false;                // vertex_of_slot is the mapping found, not the baseline
  std::string found_by;             // what gave the mapping found ("metis", "baseline", ...)
  double found_cut = 0;             // its cut, kept or not
  double seconds = 0;               // CPU time of this thread to find it
  // Share of the weight inside nodes (1 for a graph without weight).
  double inside_share() const { return total > 0 ? 1 - cut / total : 1; }
  double baseline_inside_share() const { return total > 0 ? 1 - baseline_cut / total : 1; }
};

// Maps `graph` onto slots whose nodes are `node_of_slot` (any labels; slots with the same label
// share a node). `baseline[s]`, the rank slot s holds without Loom (empty: slot s holds rank s),
// is what the mapping must beat: with MapMethod::Auto or Partitioner the mapping found is kept
// only if its cut is strictly below the baseline's, otherwise vertex_of_slot is the baseline.
// Random is kept always, Identity is the baseline. Inside each node the ranks keep their
// relative order on the node's slots (place_on_node improves that where distances are known).
// Deterministic for a given seed. Throws std::invalid_argument when the sizes differ or the
// baseline is no permutation.
GraphMapping map_graph(const CommGraph& graph, std::span<const int> node_of_slot,
                       const MapOptions& options, std::span<const int> baseline = {});

// The parts of map_graph, for tests and the benchmark.
// Node labels as indices 0..N-1 in order of first appearance, and each node's size.
std::vector<int> node_indices(std::span<const int> node_of_slot, std::vector<int>& sizes);
// `part_of` changed so that part k holds exactly sizes[k] vertices, moving out of each overfull
// part the vertices whose move to an underfull part adds least weight between parts.
void repair_sizes(const CommGraph& graph, std::span<const int> sizes, std::vector<int>& part_of);
// Kernighan-Lin passes over every two parts joined by an edge: sequences of swaps, keeping the
// sizes, whose best prefix lowers the cut. Up to three rounds, each over the pairs of parts
// that changed in the round before.
void refine_by_swaps(const CommGraph& graph, std::vector<int>& part_of);
// Slots onto ranks from a part per rank: node k's slots, in order, take the ranks of part k in
// increasing order.
std::vector<int> slots_from_parts(std::span<const int> part_of_vertex,
                                  std::span<const int> node_index_of_slot);

// Inside one node: which of the node's ranks each of its slots takes, given the cost of a byte
// between each two slots (`distance`, the node's slots in order; place/topology.hpp). `ranks`
// are the ranks on the node, in the order they would take the slots; the answer is the same
// ranks reordered by the intra-node placement (placement.hpp), kept only where it costs less.
std::vector<int> place_on_node(const CommGraph& graph, std::span<const int> ranks,
                               const SquareMatrix& distance);

}  // namespace loom::place
