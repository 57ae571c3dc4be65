// METIS's recursive bisection, with target part weights proportional to the node sizes. Its
// k-way scheme cuts a little less on 3-D grids but, held to parts of a few ranks, misses the
// sizes by more, and the repair then costs more than it saved (docs/reorder.md).
#include <metis.h>

#include <stdexcept>

#include "place/partitioners/partitioners.hpp"

namespace loom::place::detail {

static_assert(sizeof(idx_t) == sizeof(int), "Loom passes METIS 32-bit indices");

std::vector<int> partition_metis(const CommGraph& graph, std::span<const int> sizes,
                                 uint32_t seed) {
  IntegerGraph g = integer_graph(graph);
  idx_t vertices = graph.vertices(), constraints = 1, parts = static_cast<idx_t>(sizes.size());
  std::vector<real_t> targets(sizes.size());
  for (size_t k = 0; k < sizes.size(); ++k)
    targets[k] = static_cast<real_t>(sizes[k]) / static_cast<real_t>(vertices);
  // The tightest imbalance METIS takes: parts of a few ranks then come out exact or one off.
  real_t imbalance = 1.001f;
  idx_t options[METIS_NOPTIONS];
  METIS_SetDefaultOptions(options);
  options[METIS_OPTION_SEED] = static_cast<idx_t>(seed & 0x7fffffff);
  options[METIS_OPTION_NUMBERING] = 0;
  options[METIS_OPTION_OBJTYPE] = METIS_OBJTYPE_CUT;
  idx_t cut = 0;
  std::vector<int> part_of(static_cast<size_t>(vertices));
  const int rc = METIS_PartGraphRecursive(
      &vertices, &constraints, g.offsets.data(), g.adjacency.data(), nullptr, nullptr,
      g.weights.data(), &parts, targets.data(), &imbalance, options, &cut, part_of.data());
  if (rc != METIS_OK) throw std::runtime_error("METIS_PartGraphRecursive failed");
  return part_of;
}

}  // namespace loom::place::detail
