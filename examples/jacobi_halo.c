/* Jacobi iteration of the 3-D heat equation (7-point stencil, periodic) on Loom's halo library
 * (include/loom/halo.h), with the interior computed while the ghosts move (split-phase
 * exchange). Rank 0 also runs the same computation alone on the whole grid, with plain arrays
 * and no communication, and the program prints both checksums and exits 1 if they differ: the
 * library must give bit-identical results on any number of ranks.
 *
 *   mpiexec -n 4 jacobi_halo [edge] [steps]      (default 40 cells, 30 steps)
 *
 * The grid is (edge+1) x (edge-3) x edge cells, so no two extents are equal. */
#include <loom/halo.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jacobi_problem.h"

static int check(int rc, const char* what) {
  if (rc != LOOM_HALO_SUCCESS) {
    fprintf(stderr, "%s: %s: %s\n", what, loom_halo_error_string(rc), loom_halo_error_message());
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  return rc;
}

/* The whole grid in one process: periodic indexing, no ghosts. */
static uint64_t serial_checksum(const int64_t g[3], int steps) {
  const int64_t cells = g[0] * g[1] * g[2];
  double* u = malloc((size_t)cells * sizeof(double));
  double* v = malloc((size_t)cells * sizeof(double));
#define AT(a, x, y, z) \
  a[(((z) + g[2]) % g[2] * g[1] + ((y) + g[1]) % g[1]) * g[0] + ((x) + g[0]) % g[0]]
  for (int64_t z = 0; z < g[2]; ++z)
    for (int64_t y = 0; y < g[1]; ++y)
      for (int64_t x = 0; x < g[0]; ++x) AT(u, x, y, z) = initial(x, y, z);
  for (int s = 0; s < steps; ++s) {
    for (int64_t z = 0; z < g[2]; ++z)
      for (int64_t y = 0; y < g[1]; ++y)
        for (int64_t x = 0; x < g[0]; ++x)
          AT(v, x, y, z) =
              update(AT(u, x, y, z), AT(u, x - 1, y, z), AT(u, x + 1, y, z), AT(u, x, y - 1, z),
                     AT(u, x, y + 1, z), AT(u, x, y, z - 1), AT(u, x, y, z + 1));
    double* t = u;
    u = v;
    v = t;
  }
  uint64_t sum = 0;
  for (int64_t z = 0; z < g[2]; ++z)
    for (int64_t y = 0; y < g[1]; ++y)
      for (int64_t x = 0; x < g[0]; ++x)
        sum += cell_hash(AT(u, x, y, z), (z * g[1] + y) * g[0] + x);
#undef AT
  free(u);
  free(v);
  return sum;
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const int64_t edge = argc > 1 ? atoll(argv[1]) : 40;
  const int steps = argc > 2 ? atoi(argv[2]) : 30;
  const int64_t global[3] = {edge + 1, edge - 3, edge};
  const int radius[6] = {1, 1, 1, 1, 1, 1};
  const int periodic[3] = {1, 1, 1};

  loom_halo_domain d = NULL;
  int field = 0;
  check(loom_halo_create(MPI_COMM_WORLD, global, radius, periodic, LOOM_HALO_STAR, 0, &d),
        "loom_halo_create");
  check(loom_halo_add_field_type(d, MPI_DOUBLE, &field), "loom_halo_add_field_type");
  check(loom_halo_realize(d), "loom_halo_realize");
  int64_t origin[3], n[3], stride[3];
  void* base = NULL;
  check(loom_halo_origin(d, origin), "loom_halo_origin");
  check(loom_halo_extent(d, n), "loom_halo_extent");
  check(loom_halo_field(d, field, &base, stride), "loom_halo_field");
  const int64_t sx = stride[0] / 8, sy = stride[1] / 8, sz = stride[2] / 8;
  double* u = base;
#define U(x, y, z) u[(x)*sx + (y)*sy + (z)*sz]
  double* next = malloc((size_t)(n[0] * n[1] * n[2]) * sizeof(double));
#define NEXT(x, y, z) next[((z)*n[1] + (y)) * n[0] + (x)]
#define STEP(x, y, z)                                                                  \
  NEXT(x, y, z) = update(U(x, y, z), U((x)-1, y, z), U((x) + 1, y, z), U(x, (y)-1, z), \
                         U(x, (y) + 1, z), U(x, y, (z)-1), U(x, y, (z) + 1))
  for (int64_t z = 0; z < n[2]; ++z)
    for (int64_t y = 0; y < n[1]; ++y)
      for (int64_t x = 0; x < n[0]; ++x)
        U(x, y, z) = initial(origin[0] + x, origin[1] + y, origin[2] + z);

  double seconds = -MPI_Wtime();
  for (int s = 0; s < steps; ++s) {
    check(loom_halo_start(d), "loom_halo_start");
    /* Cells that read no ghost, while the ghosts move. */
    for (int64_t z = 1; z < n[2] - 1; ++z)
      for (int64_t y = 1; y < n[1] - 1; ++y)
        for (int64_t x = 1; x < n[0] - 1; ++x) STEP(x, y, z);
    check(loom_halo_finish(d), "loom_halo_finish");
    /* The shell of cells next to the ghosts. */
    for (int64_t z = 0; z < n[2]; ++z)
      for (int64_t y = 0; y < n[1]; ++y)
        for (int64_t x = 0; x < n[0]; ++x) {
          const int shell =
              x == 0 || y == 0 || z == 0 || x == n[0] - 1 || y == n[1] - 1 || z == n[2] - 1;
          if (shell) STEP(x, y, z);
        }
    for (int64_t z = 0; z < n[2]; ++z)
      for (int64_t y = 0; y < n[1]; ++y)
        for (int64_t x = 0; x < n[0]; ++x) U(x, y, z) = NEXT(x, y, z);
  }
  seconds += MPI_Wtime();

  uint64_t sum = 0;
  for (int64_t z = 0; z < n[2]; ++z)
    for (int64_t y = 0; y < n[1]; ++y)
      for (int64_t x = 0; x < n[0]; ++x)
        sum += cell_hash(U(x, y, z),
                         ((origin[2] + z) * global[1] + origin[1] + y) * global[0] + origin[0] + x);
  MPI_Allreduce(MPI_IN_PLACE, &sum, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
  int failed = 0;
  if (rank == 0) {
    const uint64_t reference = serial_checksum(global, steps);
    printf("jacobi_halo: %d ranks, %lldx%lldx%lld cells, %d steps, %.3f ms per step\n", size,
           (long long)global[0], (long long)global[1], (long long)global[2], steps,
           1e3 * seconds / steps);
    printf("checksum %016llx (library) %016llx (one process) %s\n", (unsigned long long)sum,
           (unsigned long long)reference, sum == reference ? "equal" : "DIFFER");
    failed = sum != reference;
  }
  MPI_Bcast(&failed, 1, MPI_INT, 0, MPI_COMM_WORLD);
  free(next);
  loom_halo_destroy(&d);
  MPI_Finalize();
  return failed;
}
