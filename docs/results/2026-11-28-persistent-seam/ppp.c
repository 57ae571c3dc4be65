#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
// Persistent ping-pong of one derived type (MPI_Send_init/MPI_Recv_init, MPI_Start, MPI_Wait);
// argv: blocks blocklen(doubles) stride(doubles) iters reps; prints the best one-way us.
int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  int nb = atoi(argv[1]), bl = atoi(argv[2]), st = atoi(argv[3]), it = atoi(argv[4]),
      reps = atoi(argv[5]);
  double* out = calloc((size_t)nb * st + bl, sizeof(double));
  double* in = calloc((size_t)nb * st + bl, sizeof(double));
  MPI_Datatype t;
  MPI_Type_vector(nb, bl, st, MPI_DOUBLE, &t);
  MPI_Type_commit(&t);
  const int peer = 1 - rank;
  MPI_Request send, recv;
  MPI_Send_init(out, 1, t, peer, 0, MPI_COMM_WORLD, &send);
  MPI_Recv_init(in, 1, t, peer, 0, MPI_COMM_WORLD, &recv);
  double best = 1e9;
  for (int r = 0; r < reps; ++r) {
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (int i = 0; i < it; ++i) {
      if (rank == 0) {
        MPI_Start(&send);
        MPI_Wait(&send, MPI_STATUS_IGNORE);
        MPI_Start(&recv);
        MPI_Wait(&recv, MPI_STATUS_IGNORE);
      } else {
        MPI_Start(&recv);
        MPI_Wait(&recv, MPI_STATUS_IGNORE);
        MPI_Start(&send);
        MPI_Wait(&send, MPI_STATUS_IGNORE);
      }
    }
    double dt = (MPI_Wtime() - t0) / it / 2 * 1e6;
    if (dt < best) best = dt;
  }
  if (rank == 0) printf("%.3f\n", best);
  MPI_Request_free(&send);
  MPI_Request_free(&recv);
  MPI_Type_free(&t);
  free(out);
  free(in);
  MPI_Finalize();
}
