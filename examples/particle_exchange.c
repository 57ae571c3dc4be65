/* A particle code's exchange, as molecular-dynamics codes write it: every step the atoms that
 * left the subdomain are new, so the send type is rebuilt with new displacements (a struct of six
 * indexed-block types over position, velocity, force, charge, type and mass, at absolute
 * addresses, sent from MPI_BOTTOM), committed, used for a few round trips and freed; the receive
 * side is a struct of contiguous types. Rank 0 prints the time per step (type built, round trips,
 * types freed) and a checksum that must be the same natively and under Loom.
 *
 *   mpiexec -n 2 particle_exchange [atoms per exchange (700)] [steps (20)] [round trips (20)]
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static double* doubles(int count) {
  double* p = malloc(sizeof(double) * (size_t)count);
  if (!p) MPI_Abort(MPI_COMM_WORLD, 1);
  return p;
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const int n = argc > 1 ? atoi(argv[1]) : 700;
  const int steps = argc > 2 ? atoi(argv[2]) : 20;
  const int trips = argc > 3 ? atoi(argv[3]) : 20;
  if (size < 2 || n <= 0 || steps <= 0 || trips <= 0) {
    if (rank == 0)
      fprintf(stderr, "usage: mpiexec -n 2 particle_exchange [atoms] [steps] [trips]\n");
    MPI_Finalize();
    return 2;
  }
  const int atoms = 4 * n; /* a quarter of them leave per step */
  double *x = doubles(3 * atoms), *v = doubles(3 * atoms), *f = doubles(3 * atoms);
  double *q = doubles(atoms), *t = doubles(atoms), *m = doubles(atoms);
  double *rx = doubles(3 * n), *rv = doubles(3 * n), *rf = doubles(3 * n);
  double *rq = doubles(n), *rt = doubles(n), *rm = doubles(n);
  for (int i = 0; i < 3 * atoms; ++i) x[i] = i + rank, v[i] = -i, f[i] = 0.5 * i;
  for (int i = 0; i < atoms; ++i) q[i] = i, t[i] = 2 * i, m[i] = 3 * i;
  int* d1 = malloc(sizeof(int) * (size_t)n);
  int* d3 = malloc(sizeof(int) * (size_t)n);
  if (!d1 || !d3) MPI_Abort(MPI_COMM_WORLD, 1);
  unsigned seed = 12345;
  double checksum = 0;
  const int lengths[6] = {1, 1, 1, 1, 1, 1};
  MPI_Barrier(MPI_COMM_WORLD);
  const double start = MPI_Wtime();
  for (int s = 0; s < steps; ++s) {
    /* The atoms that leave: n distinct indices, new every step. */
    int found = 0;
    for (int i = 0; i < atoms && found < n; ++i) {
      seed = seed * 1103515245u + 12345u;
      if ((seed >> 16) % 4 == 0 || atoms - i == n - found) {
        d1[found] = i;
        d3[found] = 3 * i;
        ++found;
      }
    }
    MPI_Datatype ib1, ib3, c1, c3, send, recv;
    MPI_Type_create_indexed_block(n, 1, d1, MPI_DOUBLE, &ib1);
    MPI_Type_create_indexed_block(n, 3, d3, MPI_DOUBLE, &ib3);
    const MPI_Datatype members[6] = {ib3, ib3, ib3, ib1, ib1, ib1};
    MPI_Aint at[6];
    MPI_Get_address(x, &at[0]), MPI_Get_address(v, &at[1]), MPI_Get_address(f, &at[2]);
    MPI_Get_address(q, &at[3]), MPI_Get_address(t, &at[4]), MPI_Get_address(m, &at[5]);
    MPI_Type_create_struct(6, lengths, at, members, &send);
    MPI_Type_commit(&send);
    MPI_Type_free(&ib1);
    MPI_Type_free(&ib3);
    MPI_Type_contiguous(n, MPI_DOUBLE, &c1);
    MPI_Type_contiguous(3 * n, MPI_DOUBLE, &c3);
    const MPI_Datatype parts[6] = {c3, c3, c3, c1, c1, c1};
    MPI_Get_address(rx, &at[0]), MPI_Get_address(rv, &at[1]), MPI_Get_address(rf, &at[2]);
    MPI_Get_address(rq, &at[3]), MPI_Get_address(rt, &at[4]), MPI_Get_address(rm, &at[5]);
    MPI_Type_create_struct(6, lengths, at, parts, &recv);
    MPI_Type_commit(&recv);
    MPI_Type_free(&c1);
    MPI_Type_free(&c3);
    for (int r = 0; r < trips; ++r) {
      if (rank == 0) {
        MPI_Send(MPI_BOTTOM, 1, send, 1, 0, MPI_COMM_WORLD);
        MPI_Recv(MPI_BOTTOM, 1, recv, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      } else if (rank == 1) {
        MPI_Recv(MPI_BOTTOM, 1, recv, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Send(MPI_BOTTOM, 1, send, 0, 0, MPI_COMM_WORLD);
      }
    }
    for (int i = 0; i < n; ++i)
      checksum += rx[3 * i] + rv[3 * i + 1] + rf[3 * i + 2] + rq[i] + rt[i] + rm[i];
    MPI_Type_free(&send);
    MPI_Type_free(&recv);
  }
  const double elapsed = MPI_Wtime() - start;
  double slowest = 0;
  MPI_Reduce(&elapsed, &slowest, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
  if (rank == 0)
    printf("atoms %d, steps %d, round trips %d: %.3f ms per step; checksum %.17g\n", n, steps,
           trips, 1e3 * slowest / steps, checksum);
  free(x), free(v), free(f), free(q), free(t), free(m);
  free(rx), free(rv), free(rf), free(rq), free(rt), free(rm);
  free(d1), free(d3);
  MPI_Finalize();
  return 0;
}
