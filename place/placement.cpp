#include "place/placement.hpp"

#include <algorithm>
#include <limits>
#include <numeric>
#include <random>
#include <stdexcept>

namespace loom::place {

SquareMatrix::SquareMatrix(int n, double fill) : n_(n) {
  if (n < 0) throw std::invalid_argument("SquareMatrix: negative size");
  values_.assign(static_cast<size_t>(n) * n, fill);
}

double placement_cost(const SquareMatrix& w, const SquareMatrix& d, std::span<const int> rank_of) {
  double cost = 0;
  const int n = w.size();
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j < n; ++j) {
      if (w(i, j) != 0) cost += w(i, j) * d(rank_of[i], rank_of[j]);
    }
  }
  return cost;
}

namespace {

void check(const SquareMatrix& w, const SquareMatrix& d) {
  if (w.size() != d.size()) throw std::invalid_argument("placement: w and d differ in size");
  for (int i = 0; i < w.size(); ++i) {
    for (int j = 0; j < w.size(); ++j) {
      // Branch and bound prunes on partial sums, which needs every term non-negative.
      if (w(i, j) < 0 || d(i, j) < 0) throw std::invalid_argument("placement: negative entry");
    }
  }
}

// What placing subdomain `s` on rank `r` adds, given the subdomains in `placed` (all with
// rank_of set) already placed: its traffic with itself and with each of them, both ways.
double added_cost(const SquareMatrix& w, const SquareMatrix& d, std::span<const int> rank_of,
                  std::span<const int> placed, int s, int r) {
  double cost = w(s, s) * d(r, r);
  for (int t : placed) {
    cost += w(s, t) * d(r, rank_of[t]) + w(t, s) * d(rank_of[t], r);
  }
  return cost;
}

// Terms of the cost that involve subdomain a or b: what a swap of the two can change.
double cost_touching(const SquareMatrix& w, const SquareMatrix& d, std::span<const int> rank_of,
                     int a, int b) {
  double cost = 0;
  const int n = w.size();
  for (int k = 0; k < n; ++k) {
    cost += w(a, k) * d(rank_of[a], rank_of[k]) + w(b, k) * d(rank_of[b], rank_of[k]);
    if (k != a && k != b) {
      cost += w(k, a) * d(rank_of[k], rank_of[a]) + w(k, b) * d(rank_of[k], rank_of[b]);
    }
  }
  return cost;
}

// Pairwise-swap descent: sweep every pair in order, keep each swap that lowers the cost,
// until a whole sweep keeps none.
void improve_by_swaps(const SquareMatrix& w, const SquareMatrix& d, std::vector<int>& rank_of) {
  const int n = w.size();
  // A swap must gain more than rounding noise, or equal-cost swaps could cycle.
  const double noise = 1e-12 * std::max(1.0, placement_cost(w, d, rank_of));
  for (bool improved = true; improved;) {
    improved = false;
    for (int a = 0; a < n; ++a) {
      for (int b = a + 1; b < n; ++b) {
        const double before = cost_touching(w, d, rank_of, a, b);
        std::swap(rank_of[a], rank_of[b]);
        if (cost_touching(w, d, rank_of, a, b) < before - noise) {
          improved = true;
        } else {
          std::swap(rank_of[a], rank_of[b]);
        }
      }
    }
  }
}

// `first_rank` < 0: the busiest subdomain goes to the most central rank.
std::vector<int> greedy(const SquareMatrix& w, const SquareMatrix& d, int first_rank) {
  const int n = w.size();
  std::vector<int> rank_of(n, -1);
  if (n == 0) return rank_of;
  std::vector<double> traffic(n, 0), centrality(n, 0);
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j < n; ++j) {
      traffic[i] += w(i, j) + w(j, i);
      centrality[i] += d(i, j) + d(j, i);
    }
  }
  std::vector<bool> rank_taken(n, false);
  std::vector<int> placed;
  std::vector<double> link(n, 0);  // traffic of each unplaced subdomain with the placed ones
  // The busiest subdomain goes first; then, repeatedly, the subdomain that talks most to
  // those placed goes to the free rank where it adds least.
  for (int step = 0; step < n; ++step) {
    int next = -1;
    for (int s = 0; s < n; ++s) {
      if (rank_of[s] >= 0) continue;
      if (next < 0 || link[s] > link[next] ||
          (link[s] == link[next] && traffic[s] > traffic[next])) {
        next = s;
      }
    }
    int best_rank = -1;
    double best_cost = 0;
    for (int r = 0; r < n; ++r) {
      if (rank_taken[r]) continue;
      double cost = added_cost(w, d, rank_of, placed, next, r);
      if (placed.empty()) cost = first_rank < 0 ? centrality[r] : (r == first_rank ? 0 : 1);
      if (best_rank < 0 || cost < best_cost) {
        best_rank = r;
        best_cost = cost;
      }
    }
    rank_of[next] = best_rank;
    rank_taken[best_rank] = true;
    placed.push_back(next);
    for (int s = 0; s < n; ++s) link[s] += w(s, next) + w(next, s);
  }
  return rank_of;
}

