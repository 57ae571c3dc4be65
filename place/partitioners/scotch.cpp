// Scotch's static mapping onto a weighted complete graph of nodes (each node's weight its size):
// with every pair of nodes equally far apart, the mapping's communication cost is the cut. A
// Scotch context of Loom's own keeps the random state and threads apart from any Scotch use of
// the application's.
#include <scotch.h>
#include <cstdint>
#include <cstdio>

#include <stdexcept>

#include "place/partitioners/partitioners.hpp"

namespace loom::place::detail {

static_assert(sizeof(SCOTCH_Num) == sizeof(int), "Loom passes Scotch 32-bit numbers");

namespace {

// Frees whatever Scotch object was initialised, on every way out.
struct ScotchState {
  SCOTCH_Context context;
  SCOTCH_Graph graph, bound;
  SCOTCH_Arch arch;
  SCOTCH_Strat strategy;
  bool context_ok = false, graph_ok = false, bound_ok = false, arch_ok = false, strat_ok = false;
  ~ScotchState() {
    if (strat_ok) SCOTCH_stratExit(&strategy);
    if (arch_ok) SCOTCH_archExit(&arch);
    if (bound_ok) SCOTCH_graphExit(&bound);
    if (graph_ok) SCOTCH_graphExit(&graph);
    if (context_ok) SCOTCH_contextExit(&context);
  }
};

}  // namespace

std::vector<int> partition_scotch(const CommGraph& graph, std::span<const int> sizes,
                                  uint32_t seed) {
  IntegerGraph g = integer_graph(graph);
  const SCOTCH_Num vertices = graph.vertices(), parts = static_cast<SCOTCH_Num>(sizes.size());
  std::vector<SCOTCH_Num> node_weights(sizes.begin(), sizes.end());
  ScotchState s;
  auto fail = [](const char* what) { throw std::runtime_error(what); };
  if (SCOTCH_contextInit(&s.context) != 0) fail("SCOTCH_contextInit failed");
  s.context_ok = true;
  SCOTCH_contextRandomSeed(&s.context, static_cast<SCOTCH_Num>(seed & 0x7fffffff));
  SCOTCH_contextOptionSetNum(&s.context, SCOTCH_OPTIONNUMDETERMINISTIC, 1);
  SCOTCH_contextOptionSetNum(&s.context, SCOTCH_OPTIONNUMRANDOMFIXEDSEED, 1);
  if (SCOTCH_graphInit(&s.graph) != 0) fail("SCOTCH_graphInit failed");
  s.graph_ok = true;
  if (SCOTCH_graphBuild(&s.graph, 0, vertices, g.offsets.data(), nullptr, nullptr, nullptr,
                        static_cast<SCOTCH_Num>(g.adjacency.size()), g.adjacency.data(),
                        g.weights.data()) != 0)
    fail("SCOTCH_graphBuild failed");
  if (SCOTCH_graphInit(&s.bound) != 0) fail("SCOTCH_graphInit failed");
  s.bound_ok = true;
  if (SCOTCH_contextBindGraph(&s.context, &s.graph, &s.bound) != 0)
    fail("SCOTCH_contextBindGraph failed");
  if (SCOTCH_archInit(&s.arch) != 0) fail("SCOTCH_archInit failed");
  s.arch_ok = true;
  if (SCOTCH_archCmpltw(&s.arch, parts, node_weights.data()) != 0) fail("SCOTCH_archCmpltw failed");
  if (SCOTCH_stratInit(&s.strategy) != 0) fail("SCOTCH_stratInit failed");
  s.strat_ok = true;
  if (SCOTCH_stratGraphMapBuild(&s.strategy, SCOTCH_STRATQUALITY | SCOTCH_STRATBALANCE, parts,
                                0.001) != 0)
    fail("SCOTCH_stratGraphMapBuild failed");
  std::vector<SCOTCH_Num> part_of(static_cast<size_t>(vertices));
  if (SCOTCH_graphMap(&s.bound, &s.arch, &s.strategy, part_of.data()) != 0)
    fail("SCOTCH_graphMap failed");
  return {part_of.begin(), part_of.end()};
}

}  // namespace loom::place::detail
