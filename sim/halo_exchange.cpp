// loom-sim-halo: one 3-D halo exchange, weak-scaled (n^3 cells per rank, F double fields, a
// radius-r box stencil on a periodic grid), by one of three codes, timed per exchange:
//   library    Loom's halo library (include/loom/halo.h): node-aware partition, placement,
//              per-neighbour transports
//   isend      the hand-written exchange: 26 subarray types, MPI_Irecv/MPI_Isend/MPI_Waitall
//   alltoallw  MPI_Neighbor_alltoallw on a distributed graph of the 26 neighbours
// The hand-written codes take the ranks in MPI_Dims_create's Cartesian order (--order rank, as
// MPI_Cart_create without reordering) or node by node as place/'s partition lays them out
// (--order node: the reordering a topology-aware MPI_Cart_create would do).
//
// The same source builds against a real MPI (measurements, the reference results) and against
// SimGrid's SMPI (-DLOOM_SMPI=ON: projections). Under SMPI the CPU work is charged from models
// (mpi/sim_clock.hpp) and MPI_Neighbor_alltoallw, which SMPI 3.32 lacks, runs as Open MPI's
// basic component does it (every receive posted, then every send, then one wait).
// docs/projection.md.
#include <mpi.h>

#include <algorithm>
#include <array>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "loom/halo.h"
#include "mpi/sim_clock.hpp"
#include "place/partition.hpp"

namespace {

constexpr int kDirections = 26;

struct Options {
  int n = 32, radius = 2, fields = 4, iterations = 10, warmup = 2;
  std::string variant = "library", order = "rank", dump;
  bool check = true;  // --no-check: no initial values, no verification (projections)
};

void usage() {
  std::fprintf(stderr,
               "usage: loom-sim-halo [--n N] [--radius R] [--fields F] [--iterations K]\n"
               "                     [--warmup W] [--variant library|isend|alltoallw]\n"
               "                     [--order rank|node] [--dump DIR]\n");
}

bool parse(int argc, char** argv, Options* o) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--no-check") {
      o->check = false;
      continue;
    }
    const char* v = i + 1 < argc ? argv[i + 1] : nullptr;
    if (!v) return false;
    if (a == "--n")
      o->n = std::atoi(v);
    else if (a == "--radius")
      o->radius = std::atoi(v);
    else if (a == "--fields")
      o->fields = std::atoi(v);
    else if (a == "--iterations")
      o->iterations = std::atoi(v);
    else if (a == "--warmup")
      o->warmup = std::atoi(v);
    else if (a == "--variant")
      o->variant = v;
    else if (a == "--order")
      o->order = v;
    else if (a == "--dump")
      o->dump = v;
    else
      return false;
    ++i;
  }
  return o->n > 0 && o->radius > 0 && o->radius <= o->n && o->fields > 0 && o->iterations >= 0 &&
         o->warmup >= 0 && (o->order == "rank" || o->order == "node") &&
         (o->variant == "library" || o->variant == "isend" || o->variant == "alltoallw");
}

// The value every interior cell starts with, from its global coordinates: ghosts must end
// holding their periodic image's.
double cell_value(int f, int64_t x, int64_t y, int64_t z) {
  return 1.0 + static_cast<double>(((x * 73856093) ^ (y * 19349663) ^ (z * 83492791)) % 1000003) +
         0.25 * f;
}

// One rank's subdomain: size, origin, its fields ([field][z][y][x], ghosts included) and, for
// the hand-written codes, the rank in each direction.
struct Local {
  std::array<int64_t, 3> n{}, origin{}, global{};
  int r = 1, fields = 1;
  std::array<int64_t, 3> ext{};
  std::vector<double*> field;  // first cell of the allocation (ghost corner)
  std::array<int, kDirections> neighbour{};
  int64_t index(int64_t x, int64_t y, int64_t z) const {  // ghost-inclusive local coordinates
    return ((z * ext[1]) + y) * ext[0] + x;
  }
};

void direction(int i, int d[3]) {  // x fastest; 13 (the centre) skipped
  const int k = i < 13 ? i : i + 1;
  d[0] = k % 3 - 1;
  d[1] = k / 3 % 3 - 1;
  d[2] = k / 9 - 1;
}

void fill(Local& l) {
  for (int f = 0; f < l.fields; ++f) {
    double* u = l.field[static_cast<size_t>(f)];
    std::fill(u, u + l.ext[0] * l.ext[1] * l.ext[2], -1.0);
    for (int64_t z = 0; z < l.n[2]; ++z)
      for (int64_t y = 0; y < l.n[1]; ++y)
        for (int64_t x = 0; x < l.n[0]; ++x)
          u[l.index(x + l.r, y + l.r, z + l.r)] =
              cell_value(f, l.origin[0] + x, l.origin[1] + y, l.origin[2] + z);
  }
}

