/* halo3d: an unmodified MPI program (it knows nothing of Loom) that does what 3-D stencil codes
 * do. A periodic global grid of N^3 cells, F doubles per cell stored as separate arrays
 * ([field][z][y][x]), is split over a Cartesian process grid; every iteration exchanges the
 * R-cells-wide ghost shell with all 26 neighbours (faces, edges, corners), described by
 * MPI_Type_create_subarray types, then applies a 27-point box stencil plus axial terms out to
 * distance R. At the end it prints a checksum of the whole domain that does not depend on the
 * number of ranks (an integer hash of every cell's bits and global index, summed over ranks),
 * and the time spent exchanging.
 *
 * usage: halo3d [-n N] [-i ITERATIONS] [-r RADIUS] [-f FIELDS] [-m isend|alltoallw]
 *               [-o none|graph|cart]
 *   -m isend      MPI_Irecv/MPI_Isend/MPI_Waitall with the subarray types (default)
 *   -m alltoallw  MPI_Neighbor_alltoallw on a distributed graph of the 26 neighbours
 *   -o graph      let MPI renumber the ranks (reorder=1) by the 26-neighbour graph weighted by
 *                 the bytes each neighbour receives (MPI_Dist_graph_create_adjacent); each rank
 *                 then takes the subdomain of its new number
 *   -o cart       the same through MPI_Cart_create(reorder=1) (face neighbours, unweighted)
 *   -o none       the ranks keep their numbers (default)
 * Output (rank 0):
 *   halo3d: 2 ranks (2x1x1), global 96^3 cells, 4 fields, radius 2, 20 iterations, isend, reorder
 * none checksum 0123456789abcdef time: exchange 0.012345 s (0.617 ms/iteration), compute 0.234567
 * s, total 0.250000 s */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { kDirections = 26 };

enum reorder { kReorderNone, kReorderGraph, kReorderCart };

struct config {
  int global_n, iterations, radius, fields, use_alltoallw, reorder;
};

struct domain {
  int dims[3], coords[3];
  int n[3];      /* interior cells per axis on this rank (axis 0 = z, slowest) */
  int offset[3]; /* global index of the first interior cell */
  int ext[3];    /* n + 2 * radius */
  int radius, fields;
  size_t field_stride; /* doubles per field array */
  double *u, *next;
};

static size_t at(const struct domain* d, int f, int z, int y, int x) {
  return (size_t)f * d->field_stride + ((size_t)z * d->ext[1] + (size_t)y) * d->ext[2] + (size_t)x;
}

static int parse_args(int argc, char** argv, struct config* c) {
  c->global_n = 96;
  c->iterations = 20;
  c->radius = 2;
  c->fields = 4;
  c->use_alltoallw = 0;
  c->reorder = kReorderNone;
  for (int i = 1; i < argc; i += 2) { /* options come in pairs: -x value */
    const char* value = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(argv[i], "-n") && value) {
      c->global_n = atoi(value);
    } else if (!strcmp(argv[i], "-i") && value) {
      c->iterations = atoi(value);
    } else if (!strcmp(argv[i], "-r") && value) {
      c->radius = atoi(value);
    } else if (!strcmp(argv[i], "-f") && value) {
      c->fields = atoi(value);
    } else if (!strcmp(argv[i], "-m") && value && !strcmp(value, "isend")) {
      c->use_alltoallw = 0;
    } else if (!strcmp(argv[i], "-m") && value && !strcmp(value, "alltoallw")) {
      c->use_alltoallw = 1;
    } else if (!strcmp(argv[i], "-o") && value && !strcmp(value, "none")) {
      c->reorder = kReorderNone;
    } else if (!strcmp(argv[i], "-o") && value && !strcmp(value, "graph")) {
      c->reorder = kReorderGraph;
    } else if (!strcmp(argv[i], "-o") && value && !strcmp(value, "cart")) {
      c->reorder = kReorderCart;
    } else {
      return 0;
    }
  }
  return c->global_n > 0 && c->iterations >= 0 && c->radius > 0 && c->fields > 0;
}

