#include "place/graph.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace loom::place {

CommGraph::CommGraph(int vertices, std::span<const Edge> edges) {
  if (vertices < 0) throw std::invalid_argument("CommGraph: negative vertex count");
  // Both directions of every edge, sorted by (from, to), then merged.
  std::vector<Edge> arcs;
  arcs.reserve(edges.size() * 2);
  for (const Edge& e : edges) {
    if (e.from < 0 || e.from >= vertices || e.to < 0 || e.to >= vertices)
      throw std::invalid_argument("CommGraph: rank out of range");
    if (!(e.weight >= 0) || !std::isfinite(e.weight))
      throw std::invalid_argument("CommGraph: negative or non-finite weight");
    if (e.from == e.to || e.weight == 0) continue;
    arcs.push_back(e);
    arcs.push_back({e.to, e.from, e.weight});
  }
  std::sort(arcs.begin(), arcs.end(), [](const Edge& a, const Edge& b) {
    return a.from != b.from ? a.from < b.from : a.to < b.to;
  });
  offsets_.assign(static_cast<size_t>(vertices) + 1, 0);
  for (size_t i = 0; i < arcs.size(); ++i) {
    const Edge& a = arcs[i];
    if (i > 0 && arcs[i - 1].from == a.from && arcs[i - 1].to == a.to) {
      weights_.back() += a.weight;
    } else {
      adjacency_.push_back(a.to);
      weights_.push_back(a.weight);
      ++offsets_[static_cast<size_t>(a.from) + 1];
    }
    if (a.from < a.to) total_ += a.weight;
  }
  for (size_t v = 0; v < static_cast<size_t>(vertices); ++v) offsets_[v + 1] += offsets_[v];
}

double cut_weight(const CommGraph& graph, std::span<const int> part_of) {
  if (part_of.size() != static_cast<size_t>(graph.vertices()))
    throw std::invalid_argument("cut_weight: one part per vertex expected");
  double cut = 0;
  for (int v = 0; v < graph.vertices(); ++v) {
    const auto neighbours = graph.neighbours(v);
    const auto weights = graph.weights(v);
    for (size_t i = 0; i < neighbours.size(); ++i)
      if (v < neighbours[i] &&
          part_of[static_cast<size_t>(v)] != part_of[static_cast<size_t>(neighbours[i])])
        cut += weights[i];
  }
  return cut;
}

}  // namespace loom::place