// Cells whose value is not their (periodic) global position's: 0 after a correct exchange.
int64_t wrong_cells(const Local& l) {
  int64_t wrong = 0;
  for (int f = 0; f < l.fields; ++f) {
    const double* u = l.field[static_cast<size_t>(f)];
    for (int64_t z = 0; z < l.ext[2]; ++z)
      for (int64_t y = 0; y < l.ext[1]; ++y)
        for (int64_t x = 0; x < l.ext[0]; ++x) {
          const int64_t g[3] = {(l.origin[0] + x - l.r + l.global[0]) % l.global[0],
                                (l.origin[1] + y - l.r + l.global[1]) % l.global[1],
                                (l.origin[2] + z - l.r + l.global[2]) % l.global[2]};
          wrong += u[l.index(x, y, z)] != cell_value(f, g[0], g[1], g[2]);
        }
  }
  return wrong;
}

// The ghost-inclusive fields, raw, in DIR/halo-<origin>.bin: runs on different MPIs (or SMPI)
// and rank orders compare file by file.
void dump(const Local& l, const std::string& dir) {
  char name[512];
  std::snprintf(name, sizeof name, "%s/halo-%" PRId64 "-%" PRId64 "-%" PRId64 ".bin", dir.c_str(),
                l.origin[0], l.origin[1], l.origin[2]);
  FILE* out = std::fopen(name, "wb");
  if (!out) return;
  for (const double* u : l.field)
    std::fwrite(u, sizeof(double), static_cast<size_t>(l.ext[0] * l.ext[1] * l.ext[2]), out);
  std::fclose(out);
}

// The hand-written codes' types: send[i] the interior next to side i, recv[i] the ghost there;
// rows and bytes of each for the SMPI cost model.
struct Types {
  std::vector<MPI_Datatype> send, recv;
  std::array<int64_t, kDirections> rows{}, bytes{};
};

MPI_Datatype box_type(const Local& l, const int64_t lo[3], const int64_t size[3]) {
  // One field's box (C order: z, y, x), repeated over the fields' separate arrays by hindexed.
  const int sizes[3] = {static_cast<int>(l.ext[2]), static_cast<int>(l.ext[1]),
                        static_cast<int>(l.ext[0])};
  const int sub[3] = {static_cast<int>(size[2]), static_cast<int>(size[1]),
                      static_cast<int>(size[0])};
  const int start[3] = {static_cast<int>(lo[2]), static_cast<int>(lo[1]), static_cast<int>(lo[0])};
  MPI_Datatype one, all;
  MPI_Type_create_subarray(3, sizes, sub, start, MPI_ORDER_C, MPI_DOUBLE, &one);
  std::vector<MPI_Aint> at(static_cast<size_t>(l.fields));
  std::vector<int> ones(static_cast<size_t>(l.fields), 1);
  for (int f = 0; f < l.fields; ++f)
    MPI_Get_address(l.field[static_cast<size_t>(f)], &at[static_cast<size_t>(f)]);
  MPI_Type_create_hindexed(l.fields, ones.data(), at.data(), one, &all);
  MPI_Type_commit(&all);
  MPI_Type_free(&one);
  return all;
}

Types make_types(const Local& l) {
  Types t;
  for (int i = 0; i < kDirections; ++i) {
    int d[3];
    direction(i, d);
    int64_t send_lo[3], recv_lo[3], size[3];
    for (int a = 0; a < 3; ++a) {
      size[a] = d[a] == 0 ? l.n[static_cast<size_t>(a)] : l.r;
      send_lo[a] = d[a] > 0 ? l.n[static_cast<size_t>(a)] : l.r;
      recv_lo[a] = d[a] < 0 ? 0 : d[a] == 0 ? l.r : l.n[static_cast<size_t>(a)] + l.r;
    }
    t.send.push_back(box_type(l, send_lo, size));
    t.recv.push_back(box_type(l, recv_lo, size));
    t.rows[static_cast<size_t>(i)] = size[1] * size[2] * l.fields;
    t.bytes[static_cast<size_t>(i)] = size[0] * size[1] * size[2] * l.fields * 8;
  }
  return t;
}

int opposite(int i) {
  return kDirections - 1 - i;
}

