#include "place/partition.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace loom::place {

Radius Radius::uniform(int cells) {
  Radius r;
  r.minus.fill(cells);
  r.plus.fill(cells);
  return r;
}

std::vector<int> prime_factors_descending(int n) {
  if (n < 1) throw std::invalid_argument("prime_factors_descending: n < 1");
  std::vector<int> factors;
  for (int p = 2; static_cast<int64_t>(p) * p <= n; ++p) {
    while (n % p == 0) {
      factors.push_back(p);
      n /= p;
    }
  }
  if (n > 1) factors.push_back(n);
  return {factors.rbegin(), factors.rend()};  // found ascending
}

namespace {

// Cells of halo per unit of cut area along each dimension. A dimension without halo costs
// nothing to cut; without any halo at all every cut is free, so the dimensions are then
// weighed alike to keep the subdomains compact.
std::array<double, kDims> interface_weights(const Radius& radius) {
  std::array<double, kDims> weight{};
  bool any_halo = false;
  for (int d = 0; d < kDims; ++d) {
    weight[d] = radius.minus[d] + radius.plus[d];
    any_halo = any_halo || weight[d] > 0;
  }
  if (!any_halo) weight.fill(1);
  return weight;
}

}  // namespace

Index3 split_grid(const std::array<double, kDims>& extent, const Radius& radius, int parts) {
  const std::array<double, kDims> weight = interface_weights(radius);
  Index3 grid{1, 1, 1};
  for (int factor : prime_factors_descending(parts)) {
    std::array<double, kDims> part{};
    for (int d = 0; d < kDims; ++d) part[d] = extent[d] / grid[d];
    int best = -1;
    double best_interface = 0;
    for (int d = 0; d < kDims; ++d) {
      // Cutting a dimension into more parts than it has cells would leave empty subdomains.
      const auto cells = static_cast<int64_t>(extent[d]);
      if (cells < static_cast<int64_t>(grid[d]) * factor) continue;
      const double interface = part[(d + 1) % kDims] * part[(d + 2) % kDims] * weight[d];
      if (best < 0 || interface < best_interface) {  // strict: ties go to x, then y, then z
        best = d;
        best_interface = interface;
      }
    }
    if (best < 0) {
      // No dimension has enough cells: cut where the parts are thickest. Some subdomains
      // will be empty, but every cell is still owned once.
      best = 0;
      for (int d = 1; d < kDims; ++d) {
        if (part[d] > part[best]) best = d;
      }
    }
    grid[best] *= factor;
  }
  return grid;
}

namespace {

// Part `i` of `cells` split into `parts`: sizes differ by at most one, the remainder going
// to the lowest indices. Returns {origin, size} relative to the start.
std::array<int64_t, 2> split_range(int64_t cells, int parts, int i) {
  const int64_t base = cells / parts;
  const int64_t extra = cells % parts;
  const int64_t origin = i * base + std::min<int64_t>(i, extra);
  return {origin, base + (i < extra ? 1 : 0)};
}

Index3 unflatten(int linear, const Index3& grid) {
  return {linear % grid[0], (linear / grid[0]) % grid[1], linear / (grid[0] * grid[1])};
}

int flatten(const Index3& index, const Index3& grid) {
  return index[0] + grid[0] * (index[1] + grid[1] * index[2]);
}

int volume(const Index3& grid) {
  return grid[0] * grid[1] * grid[2];
}

}  // namespace

Partition::Partition(Extent3 global, Index3 node_grid, Index3 rank_grid)
    : global_(global), node_grid_(node_grid), rank_grid_(rank_grid) {
  for (int d = 0; d < kDims; ++d) {
    if (global[d] < 0 || node_grid[d] < 1 || rank_grid[d] < 1) {
      throw std::invalid_argument("Partition: negative extent or grid below 1 along dimension " +
                                  std::to_string(d));
    }
  }
  const int per_node = volume(rank_grid);
  subdomains_.resize(static_cast<size_t>(volume(node_grid)) * per_node);
  for (int node = 0; node < volume(node_grid); ++node) {
    const Index3 node_index = unflatten(node, node_grid);
    for (int local = 0; local < per_node; ++local) {
      Subdomain& s = subdomains_[static_cast<size_t>(node) * per_node + local];
      s.node = node;
      s.rank_in_node = local;
      s.rank = node * per_node + local;
      s.node_index = node_index;
      s.local_index = unflatten(local, rank_grid);
      for (int d = 0; d < kDims; ++d) {
        const auto [node_origin, node_size] = split_range(global[d], node_grid[d], node_index[d]);
        const auto [origin, size] = split_range(node_size, rank_grid[d], s.local_index[d]);
        s.origin[d] = node_origin + origin;
        s.size[d] = size;
        s.index[d] = node_index[d] * rank_grid[d] + s.local_index[d];
      }
    }
  }
}

Index3 Partition::grid() const {
  return {node_grid_[0] * rank_grid_[0], node_grid_[1] * rank_grid_[1],
          node_grid_[2] * rank_grid_[2]};
}

int Partition::nodes() const {
  return volume(node_grid_);
}

int Partition::ranks_per_node() const {
  return volume(rank_grid_);
}

