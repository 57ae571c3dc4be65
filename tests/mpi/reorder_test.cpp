// Topology constructors with reorder=1 through Loom (ops/topology_reorder.hpp) against the host's
// own constructor (PMPI_*, reorder=0) on the communicator renumbered by Loom's mapping: random
// weighted distributed graphs (asymmetric, duplicate edges), Cartesian grids of 1-3 dimensions,
// periodic or not, and general graphs; every query and the neighbourhood collectives must answer
// alike. Then bad input: the host's error class, and the host's own numbering where the host
// accepts what Loom cannot map. Run on 1-8 ranks with and without virtual nodes
// (LOOM_RANKS_PER_NODE) and with LOOM_REORDER=random (every communicator renumbered).
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "loom/loom.h"
#include "tests/mpi/gtest_mpi.hpp"

namespace {

int world_rank = 0, world_size = 1;
uint64_t seed = 0;

uint64_t counter(const char* name) {
  uint64_t value = 0;
  loom_get_counter(name, &value);
  return value;
}

bool reorder_off() {
  const char* mode = std::getenv("LOOM_REORDER");
  return mode && !std::strcmp(mode, "0");
}

// A rank's lists in MPI_Dist_graph_create_adjacent.
struct Adjacent {
  std::vector<int> sources, source_weights, destinations, destination_weights;
};

// A random weighted graph over `n` ranks, the same on every rank: each rank sends to a few random
// ranks (itself and the same rank twice allowed), so the graph is asymmetric with duplicate
// edges; each rank's sources list the edges into it in the order of their senders.
std::vector<Adjacent> random_graph(int n, std::mt19937_64& rng) {
  std::vector<Adjacent> lists(static_cast<size_t>(n));
  for (int r = 0; r < n; ++r) {
    const int degree = static_cast<int>(rng() % 5);
    for (int k = 0; k < degree; ++k) {
      const int to = static_cast<int>(rng() % static_cast<uint64_t>(n));
      const int w = static_cast<int>(rng() % 100);
      lists[static_cast<size_t>(r)].destinations.push_back(to);
      lists[static_cast<size_t>(r)].destination_weights.push_back(w);
      lists[static_cast<size_t>(to)].sources.push_back(r);
      lists[static_cast<size_t>(to)].source_weights.push_back(w);
    }
  }
  return lists;
}

// Arrays as a caller passes them: never null (Open MPI refuses a null array even of degree 0).
const int* ranks_of(const std::vector<int>& r) {
  static const int none = 0;
  return r.empty() ? &none : r.data();
}

const int* weights_of(const std::vector<int>& w, bool weighted) {
  if (!weighted) return MPI_UNWEIGHTED;
  return w.empty() ? MPI_WEIGHTS_EMPTY : w.data();
}

// The host's communicator numbered as Loom's: the ranks of `loom` in order (ranks left out, last).
MPI_Comm renumbered_like(MPI_Comm comm, MPI_Comm loom) {
  int rank = 0, size = 0, key = 0;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  if (loom != MPI_COMM_NULL)
    MPI_Comm_rank(loom, &key);
  else
    key = size + rank;
  MPI_Comm split = MPI_COMM_NULL;
  EXPECT_EQ(PMPI_Comm_split(comm, 0, key, &split), MPI_SUCCESS);
  return split;
}

int rank_in(MPI_Comm comm) {
  int r = -1;
  if (comm != MPI_COMM_NULL) MPI_Comm_rank(comm, &r);
  return r;
}

// Same group in the same order, same topology kind, and the neighbourhood collectives deliver
// alike. `any_order`: MPI_Dist_graph_create, whose neighbour order the host leaves to the order
// messages arrive in: then each side's collectives must match its own order.
void expect_same_neighbourhood(MPI_Comm loom, MPI_Comm host, const std::string& what,
                               bool any_order = false) {
  ASSERT_EQ(loom == MPI_COMM_NULL, host == MPI_COMM_NULL) << what;
  if (loom == MPI_COMM_NULL) return;
  int compare = MPI_UNEQUAL;
  MPI_Comm_compare(loom, host, &compare);
  EXPECT_EQ(compare, MPI_CONGRUENT) << what;
  int kind_loom = -1, kind_host = -2;
  MPI_Topo_test(loom, &kind_loom);
  PMPI_Topo_test(host, &kind_host);
  EXPECT_EQ(kind_loom, kind_host) << what;
  int in = 0, out = 0;
  if (kind_host == MPI_DIST_GRAPH) {
    int weighted = 0;
    PMPI_Dist_graph_neighbors_count(host, &in, &out, &weighted);
  } else if (kind_host == MPI_GRAPH) {
    PMPI_Graph_neighbors_count(host, rank_in(host), &in);
    out = in;
  } else {
    PMPI_Cartdim_get(host, &in);
    in = out = 2 * in;
  }
  const int rank = rank_in(host);
  // Blocks from MPI_PROC_NULL (a grid's open boundary) stay as they were: alike in both. One
  // element more than the blocks: MPICH refuses a null buffer even without neighbours.
  std::vector<int> send(static_cast<size_t>(out) * 2 + 1),
      got_loom(static_cast<size_t>(in) * 2 + 1, -1), got_host(got_loom.size(), -1);
  for (size_t k = 0; k < send.size(); ++k) send[k] = rank * 1000 + static_cast<int>(k);
  EXPECT_EQ(MPI_Neighbor_alltoall(send.data(), 2, MPI_INT, got_loom.data(), 2, MPI_INT, loom),
            MPI_SUCCESS)
      << what;
  PMPI_Neighbor_alltoall(send.data(), 2, MPI_INT, got_host.data(), 2, MPI_INT, host);
  if (!any_order) {
    EXPECT_EQ(got_loom, got_host) << what << ": MPI_Neighbor_alltoall";
  }
  std::vector<int> all_loom(static_cast<size_t>(in) + 1, -1), all_host(all_loom.size(), -1);
  MPI_Neighbor_allgather(&rank, 1, MPI_INT, all_loom.data(), 1, MPI_INT, loom);
  PMPI_Neighbor_allgather(&rank, 1, MPI_INT, all_host.data(), 1, MPI_INT, host);
  if (!any_order) {
    EXPECT_EQ(all_loom, all_host) << what << ": MPI_Neighbor_allgather";
  } else if (kind_host == MPI_DIST_GRAPH) {
    // Block k comes from source k, in each communicator's own order.
    std::vector<int> sources(static_cast<size_t>(in) + 1), weights(sources.size()),
        targets(static_cast<size_t>(out) + 1), target_weights(targets.size());
    MPI_Dist_graph_neighbors(loom, in, sources.data(), weights.data(), out, targets.data(),
                             target_weights.data());
    sources.resize(static_cast<size_t>(in));
    all_loom.resize(static_cast<size_t>(in));
    EXPECT_EQ(all_loom, sources) << what << ": MPI_Neighbor_allgather";
  }
}

void expect_same_dist_graph(MPI_Comm loom, MPI_Comm host, const std::string& what,
                            bool any_order = false) {
  expect_same_neighbourhood(loom, host, what, any_order);
  int in[2], out[2], weighted[2];
  MPI_Dist_graph_neighbors_count(loom, &in[0], &out[0], &weighted[0]);
  PMPI_Dist_graph_neighbors_count(host, &in[1], &out[1], &weighted[1]);
  ASSERT_EQ(in[0], in[1]) << what;
  ASSERT_EQ(out[0], out[1]) << what;
  EXPECT_EQ(weighted[0], weighted[1]) << what;
  std::vector<int> s[2], sw[2], d[2], dw[2];
  for (int i = 0; i < 2; ++i) {
    s[i].assign(static_cast<size_t>(in[1]) + 1, -1);
    sw[i].assign(s[i].size(), -1);
    d[i].assign(static_cast<size_t>(out[1]) + 1, -1);
    dw[i].assign(d[i].size(), -1);
  }
  MPI_Dist_graph_neighbors(loom, in[0], s[0].data(), sw[0].data(), out[0], d[0].data(),
                           dw[0].data());
  PMPI_Dist_graph_neighbors(host, in[1], s[1].data(), sw[1].data(), out[1], d[1].data(),
                            dw[1].data());
  if (any_order) {
    // Compared as (rank, weight) pairs, each side's in its own order.
    for (int i = 0; i < 2; ++i) {
      for (auto [r, w] : {std::pair{&s[i], &sw[i]}, std::pair{&d[i], &dw[i]}}) {
        std::vector<std::pair<int, int>> pairs;
        for (size_t k = 0; k < r->size(); ++k)
          pairs.emplace_back((*r)[k], weighted[1] ? (*w)[k] : 0);
        std::sort(pairs.begin(), pairs.end());
        for (size_t k = 0; k < r->size(); ++k) (*r)[k] = pairs[k].first, (*w)[k] = pairs[k].second;
      }
    }
  }
  EXPECT_EQ(s[0], s[1]) << what << ": sources";
  EXPECT_EQ(d[0], d[1]) << what << ": destinations";
  if (weighted[1]) {
    EXPECT_EQ(sw[0], sw[1]) << what << ": source weights";
    EXPECT_EQ(dw[0], dw[1]) << what << ": destination weights";
  }
}

void expect_same_cart(MPI_Comm loom, MPI_Comm host, const std::string& what) {
  expect_same_neighbourhood(loom, host, what);
  if (host == MPI_COMM_NULL) return;
  int ndims[2];
  MPI_Cartdim_get(loom, &ndims[0]);
  PMPI_Cartdim_get(host, &ndims[1]);
  ASSERT_EQ(ndims[0], ndims[1]) << what;
  const size_t n = static_cast<size_t>(ndims[1]);
  std::vector<int> dims[2], periods[2], coords[2];
  for (int i = 0; i < 2; ++i) dims[i] = periods[i] = coords[i] = std::vector<int>(n + 1, -1);
  MPI_Cart_get(loom, ndims[0], dims[0].data(), periods[0].data(), coords[0].data());
  PMPI_Cart_get(host, ndims[1], dims[1].data(), periods[1].data(), coords[1].data());
  EXPECT_EQ(dims[0], dims[1]) << what;
  EXPECT_EQ(periods[0], periods[1]) << what;
  EXPECT_EQ(coords[0], coords[1]) << what;
  int size = 0;
  MPI_Comm_size(host, &size);
  for (int r = 0; r < size; ++r) {
    std::vector<int> c[2] = {std::vector<int>(n + 1, -1), std::vector<int>(n + 1, -1)};
    MPI_Cart_coords(loom, r, ndims[0], c[0].data());
    PMPI_Cart_coords(host, r, ndims[1], c[1].data());
    EXPECT_EQ(c[0], c[1]) << what << ": coordinates of " << r;
    int back[2] = {-1, -2};
    MPI_Cart_rank(loom, c[1].data(), &back[0]);
    PMPI_Cart_rank(host, c[1].data(), &back[1]);
    EXPECT_EQ(back[0], back[1]) << what;
  }
  for (int d = 0; d < ndims[1]; ++d)
    for (int disp : {1, -2}) {
      int src[2], dst[2];
      MPI_Cart_shift(loom, d, disp, &src[0], &dst[0]);
      PMPI_Cart_shift(host, d, disp, &src[1], &dst[1]);
      EXPECT_EQ(src[0], src[1]) << what << ": shift source along " << d;
      EXPECT_EQ(dst[0], dst[1]) << what << ": shift destination along " << d;
    }
  for (int mask = 0; mask < (1 << ndims[1]); ++mask) {
    std::vector<int> keep(n + 1, 0);
    for (size_t d = 0; d < n; ++d) keep[d] = (mask >> d) & 1;
    MPI_Comm sub[2] = {MPI_COMM_NULL, MPI_COMM_NULL};
    MPI_Cart_sub(loom, keep.data(), &sub[0]);
    PMPI_Cart_sub(host, keep.data(), &sub[1]);
    // Keeping no dimension, MPICH gives MPI_COMM_NULL, Open MPI a communicator of one rank.
    EXPECT_EQ(sub[0] == MPI_COMM_NULL, sub[1] == MPI_COMM_NULL) << what << ": MPI_Cart_sub";
    if (sub[0] == MPI_COMM_NULL || sub[1] == MPI_COMM_NULL) continue;
    int compare = MPI_UNEQUAL;
    MPI_Comm_compare(sub[0], sub[1], &compare);
    EXPECT_EQ(compare, MPI_CONGRUENT) << what << ": MPI_Cart_sub " << mask;
    MPI_Comm_free(&sub[0]);
    PMPI_Comm_free(&sub[1]);
  }
}

void expect_same_graph(MPI_Comm loom, MPI_Comm host, const std::string& what) {
  expect_same_neighbourhood(loom, host, what);
  if (host == MPI_COMM_NULL) return;
  int nodes[2], edges[2];
  MPI_Graphdims_get(loom, &nodes[0], &edges[0]);
  PMPI_Graphdims_get(host, &nodes[1], &edges[1]);
  ASSERT_EQ(nodes[0], nodes[1]) << what;
  ASSERT_EQ(edges[0], edges[1]) << what;
  for (int r = 0; r < nodes[1]; ++r) {
    int count[2];
    MPI_Graph_neighbors_count(loom, r, &count[0]);
    PMPI_Graph_neighbors_count(host, r, &count[1]);
    ASSERT_EQ(count[0], count[1]) << what;
    std::vector<int> n[2] = {std::vector<int>(static_cast<size_t>(count[1]) + 1, -1),
                             std::vector<int>(static_cast<size_t>(count[1]) + 1, -1)};
    MPI_Graph_neighbors(loom, r, count[0], n[0].data());
    PMPI_Graph_neighbors(host, r, count[1], n[1].data());
    EXPECT_EQ(n[0], n[1]) << what << ": neighbours of " << r;
  }
}

void free_both(MPI_Comm* a, MPI_Comm* b) {
  if (*a != MPI_COMM_NULL) MPI_Comm_free(a);
  if (*b != MPI_COMM_NULL) PMPI_Comm_free(b);
}

// Under LOOM_REORDER=0 nothing may be renumbered.
void expect_numbering_kept(MPI_Comm comm, MPI_Comm loom, const std::string& what) {
  if (!reorder_off() || loom == MPI_COMM_NULL) return;
  EXPECT_EQ(rank_in(loom), rank_in(comm)) << what << " renumbered under LOOM_REORDER=0";
}

}  // namespace