/* The 26 directions in lexicographic order of (dz, dy, dx); direction 25 - i is opposite to i. */
static void direction(int i, int d[3]) {
  const int k = i < 13 ? i : i + 1; /* skip (0,0,0), the 14th of 27 */
  d[0] = k / 9 - 1;
  d[1] = k / 3 % 3 - 1;
  d[2] = k % 3 - 1;
}

static MPI_Datatype region(const struct domain* d, const int start[3], const int size[3]) {
  const int sizes[4] = {d->fields, d->ext[0], d->ext[1], d->ext[2]};
  const int subsizes[4] = {d->fields, size[0], size[1], size[2]};
  const int starts[4] = {0, start[0], start[1], start[2]};
  MPI_Datatype t;
  MPI_Type_create_subarray(4, sizes, subsizes, starts, MPI_ORDER_C, MPI_DOUBLE, &t);
  MPI_Type_commit(&t);
  return t;
}

/* send[i]: the interior cells next to side i; recv[i]: the ghost cells on side i. */
static void make_types(const struct domain* d, MPI_Datatype send[], MPI_Datatype recv[]) {
  for (int i = 0; i < kDirections; ++i) {
    int dir[3], send_start[3], recv_start[3], size[3];
    direction(i, dir);
    for (int a = 0; a < 3; ++a) {
      const int r = d->radius, n = d->n[a];
      size[a] = dir[a] == 0 ? n : r;
      send_start[a] = dir[a] > 0 ? n : r;
      recv_start[a] = dir[a] < 0 ? 0 : dir[a] == 0 ? r : n + r;
    }
    send[i] = region(d, send_start, size);
    recv[i] = region(d, recv_start, size);
  }
}

static double initial_value(int f, const int g[3]) {
  return (double)((g[0] * 29 + g[1] * 13 + g[2] * 7 + f * 3) % 101) / 101.0;
}

/* One time step on the interior: reads u (ghosts filled), writes next. The summation order is
 * fixed per cell, so the result does not depend on how the grid is split over ranks. */
static void stencil(const struct domain* d) {
  const int r = d->radius, fields = d->fields;
  const double box_weight = r >= 2 ? 0.25 / 26 : 0.45 / 26;
  const double axial_weight = r >= 2 ? 0.2 / (6.0 * (r - 1)) : 0;
  for (int f = 0; f < fields; ++f)
    for (int z = r; z < r + d->n[0]; ++z)
      for (int y = r; y < r + d->n[1]; ++y)
        for (int x = r; x < r + d->n[2]; ++x) {
          double box = 0, axial = 0;
          for (int dz = -1; dz <= 1; ++dz)
            for (int dy = -1; dy <= 1; ++dy)
              for (int dx = -1; dx <= 1; ++dx)
                if (dz || dy || dx) box += d->u[at(d, f, z + dz, y + dy, x + dx)];
          for (int k = 2; k <= r; ++k)
            axial += d->u[at(d, f, z - k, y, x)] + d->u[at(d, f, z + k, y, x)] +
                     d->u[at(d, f, z, y - k, x)] + d->u[at(d, f, z, y + k, x)] +
                     d->u[at(d, f, z, y, x - k)] + d->u[at(d, f, z, y, x + k)];
          d->next[at(d, f, z, y, x)] = 0.5 * d->u[at(d, f, z, y, x)] + box_weight * box +
                                       axial_weight * axial +
                                       0.05 * d->u[at(d, (f + 1) % fields, z, y, x)];
        }
}

