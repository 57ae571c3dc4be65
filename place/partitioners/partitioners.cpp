#include "place/partitioners/partitioners.hpp"

#include <cmath>
#include <numeric>
#include <stdexcept>
#include <string>

namespace loom::place {

const char* partitioner_name(Partitioner p) {
  switch (p) {
    case Partitioner::Metis:
      return "metis";
    case Partitioner::Scotch:
      return "scotch";
    case Partitioner::Kahip:
      return "kahip";
  }
  return "?";
}

std::optional<Partitioner> partitioner_named(std::string_view name) {
  for (Partitioner p : kPartitioners)
    if (name == partitioner_name(p)) return p;
  return std::nullopt;
}

// LOOM_HAVE_<NAME>: CMake found the library (place/CMakeLists.txt).
bool partitioner_available(Partitioner p) {
  switch (p) {
    case Partitioner::Metis:
#ifdef LOOM_HAVE_METIS
      return true;
#else
      return false;
#endif
    case Partitioner::Scotch:
#ifdef LOOM_HAVE_SCOTCH
      return true;
#else
      return false;
#endif
    case Partitioner::Kahip:
#ifdef LOOM_HAVE_KAHIP
      return true;
#else
      return false;
#endif
  }
  return false;
}

namespace detail {

IntegerGraph integer_graph(const CommGraph& graph) {
  IntegerGraph g;
  const auto offsets = graph.offsets();
  const auto weights = graph.edge_weights();
  if (offsets.back() > (int64_t{1} << 30))
    throw std::runtime_error("graph too large for the partitioners' 32-bit interface");
  g.offsets.assign(offsets.begin(), offsets.end());
  g.adjacency.assign(graph.adjacency().begin(), graph.adjacency().end());
  // The partitioners add weights up in 32-bit integers: the sum over both directions of every
  // edge stays below 2^30. Small weights round up to 1 rather than vanish.
  const double sum = 2 * graph.total_weight();
  const double scale = sum > 0x1p30 ? 0x1p30 / sum : 1.0;
  g.weights.resize(weights.size());
  for (size_t i = 0; i < weights.size(); ++i)
    g.weights[i] = std::max(1, static_cast<int>(std::lround(weights[i] * scale)));
  return g;
}

}  // namespace detail

std::vector<int> partition_graph(const CommGraph& graph, std::span<const int> sizes,
                                 Partitioner partitioner, uint32_t seed) {
  int64_t total = 0;
  for (int s : sizes) {
    if (s < 0) throw std::invalid_argument("partition_graph: negative part size");
    total += s;
  }
  if (total != graph.vertices())
    throw std::invalid_argument("partition_graph: part sizes do not add up to the vertex count");
  if (!partitioner_available(partitioner))
    throw std::runtime_error(std::string(partitioner_name(partitioner)) +
                             " is not built into this Loom");
  // One part, or nothing to cut: every answer is as good, so no partitioner is asked.
  std::vector<int> part_of;
  if (sizes.size() <= 1 || graph.adjacency().empty()) {
    for (size_t k = 0; k < sizes.size(); ++k) part_of.insert(part_of.end(), sizes[k], int(k));
    return part_of;
  }
  switch (partitioner) {
#ifdef LOOM_HAVE_METIS
    case Partitioner::Metis:
      return detail::partition_metis(graph, sizes, seed);
#endif
#ifdef LOOM_HAVE_SCOTCH
    case Partitioner::Scotch:
      return detail::partition_scotch(graph, sizes, seed);
#endif
#ifdef LOOM_HAVE_KAHIP
    case Partitioner::Kahip:
      return detail::partition_kahip(graph, sizes, seed);
#endif
    default:
      break;
  }
  throw std::runtime_error("unreachable partitioner");
}

}  // namespace loom::place