TEST(Reorder, DistributedGraphs) {
  std::mt19937_64 rng(seed);
  const uint64_t before = counter("reorder.communicators");
  int asked = 0;
  for (int trial = 0; trial < 3; ++trial) {
    const std::vector<Adjacent> lists = random_graph(world_size, rng);
    const bool weighted = trial != 2;
    const std::string what = "adjacent graph " + std::to_string(trial);
    const Adjacent& mine = lists[static_cast<size_t>(world_rank)];
    MPI_Comm loom = MPI_COMM_NULL;
    ASSERT_EQ(MPI_Dist_graph_create_adjacent(
                  MPI_COMM_WORLD, static_cast<int>(mine.sources.size()), ranks_of(mine.sources),
                  weights_of(mine.source_weights, weighted),
                  static_cast<int>(mine.destinations.size()), ranks_of(mine.destinations),
                  weights_of(mine.destination_weights, weighted), MPI_INFO_NULL, 1, &loom),
              MPI_SUCCESS)
        << what;
    ++asked;
    expect_numbering_kept(MPI_COMM_WORLD, loom, what);
    // The host's, built by the rank now holding number v with rank v's lists.
    MPI_Comm split = renumbered_like(MPI_COMM_WORLD, loom), host = MPI_COMM_NULL;
    const Adjacent& held = lists[static_cast<size_t>(rank_in(loom))];
    ASSERT_EQ(PMPI_Dist_graph_create_adjacent(
                  split, static_cast<int>(held.sources.size()), ranks_of(held.sources),
                  weights_of(held.source_weights, weighted),
                  static_cast<int>(held.destinations.size()), ranks_of(held.destinations),
                  weights_of(held.destination_weights, weighted), MPI_INFO_NULL, 0, &host),
              MPI_SUCCESS);
    expect_same_dist_graph(loom, host, what);
    free_both(&loom, &host);
    PMPI_Comm_free(&split);

    // The general form: every rank gives some of the edges (rank r those of senders r+1 mod n).
    const std::string general = "general graph " + std::to_string(trial);
    const int from = (world_rank + 1) % world_size;
    const Adjacent& given = lists[static_cast<size_t>(from)];
    const int degree = static_cast<int>(given.destinations.size());
    ASSERT_EQ(MPI_Dist_graph_create(MPI_COMM_WORLD, 1, &from, &degree, ranks_of(given.destinations),
                                    weights_of(given.destination_weights, weighted), MPI_INFO_NULL,
                                    1, &loom),
              MPI_SUCCESS)
        << general;
    ++asked;
    expect_numbering_kept(MPI_COMM_WORLD, loom, general);
    split = renumbered_like(MPI_COMM_WORLD, loom);
    ASSERT_EQ(PMPI_Dist_graph_create(split, 1, &from, &degree, ranks_of(given.destinations),
                                     weights_of(given.destination_weights, weighted), MPI_INFO_NULL,
                                     0, &host),
              MPI_SUCCESS);
    expect_same_dist_graph(loom, host, general, true);
    free_both(&loom, &host);
    PMPI_Comm_free(&split);
  }
  // Every constructor asked on more than one rank is reported, unless reordering is off.
  const uint64_t expected = world_size > 1 && !reorder_off() ? static_cast<uint64_t>(asked) : 0;
  EXPECT_EQ(counter("reorder.communicators") - before, expected);
}

