#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
// MPI_Alltoall of a vector type (blocks of bl doubles, stride 2*bl), nb blocks per peer.
int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int nb = atoi(argv[1]), bl = atoi(argv[2]), it = atoi(argv[3]);
  MPI_Datatype v, t;
  MPI_Type_vector(nb, bl, 2 * bl, MPI_DOUBLE, &v);
  MPI_Type_create_resized(v, 0, (MPI_Aint)nb * 2 * bl * sizeof(double), &t);
  MPI_Type_commit(&t);
  size_t n = (size_t)nb * 2 * bl * size;
  double* a = calloc(n, sizeof(double));
  double* b = calloc(n, sizeof(double));
  double best = 1e9;
  for (int r = 0; r < 5; ++r) {
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (int i = 0; i < it; ++i) MPI_Alltoall(a, 1, t, b, 1, t, MPI_COMM_WORLD);
    double dt = (MPI_Wtime() - t0) / it * 1e6;
    if (dt < best) best = dt;
  }
  if (rank == 0) printf("%.1f\n", best);
  MPI_Finalize();
}
