// KaHIP's kaffpa (its fast configuration) into equal parts with a small imbalance: asked for
// perfect balance it is far slower with hundreds of parts (docs/reorder.md), and it knows only
// equal parts anyway, so exact node sizes are left to the repair after it (graph_map.cpp).
#include <kaHIP_interface.h>

#include <iostream>  // with this system's headers: std::cout set up for KaHIP's own use
#include <stdexcept>

#include "place/partitioners/partitioners.hpp"

#ifdef LOOM_KAHIP_STATIC
// The wheel's static KaHIP was compiled by a GCC newer than some systems' libstdc++ (Debian 12's
// is GCC 12's): its objects ask for std::ios_base_library_init(), a GCC 13 no-op whose only
// purpose is that dependency, which the wheel's toolchain supplies from its static part of
// libstdc++ (the wheel's shared libkahip.so carries its own copy too). A weak no-op stands in
// where libstdc++ lacks it; <iostream> above sets std::cout up the GCC 12 way.
namespace std {
[[gnu::weak]] void ios_base_library_init() {}
}  // namespace std
#endif

namespace loom::place::detail {

std::vector<int> partition_kahip(const CommGraph& graph, std::span<const int> sizes,
                                 uint32_t seed) {
  // The library's index width is fixed when it is built; Loom passes 32-bit indices.
  if (kahip_sizeof_idx() != static_cast<int>(sizeof(kahip_idx)) || sizeof(kahip_idx) != sizeof(int))
    throw std::runtime_error("KaHIP was built with another index width");
  IntegerGraph g = integer_graph(graph);
  int vertices = graph.vertices(), parts = static_cast<int>(sizes.size());
  double imbalance = 0.03;
  kahip_idx cut = 0;
  std::vector<int> part_of(static_cast<size_t>(vertices));
  kaffpa_balance(&vertices, nullptr, g.offsets.data(), g.weights.data(), g.adjacency.data(), &parts,
                 &imbalance, false, true, static_cast<int>(seed & 0x7fffffff), FAST, &cut,
                 part_of.data());
  return part_of;
}

}  // namespace loom::place::detail
