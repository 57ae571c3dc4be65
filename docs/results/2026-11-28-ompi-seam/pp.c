#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
// ping-pong of one derived type: argv: blocks blocklen(doubles) stride(doubles) iters reps
int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  int nb = atoi(argv[1]), bl = atoi(argv[2]), st = atoi(argv[3]), it = atoi(argv[4]),
      reps = atoi(argv[5]);
  double* buf = calloc((size_t)nb * st + bl, sizeof(double));
  MPI_Datatype t;
  MPI_Type_vector(nb, bl, st, MPI_DOUBLE, &t);
  MPI_Type_commit(&t);
  double best = 1e9;
  for (int r = 0; r < reps; ++r) {
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (int i = 0; i < it; ++i) {
      if (rank == 0) {
        MPI_Send(buf, 1, t, 1, 0, MPI_COMM_WORLD);
        MPI_Recv(buf, 1, t, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      } else {
        MPI_Recv(buf, 1, t, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Send(buf, 1, t, 0, 0, MPI_COMM_WORLD);
      }
    }
    double dt = (MPI_Wtime() - t0) / it / 2 * 1e6;
    if (dt < best) best = dt;
  }
  if (rank == 0) printf("%.4f\n", best);
  MPI_Type_free(&t);
  free(buf);
  MPI_Finalize();
}