struct Search {
  const SquareMatrix& w;
  const SquareMatrix& d;
  std::vector<int> order;  // subdomains in the order they are placed
  std::vector<int> rank_of;
  std::vector<bool> rank_taken;
  std::vector<int> best;
  double best_cost;

  // Each unplaced subdomain must at least pay its cheapest traffic with those placed.
  double bound(int depth) const {
    const int n = w.size();
    const std::span<const int> placed(order.data(), static_cast<size_t>(depth));
    double total = 0;
    for (int k = depth; k < n; ++k) {
      double cheapest = std::numeric_limits<double>::infinity();
      for (int r = 0; r < n; ++r) {
        if (!rank_taken[r])
          cheapest = std::min(cheapest, added_cost(w, d, rank_of, placed, order[k], r));
      }
      total += cheapest;
    }
    return total;
  }

  void descend(int depth, double cost) {
    const int n = w.size();
    if (depth == n) {
      if (cost < best_cost) {
        best_cost = cost;
        best = rank_of;
      }
      return;
    }
    const std::span<const int> placed(order.data(), static_cast<size_t>(depth));
    const int s = order[depth];
    for (int r = 0; r < n; ++r) {
      if (rank_taken[r]) continue;
      const double next_cost = cost + added_cost(w, d, rank_of, placed, s, r);
      if (next_cost >= best_cost) continue;
      rank_of[s] = r;
      rank_taken[r] = true;
      if (depth + 1 == n || next_cost + bound(depth + 1) < best_cost) descend(depth + 1, next_cost);
      rank_taken[r] = false;
      rank_of[s] = -1;
    }
  }
};

}  // namespace

Placement place_heuristic(const SquareMatrix& w, const SquareMatrix& d) {
  check(w, d);
  const int n = w.size();
  Placement result;
  auto consider = [&](std::vector<int> start) {
    improve_by_swaps(w, d, start);
    const double cost = placement_cost(w, d, start);
    if (result.rank_of.empty() || cost < result.cost) {
      result.rank_of = std::move(start);
      result.cost = cost;
    }
  };
  // Swap descent stops at the first local optimum, so it starts from several places: the
  // greedy construction with its busiest subdomain on the most central rank and on each
  // rank in turn, and the identity (the placement without this engine).
  consider(greedy(w, d, -1));
  for (int r = 0; r < n; ++r) consider(greedy(w, d, r));
  std::vector<int> identity(n);
  std::iota(identity.begin(), identity.end(), 0);
  consider(identity);
  // Then iterated local search: kick the best placement out of its local optimum with a
  // few random swaps and descend again, keeping what improves. The generator is seeded
  // and reduced with %, not a std distribution, so every platform gets the same answer.
  if (n >= 4) {
    std::mt19937 rng(20261126);
    for (int kick = 0; kick < kIteratedSearchKicks; ++kick) {
      std::vector<int> next = result.rank_of;
      for (int k = 0; k < 3; ++k) std::swap(next[rng() % n], next[rng() % n]);
      consider(std::move(next));
    }
  }
  return result;
}

