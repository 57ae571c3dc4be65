/* Plain ping-pong of a 16 KiB grid face (a subarray of doubles), printing each round trip:
   MPICH 4.0 runs its first 15-16 messages at about 40 us, then 12-15 us (docs/model.md,
   "MPICH's typed path warms up"). mpicc -O2 typed_warmup.c; mpiexec -n 2 ./a.out 80 [n]:
   n doubles per face (default 2048: 16 KiB). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  int n = argc > 2 ? atoi(argv[2]) : 2048, iters = atoi(argv[1]);
  MPI_Datatype t;
  int sizes[3] = {n / 64, 64, 8}, sub[3] = {n / 64, 64, 1}, st[3] = {0, 0, 1};
  MPI_Type_create_subarray(3, sizes, sub, st, MPI_ORDER_C, MPI_DOUBLE, &t);
  MPI_Type_commit(&t);
  double* a = calloc(8 * n, 8);
  double* b = calloc(8 * n, 8);
  double* dt = calloc(iters, 8);
  int peer = 1 - rank;
  for (int i = 0; i < iters; ++i) {
    double t0 = MPI_Wtime();
    if (rank == 0) {
      MPI_Send(a, 1, t, peer, 0, MPI_COMM_WORLD);
      MPI_Recv(b, 1, t, peer, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else {
      MPI_Recv(b, 1, t, peer, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      MPI_Send(a, 1, t, peer, 0, MPI_COMM_WORLD);
    }
    dt[i] = MPI_Wtime() - t0;
  }
  if (rank == 0)
    for (int i = 0; i < iters; ++i) printf("%d %.1f\n", i, dt[i] * 1e6);
  MPI_Finalize();
}