TEST(Reorder, CartesianGrids) {
  std::mt19937_64 rng(seed + 1);
  for (int ndims = 1; ndims <= 3; ++ndims)
    for (int trial = 0; trial < 2; ++trial) {
      // Dimensions from MPI_Dims_create over all ranks or one fewer (a rank left out).
      const int ranks = world_size > 1 && trial == 1 ? world_size - 1 : world_size;
      std::vector<int> dims(static_cast<size_t>(ndims), 0), periods(dims.size());
      MPI_Dims_create(ranks, ndims, dims.data());
      if (trial % 2) std::reverse(dims.begin(), dims.end());
      for (int& p : periods) p = static_cast<int>(rng() % 2);
      const std::string what = "cart " + std::to_string(ndims) + "d trial " + std::to_string(trial);
      MPI_Comm loom = MPI_COMM_NULL, host = MPI_COMM_NULL;
      ASSERT_EQ(MPI_Cart_create(MPI_COMM_WORLD, ndims, dims.data(), periods.data(), 1, &loom),
                MPI_SUCCESS)
          << what;
      expect_numbering_kept(MPI_COMM_WORLD, loom, what);
      MPI_Comm split = renumbered_like(MPI_COMM_WORLD, loom);
      ASSERT_EQ(PMPI_Cart_create(split, ndims, dims.data(), periods.data(), 0, &host), MPI_SUCCESS);
      expect_same_cart(loom, host, what);
      free_both(&loom, &host);
      PMPI_Comm_free(&split);
    }
}

