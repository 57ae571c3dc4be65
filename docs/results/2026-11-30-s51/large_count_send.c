// A type built by an MPI-4 large-count constructor, sent with the classic MPI_Send: runs
// natively on MPICH 4; under 4177bab's libloom.so it aborted (large_count_send.txt).
// mpicc.mpich large_count_send.c -o large_count_send; mpiexec.mpich -n 2 -env LD_PRELOAD
// build/mpich/interpose/libloom.so ./large_count_send
#include <mpi.h>
#include <stdio.h>
int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Datatype vc;
  MPI_Type_vector_c(1024, 1, 2, MPI_INT, &vc);
  MPI_Type_commit(&vc);
  static int buf[2048];
  for (int i = 0; i < 2048; ++i) buf[i] = rank ? 0 : i;
  for (int it = 0; it < 5; ++it) {
    if (rank == 0)
      MPI_Send(buf, 1, vc, 1, 1, MPI_COMM_WORLD);
    else
      MPI_Recv(buf, 1, vc, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  }
  if (rank == 1) {
    int ok = 1;
    for (int i = 0; i < 2048; i += 2) ok &= buf[i] == i;
    printf("ok %d\n", ok);
  }
  MPI_Type_free(&vc);
  MPI_Finalize();
}
