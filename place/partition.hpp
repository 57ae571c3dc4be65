// Two-level partition of a 3-D grid for a halo exchange: the global extent is split into
// one subdomain per node, and each node's subdomain into one per rank of that node, each
// level by the prime factors of its count (largest first), every factor along the
// dimension where it adds the least radius-weighted interface (the seed's rule), then
// refined by an exhaustive search over the grids of each level. The subdomains form a
// tensor-product grid: every subdomain in one slab of the grid has the same size along
// that slab's dimension. No MPI dependency. See docs/place.md.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

namespace loom::place {

constexpr int kDims = 3;                     // x, y, z; x varies fastest in every linear numbering
using Extent3 = std::array<int64_t, kDims>;  // cells along x, y, z
using Index3 = std::array<int, kDims>;       // a position in a grid of subdomains
using Offset3 = std::array<int, kDims>;      // a direction, each component in {-1, 0, 1}
using Periodic = std::array<bool, kDims>;    // whether the global grid wraps along x, y, z

// Halo width per side: `minus[d]` cells are read from the neighbour below along d,
// `plus[d]` from the neighbour above.
struct Radius {
  std::array<int, kDims> minus{};
  std::array<int, kDims> plus{};
  static Radius uniform(int cells);
};

struct Subdomain {
  Extent3 origin{};      // first cell, in global coordinates
  Extent3 size{};        // cells owned; may be 0 only when a level has fewer cells than parts
  Index3 node_index{};   // the node's position in the node grid
  Index3 local_index{};  // position inside the node, in the per-node rank grid
  Index3 index{};        // position in the global subdomain grid: node_index * rank_grid + local
  int node = 0;
  int rank_in_node = 0;
  int rank = 0;  // node * ranks_per_node + rank_in_node
};

constexpr int kNoNeighbour = -1;

class Partition {
 public:
  Partition(Extent3 global, Index3 node_grid, Index3 rank_grid);

  const Extent3& global() const { return global_; }
  const Index3& node_grid() const { return node_grid_; }  // nodes along x, y, z
  const Index3& rank_grid() const { return rank_grid_; }  // ranks of one node along x, y, z
  Index3 grid() const;                                    // subdomains along x, y, z
  int nodes() const;
  int ranks_per_node() const;
  int ranks() const { return static_cast<int>(subdomains_.size()); }

  const Subdomain& subdomain(int rank) const { return subdomains_.at(rank); }
  const std::vector<Subdomain>& subdomains() const { return subdomains_; }
  int rank_at(const Index3& index) const;  // index in the global subdomain grid

  // The rank owning the subdomain at `offset` from `rank`'s, wrapping where `periodic`
  // says so; kNoNeighbour past a non-periodic boundary. With one or two subdomains along
  // a periodic dimension the neighbour may be `rank` itself, or the same rank both ways.
  int neighbour(int rank, const Offset3& offset, const Periodic& periodic) const;

 private:
  Extent3 global_;
  Index3 node_grid_;
  Index3 rank_grid_;
  std::vector<Subdomain> subdomains_;
};

// Splits `global` over `nodes` x `ranks_per_node` ranks. Every cell is owned by exactly
// one rank; sizes along a dimension differ by at most one cell, the remainder going to the
// lowest indices. Throws std::invalid_argument for counts below 1, negative extents or
// radii.
//
// partition_greedy is the seed's rule (see the top). partition starts from it and
// searches every node grid and rank grid for one strictly better: first the least
// inter-node interface, then the least total interface, never leaving a subdomain empty
// where the extent allows. The greedy rule alone can miss both: 300x200x100 on 12 nodes
// gets nodes 6x2x1, where 4x3x1 cuts 4% less (docs/place.md).
Partition partition(const Extent3& global, const Radius& radius, int nodes, int ranks_per_node);
Partition partition_greedy(const Extent3& global, const Radius& radius, int nodes,
                           int ranks_per_node);

// Total radius-weighted interface of a grid of subdomains over `global`: the sum over every
// subdomain of its face areas times the halo widths on those faces, counting faces on the
// global boundary too (the same for every grid). With a node grid it is the inter-node
// interface. What partition minimises. Without any halo every dimension weighs 1.
double interface_cells(const Extent3& global, const Radius& radius, const Index3& grid);

// The grid that one level's greedy split gives: `parts` subdomains of `extent` (cells,
// nominal: fractional sizes are kept so that earlier splits do not round later choices).
Index3 split_grid(const std::array<double, kDims>& extent, const Radius& radius, int parts);

// Prime factors of n >= 1, largest first (empty for 1).
std::vector<int> prime_factors_descending(int n);

}  // namespace loom::place