void exchange_isend(const Local& l, const Types& t, MPI_Comm comm) {
  MPI_Request requests[2 * kDirections];
  for (int i = 0; i < kDirections;
       ++i)  // the neighbour at i sent toward us, its direction opposite(i)
    MPI_Irecv(MPI_BOTTOM, 1, t.recv[static_cast<size_t>(i)], l.neighbour[static_cast<size_t>(i)],
              opposite(i), comm, &requests[i]);
  for (int i = 0; i < kDirections; ++i) {
    loom::mpi::sim::charge_host_pack(t.rows[static_cast<size_t>(i)],
                                     t.bytes[static_cast<size_t>(i)]);
    MPI_Isend(MPI_BOTTOM, 1, t.send[static_cast<size_t>(i)], l.neighbour[static_cast<size_t>(i)], i,
              comm, &requests[kDirections + i]);
  }
  MPI_Waitall(2 * kDirections, requests, MPI_STATUSES_IGNORE);
  for (int i = 0; i < kDirections; ++i)
    loom::mpi::sim::charge_host_pack(t.rows[static_cast<size_t>(i)],
                                     t.bytes[static_cast<size_t>(i)]);
}

// Destination i is the neighbour at direction i; source i the one at the opposite direction,
// received into the ghost on that side, so that repeated neighbours pair matching regions.
struct Graph {
  MPI_Comm comm = MPI_COMM_NULL;
  std::vector<int> sources, destinations, counts;
  std::vector<MPI_Aint> displacements;
  std::vector<MPI_Datatype> recv_opposite;
};

Graph make_graph(const Local& l, const Types& t, MPI_Comm comm) {
  Graph g;
  for (int i = 0; i < kDirections; ++i) {
    g.destinations.push_back(l.neighbour[static_cast<size_t>(i)]);
    g.sources.push_back(l.neighbour[static_cast<size_t>(opposite(i))]);
    g.recv_opposite.push_back(t.recv[static_cast<size_t>(opposite(i))]);
  }
  g.counts.assign(kDirections, 1);
  g.displacements.assign(kDirections, 0);
#ifndef LOOM_SMPI
  MPI_Dist_graph_create_adjacent(comm, kDirections, g.sources.data(), MPI_UNWEIGHTED, kDirections,
                                 g.destinations.data(), MPI_UNWEIGHTED, MPI_INFO_NULL, 0, &g.comm);
#else
  MPI_Comm_dup(comm, &g.comm);
#endif
  return g;
}

void exchange_alltoallw(const Types& t, const Graph& g) {
#ifndef LOOM_SMPI
  for (int i = 0; i < kDirections; ++i)
    loom::mpi::sim::charge_host_pack(t.rows[static_cast<size_t>(i)],
                                     t.bytes[static_cast<size_t>(i)]);
  MPI_Neighbor_alltoallw(MPI_BOTTOM, g.counts.data(), g.displacements.data(), t.send.data(),
                         MPI_BOTTOM, g.counts.data(), g.displacements.data(),
                         g.recv_opposite.data(), g.comm);
#else
  // Open MPI's coll/basic neighbour all-to-all-w: every receive, then every send, one wait; the
  // k-th message between two ranks pairs the k-th source with the k-th destination, as the
  // graph's order does (one tag: the order of posting matches them).
  MPI_Request requests[2 * kDirections];
  for (int i = 0; i < kDirections; ++i)
    MPI_Irecv(MPI_BOTTOM, 1, g.recv_opposite[static_cast<size_t>(i)],
              g.sources[static_cast<size_t>(i)], 0, g.comm, &requests[i]);
  for (int i = 0; i < kDirections; ++i) {
    loom::mpi::sim::charge_host_pack(t.rows[static_cast<size_t>(i)],
                                     t.bytes[static_cast<size_t>(i)]);
    MPI_Isend(MPI_BOTTOM, 1, t.send[static_cast<size_t>(i)], g.destinations[static_cast<size_t>(i)],
              0, g.comm, &requests[kDirections + i]);
  }
  MPI_Waitall(2 * kDirections, requests, MPI_STATUSES_IGNORE);
#endif
  for (int i = 0; i < kDirections; ++i)
    loom::mpi::sim::charge_host_pack(t.rows[static_cast<size_t>(i)],
                                     t.bytes[static_cast<size_t>(i)]);
}