TEST(Reorder, Graphs) {
  std::mt19937_64 rng(seed + 2);
  for (int trial = 0; trial < 2; ++trial) {
    // A symmetric random graph over all ranks: index and edges as MPI_Graph_create takes them.
    const int n = world_size;
    std::vector<std::vector<int>> adjacent(static_cast<size_t>(n));
    for (int e = 0; e < 2 * n; ++e) {
      const int a = static_cast<int>(rng() % static_cast<uint64_t>(n));
      const int b = static_cast<int>(rng() % static_cast<uint64_t>(n));
      adjacent[static_cast<size_t>(a)].push_back(b);
      if (a != b) adjacent[static_cast<size_t>(b)].push_back(a);
    }
    std::vector<int> index, edges;
    for (const auto& list : adjacent) {
      edges.insert(edges.end(), list.begin(), list.end());
      index.push_back(static_cast<int>(edges.size()));
    }
    const std::string what = "graph " + std::to_string(trial);
    MPI_Comm loom = MPI_COMM_NULL, host = MPI_COMM_NULL;
    ASSERT_EQ(MPI_Graph_create(MPI_COMM_WORLD, n, index.data(), edges.data(), 1, &loom),
              MPI_SUCCESS)
        << what;
    expect_numbering_kept(MPI_COMM_WORLD, loom, what);
    MPI_Comm split = renumbered_like(MPI_COMM_WORLD, loom);
    ASSERT_EQ(PMPI_Graph_create(split, n, index.data(), edges.data(), 0, &host), MPI_SUCCESS);
    expect_same_graph(loom, host, what);
    free_both(&loom, &host);
    PMPI_Comm_free(&split);
  }
}

