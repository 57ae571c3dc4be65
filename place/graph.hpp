// A communication graph between ranks: who sends how many bytes to whom, as an application
// declares it to MPI's topology constructors. Stored symmetric (bytes either way between two
// ranks cross the same link), in compressed rows, for the graph partitioners and the mapping
// (graph_map.hpp). No MPI dependency. See docs/reorder.md.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace loom::place {

// `weight` bytes from rank `from` to rank `to` (per exchange, or any unit used alike).
struct Edge {
  int from = 0;
  int to = 0;
  double weight = 1;
};

class CommGraph {
 public:
  CommGraph() = default;
  // `vertices` ranks and the edges between them. Edges between the same two ranks add up,
  // whichever way they point; an edge from a rank to itself is dropped (it crosses nothing),
  // and so is an edge of weight 0. Throws std::invalid_argument for a rank outside
  // [0, vertices), a negative or non-finite weight, or a negative vertex count.
  CommGraph(int vertices, std::span<const Edge> edges);

  int vertices() const { return static_cast<int>(offsets_.size()) - 1; }
  // Neighbours of `v`, ascending, each once, and the weight to each.
  std::span<const int> neighbours(int v) const {
    return {adjacency_.data() + offsets_[static_cast<size_t>(v)],
            adjacency_.data() + offsets_[static_cast<size_t>(v) + 1]};
  }
  std::span<const double> weights(int v) const {
    return {weights_.data() + offsets_[static_cast<size_t>(v)],
            weights_.data() + offsets_[static_cast<size_t>(v) + 1]};
  }
  // Rows: neighbours of v at [offsets()[v], offsets()[v + 1]) of adjacency() and weights().
  std::span<const int64_t> offsets() const { return offsets_; }
  std::span<const int> adjacency() const { return adjacency_; }
  std::span<const double> edge_weights() const { return weights_; }
  // Sum over every pair of ranks of the weight between them (each pair once).
  double total_weight() const { return total_; }

 private:
  std::vector<int64_t> offsets_{0};
  std::vector<int> adjacency_;
  std::vector<double> weights_;
  double total_ = 0;
};

// Weight between ranks in different parts, `part_of[v]` being v's part (its node): the bytes
// that cross nodes. Each pair counts once.
double cut_weight(const CommGraph& graph, std::span<const int> part_of);

}  // namespace loom::place
