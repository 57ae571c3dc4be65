/* The plain-MPI twin of jacobi_halo.c: the same 3-D heat equation (7-point stencil, periodic,
 * the same grid, initial values, update and checksum) with the exchange written by hand, as
 * applications do without a library: a periodic Cartesian communicator, one ghost layer, six
 * subarray types each way and MPI_Irecv/MPI_Isend/MPI_Waitall. No Loom headers (the problem
 * itself, shared with jacobi_halo.c, is jacobi_problem.h). Its checksum
 * must equal jacobi_halo's on any number of ranks (tests/halo compares them).
 *
 *   mpiexec -n 4 jacobi_mpi [edge] [steps]      (default 40 cells, 30 steps) */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jacobi_problem.h"

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const int64_t edge = argc > 1 ? atoll(argv[1]) : 40;
  const int steps = argc > 2 ? atoi(argv[2]) : 30;
  const int64_t global[3] = {edge + 1, edge - 3, edge}; /* x, y, z */

  /* Cartesian dimension 0 is z (slowest in memory), 2 is x. */
  int dims[3] = {0, 0, 0}, periods[3] = {1, 1, 1}, coords[3];
  MPI_Dims_create(size, 3, dims);
  MPI_Comm cart;
  MPI_Cart_create(MPI_COMM_WORLD, 3, dims, periods, 0, &cart);
  MPI_Comm_rank(cart, &rank);
  MPI_Cart_coords(cart, rank, 3, coords);
  int64_t origin[3], n[3]; /* x, y, z; blocks, the remainder spread over the first ones */
  for (int a = 0; a < 3; ++a) {
    const int p = dims[2 - a], c = coords[2 - a];
    const int64_t g = global[a], base = g / p, extra = g % p;
    n[a] = base + (c < extra);
    origin[a] = c * base + (c < extra ? c : extra);
  }
  const int64_t ex = n[0] + 2, ey = n[1] + 2, ez = n[2] + 2; /* with one ghost layer */
  double* u = calloc((size_t)(ex * ey * ez), sizeof(double));
  double* v = calloc((size_t)(ex * ey * ez), sizeof(double));
#define AT(a, x, y, z) a[(((z) + 1) * ey + (y) + 1) * ex + (x) + 1]

  /* Face f = 2 * axis + side (side 0: low, 1: high): the interior slab sent that way and the
   * ghost slab received from it, as subarrays of the (z, y, x) array. */
  MPI_Datatype send[6], recv[6];
  int neighbour[6];
  for (int axis = 0; axis < 3; ++axis) { /* x, y, z */
    const int cart_dim = 2 - axis;
    MPI_Cart_shift(cart, cart_dim, 1, &neighbour[2 * axis], &neighbour[2 * axis + 1]);
    for (int side = 0; side < 2; ++side) {
      const int sizes[3] = {(int)ez, (int)ey, (int)ex};
      int sub[3] = {(int)n[2], (int)n[1], (int)n[0]}, from[3] = {1, 1, 1}, to[3] = {1, 1, 1};
      sub[cart_dim] = 1;
      from[cart_dim] = side == 0 ? 1 : (int)n[axis];
      to[cart_dim] = side == 0 ? 0 : (int)n[axis] + 1;
      MPI_Type_create_subarray(3, sizes, sub, from, MPI_ORDER_C, MPI_DOUBLE,
                               &send[2 * axis + side]);
      MPI_Type_create_subarray(3, sizes, sub, to, MPI_ORDER_C, MPI_DOUBLE, &recv[2 * axis + side]);
      MPI_Type_commit(&send[2 * axis + side]);
      MPI_Type_commit(&recv[2 * axis + side]);
    }
  }
  for (int64_t z = 0; z < n[2]; ++z)
    for (int64_t y = 0; y < n[1]; ++y)
      for (int64_t x = 0; x < n[0]; ++x)
        AT(u, x, y, z) = initial(origin[0] + x, origin[1] + y, origin[2] + z);

  double seconds = -MPI_Wtime();
  for (int s = 0; s < steps; ++s) {
    MPI_Request requests[12];
    /* The ghost on side f comes from the neighbour there, which sent it toward the opposite
     * side: tag = the sender's face. */
    for (int f = 0; f < 6; ++f) MPI_Irecv(u, 1, recv[f], neighbour[f], f ^ 1, cart, &requests[f]);
    for (int f = 0; f < 6; ++f) MPI_Isend(u, 1, send[f], neighbour[f], f, cart, &requests[6 + f]);
    MPI_Waitall(12, requests, MPI_STATUSES_IGNORE);
    for (int64_t z = 0; z < n[2]; ++z)
      for (int64_t y = 0; y < n[1]; ++y)
        for (int64_t x = 0; x < n[0]; ++x)
          AT(v, x, y, z) =
              update(AT(u, x, y, z), AT(u, x - 1, y, z), AT(u, x + 1, y, z), AT(u, x, y - 1, z),
                     AT(u, x, y + 1, z), AT(u, x, y, z - 1), AT(u, x, y, z + 1));
    double* t = u;
    u = v;
    v = t;
  }
  seconds += MPI_Wtime();

  uint64_t sum = 0;
  for (int64_t z = 0; z < n[2]; ++z)
    for (int64_t y = 0; y < n[1]; ++y)
      for (int64_t x = 0; x < n[0]; ++x)
        sum += cell_hash(AT(u, x, y, z),
                         ((origin[2] + z) * global[1] + origin[1] + y) * global[0] + origin[0] + x);
#undef AT
  MPI_Allreduce(MPI_IN_PLACE, &sum, 1, MPI_UINT64_T, MPI_SUM, cart);
  if (rank == 0) {
    printf("jacobi_mpi: %d ranks, %lldx%lldx%lld cells, %d steps, %.3f ms per step\n", size,
           (long long)global[0], (long long)global[1], (long long)global[2], steps,
           1e3 * seconds / steps);
    printf("checksum %016llx (plain MPI)\n", (unsigned long long)sum);
  }
  for (int f = 0; f < 6; ++f) {
    MPI_Type_free(&send[f]);
    MPI_Type_free(&recv[f]);
  }
  MPI_Comm_free(&cart);
  free(u);
  free(v);
  MPI_Finalize();
  return 0;
}