TEST(Reorder, BadInputGetsTheHostsAnswer) {
  MPI_Comm comm = MPI_COMM_NULL;
  MPI_Comm_dup(MPI_COMM_WORLD, &comm);
  MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
  auto error_class = [](int rc) {
    int c = rc;
    if (rc != MPI_SUCCESS) MPI_Error_class(rc, &c);
    return c;
  };
  // Each case: Loom's call and the host's with the same arguments; where the host accepts them,
  // Loom must leave its numbering (it cannot map what it is given).
  auto check = [&](const std::string& what, int loom_rc, MPI_Comm loom, int host_rc,
                   MPI_Comm host) {
    EXPECT_EQ(error_class(loom_rc), error_class(host_rc)) << what;
    if (loom_rc == MPI_SUCCESS && host_rc == MPI_SUCCESS) {
      int compare = MPI_UNEQUAL;
      if (loom != MPI_COMM_NULL && host != MPI_COMM_NULL) MPI_Comm_compare(loom, host, &compare);
      EXPECT_TRUE(loom == host || compare == MPI_CONGRUENT) << what << ": renumbered";
    }
    if (loom_rc == MPI_SUCCESS) free_both(&loom, &host);
  };
  MPI_Comm loom = MPI_COMM_NULL, host = MPI_COMM_NULL;
  {
    const int dims[2] = {world_size + 1, 1}, periods[2] = {0, 0};
    const int a = MPI_Cart_create(comm, 2, dims, periods, 1, &loom);
    const int b = PMPI_Cart_create(comm, 2, dims, periods, 1, &host);
    EXPECT_NE(a, MPI_SUCCESS) << "dims whose product exceeds the size";
    check("dims whose product exceeds the size", a, loom, b, host);
  }
  {
    const int dims[1] = {-1}, periods[1] = {1};
    const int a = MPI_Cart_create(comm, 1, dims, periods, 1, &loom);
    const int b = PMPI_Cart_create(comm, 1, dims, periods, 1, &host);
    check("negative dims", a, loom, b, host);
  }
  {
    // A destination out of range.
    const int out[1] = {world_size + 2}, w[1] = {1};
    const int a = MPI_Dist_graph_create_adjacent(comm, 0, nullptr, MPI_WEIGHTS_EMPTY, 1, out, w,
                                                 MPI_INFO_NULL, 1, &loom);
    const int b = PMPI_Dist_graph_create_adjacent(comm, 0, nullptr, MPI_WEIGHTS_EMPTY, 1, out, w,
                                                  MPI_INFO_NULL, 1, &host);
    check("out-of-range rank", a, loom, b, host);
  }
  {
    // Negative weights on consistent edges (each rank to the next).
    const int next = (world_rank + 1) % world_size;
    const int previous = (world_rank + world_size - 1) % world_size;
    const int w[1] = {-5};
    const int a =
        MPI_Dist_graph_create_adjacent(comm, 1, &previous, w, 1, &next, w, MPI_INFO_NULL, 1, &loom);
    const int b = PMPI_Dist_graph_create_adjacent(comm, 1, &previous, w, 1, &next, w, MPI_INFO_NULL,
                                                  1, &host);
    check("negative weights", a, loom, b, host);
  }
  {
    // Inconsistent edges: every rank sends to the next, none lists a source.
    const int next = (world_rank + 1) % world_size;
    const int w[1] = {100};
    const int a = MPI_Dist_graph_create_adjacent(comm, 0, nullptr, MPI_WEIGHTS_EMPTY, 1, &next, w,
                                                 MPI_INFO_NULL, 1, &loom);
    const int b = PMPI_Dist_graph_create_adjacent(comm, 0, nullptr, MPI_WEIGHTS_EMPTY, 1, &next, w,
                                                  MPI_INFO_NULL, 1, &host);
    check("inconsistent edges", a, loom, b, host);
  }
  {
    // A graph edge to a rank past the node count.
    const int index[1] = {1}, edges[1] = {5};
    const int a = MPI_Graph_create(comm, 1, index, edges, 1, &loom);
    const int b = PMPI_Graph_create(comm, 1, index, edges, 1, &host);
    check("graph edge out of range", a, loom, b, host);
  }
  MPI_Comm_free(&comm);
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &world_size);
  const char* text = std::getenv("LOOM_TEST_SEED");
  seed = text ? std::strtoull(text, nullptr, 10) : std::random_device{}();
  MPI_Bcast(&seed, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
  if (world_rank == 0)
    std::printf("reorder_test: %d ranks, seed %llu (LOOM_TEST_SEED)\n", world_size,
                static_cast<unsigned long long>(seed));
  return loom::test::run_tests_and_finalize(&argc, argv);
}