Placement place_exact(const SquareMatrix& w, const SquareMatrix& d) {
  check(w, d);
  const int n = w.size();
  if (n > 12) throw std::invalid_argument("place_exact: more than 12 ranks");
  // The heuristic's answer bounds the search from the start.
  const Placement start = place_heuristic(w, d);
  Search search{
      w, d, {}, std::vector<int>(n, -1), std::vector<bool>(n, false), start.rank_of, start.cost};
  // Busiest subdomains first: their placement decides most of the cost, so bad branches
  // are cut early.
  std::vector<double> traffic(n, 0);
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j < n; ++j) traffic[i] += w(i, j) + w(j, i);
  }
  search.order.resize(n);
  std::iota(search.order.begin(), search.order.end(), 0);
  std::stable_sort(search.order.begin(), search.order.end(),
                   [&](int a, int b) { return traffic[a] > traffic[b]; });
  search.descend(0, 0);
  Placement result;
  result.rank_of = search.best;
  result.cost = placement_cost(w, d, result.rank_of);
  result.exact = true;
  return result;
}

Placement place(const SquareMatrix& w, const SquareMatrix& d) {
  return w.size() <= kExactPlacementMaxRanks ? place_exact(w, d) : place_heuristic(w, d);
}

namespace {

// Bytes of the halo region `sender` fills in its neighbour at `direction`.
double region_bytes(const Subdomain& sender, const Radius& radius, const Offset3& direction,
                    size_t element_bytes) {
  double cells = 1;
  for (int dim = 0; dim < kDims; ++dim) {
    int64_t width = sender.size[dim];
    // A neighbour above reads its lower halo from us, one below its upper halo.
    if (direction[dim] > 0) width = std::min<int64_t>(width, radius.minus[dim]);
    if (direction[dim] < 0) width = std::min<int64_t>(width, radius.plus[dim]);
    cells *= static_cast<double>(width);
  }
  return cells * static_cast<double>(element_bytes);
}

// Adds to `bytes` every exchange from the ranks [first, first + count) to ranks in that
// same range, indexed relative to `first`.
void add_halo_bytes(const Partition& partition, const Radius& radius, const Periodic& periodic,
                    size_t element_bytes, int first, int count, SquareMatrix& bytes) {
  for (int from = first; from < first + count; ++from) {
    const Subdomain& sender = partition.subdomain(from);
    for (int dz = -1; dz <= 1; ++dz) {
      for (int dy = -1; dy <= 1; ++dy) {
        for (int dx = -1; dx <= 1; ++dx) {
          if (dx == 0 && dy == 0 && dz == 0) continue;
          const Offset3 direction{dx, dy, dz};
          const int to = partition.neighbour(from, direction, periodic);
          if (to < first || to >= first + count) continue;  // none, or on another node
          bytes(from - first, to - first) += region_bytes(sender, radius, direction, element_bytes);
        }
      }
    }
  }
}

}  // namespace

SquareMatrix halo_bytes(const Partition& partition, const Radius& radius, const Periodic& periodic,
                        size_t element_bytes, int node) {
  if (node < 0 || node >= partition.nodes()) throw std::out_of_range("halo_bytes: no such node");
  const int count = partition.ranks_per_node();
  SquareMatrix bytes(count);
  add_halo_bytes(partition, radius, periodic, element_bytes, node * count, count, bytes);
  return bytes;
}

SquareMatrix halo_bytes(const Partition& partition, const Radius& radius, const Periodic& periodic,
                        size_t element_bytes) {
  SquareMatrix bytes(partition.ranks());
  add_halo_bytes(partition, radius, periodic, element_bytes, 0, partition.ranks(), bytes);
  return bytes;
}

}  // namespace loom::place