int Partition::rank_at(const Index3& index) const {
  Index3 node_index{};
  Index3 local_index{};
  for (int d = 0; d < kDims; ++d) {
    if (index[d] < 0 || index[d] >= node_grid_[d] * rank_grid_[d]) {
      throw std::out_of_range("Partition::rank_at: index outside the grid");
    }
    node_index[d] = index[d] / rank_grid_[d];
    local_index[d] = index[d] % rank_grid_[d];
  }
  return flatten(node_index, node_grid_) * ranks_per_node() + flatten(local_index, rank_grid_);
}

int Partition::neighbour(int rank, const Offset3& offset, const Periodic& periodic) const {
  const Index3 from = subdomain(rank).index;
  const Index3 extent = grid();
  Index3 to{};
  for (int d = 0; d < kDims; ++d) {
    if (offset[d] < -1 || offset[d] > 1) {
      throw std::invalid_argument("Partition::neighbour: offset outside {-1, 0, 1}");
    }
    to[d] = from[d] + offset[d];
    if (to[d] < 0 || to[d] >= extent[d]) {
      if (!periodic[d]) return kNoNeighbour;
      to[d] = (to[d] + extent[d]) % extent[d];
    }
  }
  return rank_at(to);
}

namespace {

void check_arguments(const Extent3& global, const Radius& radius, int nodes, int ranks_per_node) {
  if (nodes < 1 || ranks_per_node < 1) {
    throw std::invalid_argument("partition: nodes and ranks_per_node must be at least 1");
  }
  for (int d = 0; d < kDims; ++d) {
    if (global[d] < 0 || radius.minus[d] < 0 || radius.plus[d] < 0) {
      throw std::invalid_argument("partition: negative extent or radius");
    }
  }
}

// Every grid of `count` subdomains: the ordered triples whose product is `count`.
std::vector<Index3> grids_of(int count) {
  std::vector<Index3> grids;
  for (int x = 1; x <= count; ++x) {
    if (count % x != 0) continue;
    for (int y = 1; y <= count / x; ++y) {
      if ((count / x) % y == 0) grids.push_back({x, y, count / x / y});
    }
  }
  return grids;
}

Index3 times(const Index3& a, const Index3& b) {
  return {a[0] * b[0], a[1] * b[1], a[2] * b[2]};
}

bool fits(const Extent3& global, const Index3& grid) {
  for (int d = 0; d < kDims; ++d) {
    if (grid[d] > global[d]) return false;
  }
  return true;
}

}  // namespace

double interface_cells(const Extent3& global, const Radius& radius, const Index3& grid) {
  // Each of the grid[d] slabs along d has the global cross-section as its total face area,
  // whatever the remainders: the sum is exact, not nominal.
  const std::array<double, kDims> weight = interface_weights(radius);
  double total = 0;
  for (int d = 0; d < kDims; ++d) {
    total += weight[d] * grid[d] * static_cast<double>(global[(d + 1) % kDims]) *
             static_cast<double>(global[(d + 2) % kDims]);
  }
  return total;
}

Partition partition_greedy(const Extent3& global, const Radius& radius, int nodes,
                           int ranks_per_node) {
  check_arguments(global, radius, nodes, ranks_per_node);
  std::array<double, kDims> extent{};
  for (int d = 0; d < kDims; ++d) extent[d] = static_cast<double>(global[d]);
  const Index3 node_grid = split_grid(extent, radius, nodes);
  // Every node splits alike; its nominal (fractional) extent is the node grid's cell.
  std::array<double, kDims> node_extent{};
  for (int d = 0; d < kDims; ++d) node_extent[d] = extent[d] / node_grid[d];
  return Partition(global, node_grid, split_grid(node_extent, radius, ranks_per_node));
}

Partition partition(const Extent3& global, const Radius& radius, int nodes, int ranks_per_node) {
  const Partition greedy = partition_greedy(global, radius, nodes, ranks_per_node);
  // Inter-node bytes cost more than intra-node ones: the node grid with the least
  // interface first, then the rank grid with the least total interface under it. The
  // seed's greedy answer stands unless a grid is strictly better, so ties keep its
  // (documented) orientation.
  Index3 best_nodes = greedy.node_grid();
  Index3 best_ranks = greedy.rank_grid();
  bool best_fits = fits(global, greedy.grid());
  double best_inter = interface_cells(global, radius, best_nodes);
  double best_total = interface_cells(global, radius, greedy.grid());
  auto less = [](double a, double b) { return a < b * (1 - 1e-12); };
  const std::vector<Index3> rank_grids = grids_of(ranks_per_node);
  for (const Index3& node_grid : grids_of(nodes)) {
    const double inter = interface_cells(global, radius, node_grid);
    if (best_fits && less(best_inter, inter)) continue;
    for (const Index3& rank_grid : rank_grids) {
      const Index3 grid = times(node_grid, rank_grid);
      if (!fits(global, grid)) continue;  // would leave subdomains empty
      const double total = interface_cells(global, radius, grid);
      const bool better = !best_fits || less(inter, best_inter) ||
                          (!less(best_inter, inter) && less(total, best_total));
      if (!better) continue;
      best_nodes = node_grid;
      best_ranks = rank_grid;
      best_fits = true;
      best_inter = inter;
      best_total = total;
    }
  }
  return Partition(global, best_nodes, best_ranks);
}

}  // namespace loom::place