// Nodes as the host MPI sees them (SMPI: simulated hosts), or LOOM_RANKS_PER_NODE's virtual
// ones: the node index of every rank.
std::vector<int> node_of_ranks(MPI_Comm comm, int* nodes) {
  int size = 1, rank = 0;
  MPI_Comm_size(comm, &size);
  MPI_Comm_rank(comm, &rank);
  int leader = rank;
  if (const char* env = std::getenv("LOOM_RANKS_PER_NODE"); env && std::atoi(env) > 0) {
    leader = rank / std::atoi(env) * std::atoi(env);
  } else {
    MPI_Comm node;
    MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    MPI_Allreduce(&rank, &leader, 1, MPI_INT, MPI_MIN, node);
    MPI_Comm_free(&node);
  }
  std::vector<int> leaders(static_cast<size_t>(size)), index(static_cast<size_t>(size));
  MPI_Allgather(&leader, 1, MPI_INT, leaders.data(), 1, MPI_INT, comm);
  std::vector<int> distinct = leaders;
  std::sort(distinct.begin(), distinct.end());
  distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());
  *nodes = static_cast<int>(distinct.size());
  for (int r = 0; r < size; ++r)
    index[static_cast<size_t>(r)] = static_cast<int>(
        std::lower_bound(distinct.begin(), distinct.end(), leaders[static_cast<size_t>(r)]) -
        distinct.begin());
  return index;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  Options o;
  if (!parse(argc, argv, &o)) {
    if (rank == 0) usage();
    MPI_Finalize();
    return 2;
  }
  int dims[3] = {0, 0, 0};
  MPI_Dims_create(size, 3, dims);  // z slowest: dims[0] along z
  Local l;
  l.r = o.radius;
  l.fields = o.fields;
  l.global = {o.n * dims[2], o.n * dims[1], o.n * dims[0]};
  int nodes = 1;
  const std::vector<int> node_of = node_of_ranks(MPI_COMM_WORLD, &nodes);
  const int per_node = size / nodes;

  loom_halo_domain domain = nullptr;
  std::vector<loom::mpi::sim::Memory> owned;
  if (o.variant == "library") {
    const int64_t extent[3] = {l.global[0], l.global[1], l.global[2]};
    const int radius[6] = {o.radius, o.radius, o.radius, o.radius, o.radius, o.radius};
    const int periodic[3] = {1, 1, 1};
    int rc = loom_halo_create(MPI_COMM_WORLD, extent, radius, periodic, LOOM_HALO_BOX, 0, &domain);
    for (int f = 0; f < o.fields && rc == LOOM_HALO_SUCCESS; ++f) {
      int index = 0;
      rc = loom_halo_add_field_type(domain, MPI_DOUBLE, &index);
    }
    if (rc == LOOM_HALO_SUCCESS) rc = loom_halo_realize(domain);
    if (rc != LOOM_HALO_SUCCESS) {
      std::fprintf(stderr, "loom-sim-halo: %s\n", loom_halo_error_message());
      MPI_Abort(MPI_COMM_WORLD, 1);
    }
    loom_halo_origin(domain, l.origin.data());
    loom_halo_extent(domain, l.n.data());
    for (int f = 0; f < o.fields; ++f) {
      void* base = nullptr;
      int64_t strides[3];
      loom_halo_field(domain, f, &base, strides);
      l.ext = {strides[1] / strides[0], strides[2] / strides[1], 0};
      l.ext[2] = l.n[2] + 2 * o.radius;
      l.field.push_back(static_cast<double*>(base) -
                        (o.radius * (1 + l.ext[0] + l.ext[0] * l.ext[1])));
    }
  } else {
    // The subdomain grid: MPI_Dims_create's in rank order, or place/'s node by node.
    std::array<int, 3> at{};
    std::array<int, 3> grid{dims[2], dims[1], dims[0]};
    std::vector<int> rank_at;  // by x-fastest grid index
    if (o.order == "node") {
      const loom::place::Partition p =
          loom::place::partition({l.global[0], l.global[1], l.global[2]},
                                 loom::place::Radius::uniform(o.radius), nodes, per_node);
      const auto g = p.grid();
      grid = {g[0], g[1], g[2]};
      rank_at.assign(static_cast<size_t>(size), 0);
      // Slot s of the partition is node s / per_node's (s % per_node)-th rank.
      std::vector<std::vector<int>> members(static_cast<size_t>(nodes));
      for (int r = 0; r < size; ++r)
        members[static_cast<size_t>(node_of[static_cast<size_t>(r)])].push_back(r);
      for (const auto& s : p.subdomains()) {
        const int who = members[static_cast<size_t>(s.node)][static_cast<size_t>(s.rank_in_node)];
        rank_at[static_cast<size_t>(s.index[0] + grid[0] * (s.index[1] + grid[1] * s.index[2]))] =
            who;
        if (who == rank) {
          at = {s.index[0], s.index[1], s.index[2]};
          l.n = s.size;
          l.origin = s.origin;
        }
      }
    } else {
      for (int r = 0; r < size; ++r) rank_at.push_back(r);
      at = {rank % grid[0], rank / grid[0] % grid[1], rank / grid[0] / grid[1]};
      for (int a = 0; a < 3; ++a) {
        l.n[static_cast<size_t>(a)] = o.n;
        l.origin[static_cast<size_t>(a)] = static_cast<int64_t>(at[static_cast<size_t>(a)]) * o.n;
      }
    }
    for (int i = 0; i < kDirections; ++i) {
      int d[3];
      direction(i, d);
      int c[3];
      for (int a = 0; a < 3; ++a)
        c[a] = (at[static_cast<size_t>(a)] + d[a] + grid[static_cast<size_t>(a)]) %
               grid[static_cast<size_t>(a)];
      l.neighbour[static_cast<size_t>(i)] =
          rank_at[static_cast<size_t>(c[0] + grid[0] * (c[1] + grid[1] * c[2]))];
    }
    for (int a = 0; a < 3; ++a)
      l.ext[static_cast<size_t>(a)] = l.n[static_cast<size_t>(a)] + 2 * o.radius;
    for (int f = 0; f < o.fields; ++f) {
      owned.push_back(loom::mpi::sim::allocate(
          sizeof(double) * static_cast<size_t>(l.ext[0] * l.ext[1] * l.ext[2])));
      l.field.push_back(reinterpret_cast<double*>(owned.back().get()));
    }
  }
  if (o.check) fill(l);

  Types types;
  Graph graph;
  if (o.variant != "library") types = make_types(l);
  if (o.variant == "alltoallw") graph = make_graph(l, types, MPI_COMM_WORLD);
  const auto exchange = [&] {
    if (o.variant == "library")
      loom_halo_exchange(domain);
    else if (o.variant == "isend")
      exchange_isend(l, types, MPI_COMM_WORLD);
    else
      exchange_alltoallw(types, graph);
  };
  for (int i = 0; i < o.warmup; ++i) exchange();
  // Each exchange's time is its slowest rank's; the mean and the best of them are reported (on
  // a shared machine the best is the one no rank lost its core during).
  double slowest = 0, best = 0;
  for (int i = 0; i < o.iterations; ++i) {
    MPI_Barrier(MPI_COMM_WORLD);
    const double t0 = MPI_Wtime();
    exchange();
    double t = MPI_Wtime() - t0;
    MPI_Allreduce(MPI_IN_PLACE, &t, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    slowest += t / o.iterations;
    best = i == 0 ? t : std::min(best, t);
  }
  // Bytes this rank sends that stay inside its node (the hand-written codes' neighbours; the
  // library's node-aware partition is --order node's).
  double bytes[2] = {0, 0}, all_bytes[2] = {0, 0};
  if (o.variant != "library")
    for (int i = 0; i < kDirections; ++i) {
      const double b = static_cast<double>(types.bytes[static_cast<size_t>(i)]);
      bytes[1] += b;
      if (node_of[static_cast<size_t>(l.neighbour[static_cast<size_t>(i)])] ==
          node_of[static_cast<size_t>(rank)])
        bytes[0] += b;
    }
  MPI_Reduce(bytes, all_bytes, 2, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
  long long wrong = o.check ? wrong_cells(l) : 0, all_wrong = 0;
  MPI_Reduce(&wrong, &all_wrong, 1, MPI_LONG_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
  if (!o.dump.empty()) dump(l, o.dump);
  if (rank == 0)
    std::printf(
        "loom-sim-halo variant=%s order=%s ranks=%d nodes=%d n=%d radius=%d fields=%d "
        "iterations=%d seconds_per_exchange=%.9g best_seconds=%.9g inside_node_share=%.4f "
        "wrong_cells=%s\n",
        o.variant.c_str(), o.variant == "library" ? "library" : o.order.c_str(), size, nodes, o.n,
        o.radius, o.fields, o.iterations, slowest, best,
        all_bytes[1] > 0 ? all_bytes[0] / all_bytes[1] : -1.0,
        o.check ? std::to_string(all_wrong).c_str() : "unchecked");

  if (domain) loom_halo_destroy(&domain);
  if (graph.comm != MPI_COMM_NULL) MPI_Comm_free(&graph.comm);
  for (MPI_Datatype& t : types.send) MPI_Type_free(&t);
  for (MPI_Datatype& t : types.recv) MPI_Type_free(&t);
  owned.clear();
  MPI_Finalize();
  return all_wrong == 0 || rank != 0 ? 0 : 1;
}