static uint64_t mix(uint64_t z) { /* splitmix64 finaliser */
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

/* Sum over this rank's interior cells of a hash of (global index, field, value bits): a sum, so
 * ranks can add their parts in any order and any split of the grid gives the same total. */
static uint64_t checksum(const struct domain* d, int global_n) {
  uint64_t sum = 0;
  const int r = d->radius;
  for (int f = 0; f < d->fields; ++f)
    for (int z = 0; z < d->n[0]; ++z)
      for (int y = 0; y < d->n[1]; ++y)
        for (int x = 0; x < d->n[2]; ++x) {
          const uint64_t gz = (uint64_t)(d->offset[0] + z), gy = (uint64_t)(d->offset[1] + y),
                         gx = (uint64_t)(d->offset[2] + x), n = (uint64_t)global_n;
          uint64_t bits;
          memcpy(&bits, &d->u[at(d, f, z + r, y + r, x + r)], sizeof bits);
          sum += mix(bits ^ mix((((uint64_t)f * n + gz) * n + gy) * n + gx));
        }
  return sum;
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, ranks = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  struct config c;
  if (!parse_args(argc, argv, &c)) {
    if (rank == 0)
      fprintf(stderr,
              "usage: halo3d [-n N] [-i ITERATIONS] [-r RADIUS] [-f FIELDS] "
              "[-m isend|alltoallw] [-o none|graph|cart]\n");
    MPI_Finalize();
    return 2;
  }

  struct domain d = {.radius = c.radius, .fields = c.fields};
  int periods[3] = {1, 1, 1};
  MPI_Comm cart, comm; /* comm: where the exchanges run, numbered as cart */
  MPI_Dims_create(ranks, 3, d.dims);
  MPI_Cart_create(MPI_COMM_WORLD, 3, d.dims, periods, c.reorder == kReorderCart, &cart);
  comm = cart;
  int me = 0; /* this rank's number in cart (and comm): its subdomain */
  MPI_Comm_rank(cart, &me);
  MPI_Comm graph_order = MPI_COMM_NULL;
  if (c.reorder == kReorderGraph) {
    /* The 26 neighbours weighted by the bytes each receives from this subdomain; after the
     * renumbering this rank takes the subdomain of its number in graph_order. */
    int coords[3], sources[kDirections], targets[kDirections], weights[kDirections];
    MPI_Cart_coords(cart, me, 3, coords);
    for (int i = 0; i < kDirections; ++i) {
      int dir[3], to[3], from[3], cells = c.fields;
      direction(i, dir);
      for (int a = 0; a < 3; ++a) {
        to[a] = (coords[a] + dir[a] + d.dims[a]) % d.dims[a];
        from[a] = (coords[a] - dir[a] + d.dims[a]) % d.dims[a];
        cells *= dir[a] ? c.radius : c.global_n / d.dims[a];
      }
      MPI_Cart_rank(cart, to, &targets[i]);
      MPI_Cart_rank(cart, from, &sources[i]);
      weights[i] = cells * (int)sizeof(double);
    }
    MPI_Dist_graph_create_adjacent(cart, kDirections, sources, weights, kDirections, targets,
                                   weights, MPI_INFO_NULL, 1, &graph_order);
    MPI_Comm_rank(graph_order, &me);
    comm = graph_order;
  }
  MPI_Cart_coords(cart, me, 3, d.coords);
  int too_small = 0;
  for (int a = 0; a < 3; ++a) {
    const int base = c.global_n / d.dims[a], extra = c.global_n % d.dims[a];
    d.n[a] = base + (d.coords[a] < extra);
    d.offset[a] = d.coords[a] * base + (d.coords[a] < extra ? d.coords[a] : extra);
    d.ext[a] = d.n[a] + 2 * c.radius;
    too_small |= d.n[a] < c.radius;
  }
  if (too_small) {
    if (rank == 0)
      fprintf(stderr, "halo3d: %d^3 cells over %dx%dx%d ranks leaves fewer than %d cells a side\n",
              c.global_n, d.dims[0], d.dims[1], d.dims[2], c.radius);
    MPI_Finalize();
    return 2;
  }
  d.field_stride = (size_t)d.ext[0] * d.ext[1] * d.ext[2];
  d.u = calloc(d.field_stride * c.fields, sizeof(double));
  d.next = calloc(d.field_stride * c.fields, sizeof(double));
  if (!d.u || !d.next) {
    fprintf(stderr, "halo3d: out of memory\n");
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  for (int f = 0; f < c.fields; ++f)
    for (int z = 0; z < d.n[0]; ++z)
      for (int y = 0; y < d.n[1]; ++y)
        for (int x = 0; x < d.n[2]; ++x) {
          const int g[3] = {d.offset[0] + z, d.offset[1] + y, d.offset[2] + x};
          d.u[at(&d, f, z + c.radius, y + c.radius, x + c.radius)] = initial_value(f, g);
        }

  MPI_Datatype send[kDirections], recv[kDirections];
  make_types(&d, send, recv);
  int neighbour[kDirections];
  for (int i = 0; i < kDirections; ++i) {
    int dir[3], at_coords[3];
    direction(i, dir);
    for (int a = 0; a < 3; ++a) at_coords[a] = (d.coords[a] + dir[a] + d.dims[a]) % d.dims[a];
    MPI_Cart_rank(cart, at_coords, &neighbour[i]);
  }
  /* Neighbour collective: destination i is the neighbour at direction i, source i the one at the
   * opposite direction (receiving into the ghost region on that side), so that when a rank
   * appears several times the k-th message between two ranks pairs matching regions. */
  MPI_Comm graph = MPI_COMM_NULL;
  int sources[kDirections], counts[kDirections];
  MPI_Aint displacements[kDirections];
  MPI_Datatype recv_opposite[kDirections];
  for (int i = 0; i < kDirections; ++i) {
    sources[i] = neighbour[kDirections - 1 - i];
    recv_opposite[i] = recv[kDirections - 1 - i];
    counts[i] = 1;
    displacements[i] = 0;
  }
  if (c.use_alltoallw)
    MPI_Dist_graph_create_adjacent(comm, kDirections, sources, MPI_UNWEIGHTED, kDirections,
                                   neighbour, MPI_UNWEIGHTED, MPI_INFO_NULL, 0, &graph);

  double exchange_seconds = 0, compute_seconds = 0;
  MPI_Barrier(MPI_COMM_WORLD);
  const double start = MPI_Wtime();
  for (int it = 0; it < c.iterations; ++it) {
    const double t0 = MPI_Wtime();
    if (c.use_alltoallw) {
      MPI_Neighbor_alltoallw(d.u, counts, displacements, send, d.u, counts, displacements,
                             recv_opposite, graph);
    } else {
      MPI_Request requests[2 * kDirections];
      for (int i = 0; i < kDirections; ++i) /* the neighbour at i sent toward us: tag 25 - i */
        MPI_Irecv(d.u, 1, recv[i], neighbour[i], kDirections - 1 - i, comm, &requests[i]);
      for (int i = 0; i < kDirections; ++i)
        MPI_Isend(d.u, 1, send[i], neighbour[i], i, comm, &requests[kDirections + i]);
      MPI_Waitall(2 * kDirections, requests, MPI_STATUSES_IGNORE);
    }
    const double t1 = MPI_Wtime();
    stencil(&d);
    double* swap = d.u;
    d.u = d.next;
    d.next = swap;
    exchange_seconds += t1 - t0;
    compute_seconds += MPI_Wtime() - t1;
  }
  const double total_seconds = MPI_Wtime() - start;

  const uint64_t local_sum = checksum(&d, c.global_n);
  uint64_t global_sum = 0;
  double local_times[3] = {exchange_seconds, compute_seconds, total_seconds}, times[3];
  MPI_Reduce(&local_sum, &global_sum, 1, MPI_UINT64_T, MPI_SUM, 0, MPI_COMM_WORLD);
  MPI_Reduce(local_times, times, 3, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
  if (rank == 0) {
    printf(
        "halo3d: %d ranks (%dx%dx%d), global %d^3 cells, %d fields, radius %d, %d iterations, "
        "%s, reorder %s\n",
        ranks, d.dims[0], d.dims[1], d.dims[2], c.global_n, c.fields, c.radius, c.iterations,
        c.use_alltoallw ? "alltoallw" : "isend",
        c.reorder == kReorderGraph  ? "graph"
        : c.reorder == kReorderCart ? "cart"
                                    : "none");
    printf("checksum %016llx\n", (unsigned long long)global_sum);
    printf("time: exchange %.6f s (%.3f ms/iteration), compute %.6f s, total %.6f s\n", times[0],
           c.iterations ? 1e3 * times[0] / c.iterations : 0.0, times[1], times[2]);
  }

  for (int i = 0; i < kDirections; ++i) {
    MPI_Type_free(&send[i]);
    MPI_Type_free(&recv[i]);
  }
  if (graph != MPI_COMM_NULL) MPI_Comm_free(&graph);
  if (graph_order != MPI_COMM_NULL) MPI_Comm_free(&graph_order);
  MPI_Comm_free(&cart);
  free(d.u);
  free(d.next);
  MPI_Finalize();
  return 0;
}
