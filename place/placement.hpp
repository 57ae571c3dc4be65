// Intra-node placement of subdomains onto a node's ranks (cores) as a quadratic assignment
// problem: find the bijection f from subdomains to ranks minimising
//   sum over i, j of w(i, j) * d(f(i), f(j)),
// w(i, j) being the bytes subdomain i sends to subdomain j per exchange and d(a, b) the
// cost of moving a byte from rank a to rank b (same core, same L3, same NUMA domain, other
// socket, ...). Exact for small nodes, a deterministic local search beyond. No MPI
// dependency. See docs/place.md.
#pragma once

#include <cstddef>
#include <span>
#include <vector>

#include "place/partition.hpp"

namespace loom::place {

// A dense n x n matrix of non-negative costs or weights, row-major.
class SquareMatrix {
 public:
  explicit SquareMatrix(int n = 0, double fill = 0);
  int size() const { return n_; }
  double& operator()(int row, int column) { return values_[index(row, column)]; }
  double operator()(int row, int column) const { return values_[index(row, column)]; }

 private:
  size_t index(int row, int column) const { return static_cast<size_t>(row) * n_ + column; }
  int n_;
  std::vector<double> values_;
};

struct Placement {
  std::vector<int> rank_of;  // rank_of[subdomain]: the node-local rank that gets it
  double cost = 0;           // sum w(i, j) * d(rank_of[i], rank_of[j])
  bool exact = false;        // proven optimal (exhaustive search)
};

// Nodes of at most this many ranks are placed exactly by place(): 8! = 40320 leaves, and
// branch and bound visits far fewer.
constexpr int kExactPlacementMaxRanks = 8;
constexpr int kIteratedSearchKicks = 200;

double placement_cost(const SquareMatrix& w, const SquareMatrix& d, std::span<const int> rank_of);

// The optimum, by depth-first branch and bound over assignments. Exponential: meant for
// n <= kExactPlacementMaxRanks, accepted up to 12.
Placement place_exact(const SquareMatrix& w, const SquareMatrix& d);

// Greedy construction (heaviest-communicating subdomains first, each onto the free rank
// that adds least cost; n + 1 starts: the busiest subdomain on the most central rank and on
// each rank) and the identity mapping, each improved by pairwise swaps until no swap helps;
// the cheapest result, then kIteratedSearchKicks rounds of iterated local search (a few
// random swaps of the best placement, descent, kept if cheaper). Deterministic (fixed
// seed); O(n^3) per start or kick and sweep of swaps: under a second for 64 ranks.
Placement place_heuristic(const SquareMatrix& w, const SquareMatrix& d);

// place_exact up to kExactPlacementMaxRanks ranks, place_heuristic beyond.
// Both throw std::invalid_argument when the sizes differ or an entry is negative.
Placement place(const SquareMatrix& w, const SquareMatrix& d);

// Bytes each subdomain of `node` sends to each other subdomain of that node per exchange
// (indices are ranks in the node): for every direction in {-1,0,1}^3 whose neighbour is
// on the node, the halo region the neighbour reads: the sender's size along dimensions
// where the direction is 0, the receiver's radius on the facing side elsewhere (at most
// the sender's size). Several directions reaching one neighbour add up; a subdomain that
// is its own neighbour (periodic, one subdomain along a dimension) lands on the diagonal.
SquareMatrix halo_bytes(const Partition& partition, const Radius& radius, const Periodic& periodic,
                        size_t element_bytes, int node);

// The same over every rank of the partition (ranks x ranks), for inter-node placement.
SquareMatrix halo_bytes(const Partition& partition, const Radius& radius, const Periodic& periodic,
                        size_t element_bytes);

}  // namespace loom::place
