/* Per-call time of collectives of one MPI_INT per peer (plain types, as an
   application loops them), 2 ranks: rank 0's us per call, median of 7 rounds of
   argv[1] calls each. The rooted calls' non-root ranks pass null arrays where
   they may. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cmp(const void* a, const void* b) {
  const double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const int calls = argc > 1 ? atoi(argv[1]) : 20000;
  int send[64], recv[64], counts[64], displs[64];
  for (int i = 0; i < size; ++i) {
    send[i] = rank;
    counts[i] = 1;
    displs[i] = i;
  }
  MPI_Comm line;
  int dims[1] = {size}, periods[1] = {0};
  MPI_Cart_create(MPI_COMM_WORLD, 1, dims, periods, 0, &line);
  const char* names[] = {"alltoall", "alltoallv", "allgather", "allgatherv", "gather",
                         "gatherv",  "scatter",   "scatterv",  "bcast",      "neighbor_alltoall"};
  const int n = sizeof names / sizeof names[0];
  const int root = rank == 0;
  for (int k = 0; k < n; ++k) {
    double t[7];
    for (int round = 0; round < 7; ++round) {
      MPI_Barrier(MPI_COMM_WORLD);
      const double start = MPI_Wtime();
      for (int c = 0; c < calls; ++c) switch (k) {
          case 0:
            MPI_Alltoall(send, 1, MPI_INT, recv, 1, MPI_INT, MPI_COMM_WORLD);
            break;
          case 1:
            MPI_Alltoallv(send, counts, displs, MPI_INT, recv, counts, displs, MPI_INT,
                          MPI_COMM_WORLD);
            break;
          case 2:
            MPI_Allgather(send, 1, MPI_INT, recv, 1, MPI_INT, MPI_COMM_WORLD);
            break;
          case 3:
            MPI_Allgatherv(send, 1, MPI_INT, recv, counts, displs, MPI_INT, MPI_COMM_WORLD);
            break;
          case 4:
            MPI_Gather(send, 1, MPI_INT, recv, 1, MPI_INT, 0, MPI_COMM_WORLD);
            break;
          case 5:
            MPI_Gatherv(send, 1, MPI_INT, recv, root ? counts : NULL, root ? displs : NULL, MPI_INT,
                        0, MPI_COMM_WORLD);
            break;
          case 6:
            MPI_Scatter(send, 1, MPI_INT, recv, 1, MPI_INT, 0, MPI_COMM_WORLD);
            break;
          case 7:
            MPI_Scatterv(send, root ? counts : NULL, root ? displs : NULL, MPI_INT, recv, 1,
                         MPI_INT, 0, MPI_COMM_WORLD);
            break;
          case 8:
            MPI_Bcast(send, 1, MPI_INT, 0, MPI_COMM_WORLD);
            break;
          case 9:
            MPI_Neighbor_alltoall(send, 1, MPI_INT, recv, 1, MPI_INT, line);
            break;
        }
      t[round] = (MPI_Wtime() - start) / calls * 1e6;
    }
    qsort(t, 7, sizeof(double), cmp);
    if (rank == 0) printf("%s %.3f\n", names[k], t[3]);
  }
  MPI_Comm_free(&line);
  MPI_Finalize();
  return 0;
}
