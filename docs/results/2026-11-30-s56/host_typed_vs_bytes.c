/* The host's own per-call time (PMPI_ only, no Loom) of MPI_Alltoall, MPI_Allgather and
   MPI_Neighbor_alltoall of one tiny vector element per peer (a vector of `ints` ints, one every
   two, resized to twice its span), against the same bytes as MPI_BYTE, and against those bytes
   packed and unpacked by the host's MPI_Pack/MPI_Unpack around the call: what a byte exchange
   can save over the host's typed one. Rank 0 prints the median of 7 alternate rounds of argv[2]
   calls: "<call> <ints> <typed us> <bytes us> <bytes+host pack us>". */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static int cmp(const void* a, const void* b) {
  const double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int size, rank;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  const int ints = argc > 1 ? atoi(argv[1]) : 1;
  const int calls = argc > 2 ? atoi(argv[2]) : 5000;
  MPI_Datatype strided, element;
  MPI_Type_vector(ints, 1, 2, MPI_INT, &strided);
  MPI_Type_create_resized(strided, 0, (MPI_Aint)(2 * ints * sizeof(int)), &element);
  MPI_Type_commit(&element);
  MPI_Type_free(&strided);
  const int bytes = 4 * ints;
  int* send = calloc((size_t)(2 * ints * size), sizeof(int));
  int* recv = calloc((size_t)(2 * ints * size), sizeof(int));
  char* send_bytes = calloc((size_t)(bytes * size), 1);
  char* recv_bytes = calloc((size_t)(bytes * size), 1);
  const int peer = (rank + 1) % size, weight = 1;
  MPI_Comm graph;
  MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 1, &peer, &weight, 1, &peer, &weight,
                                 MPI_INFO_NULL, 0, &graph);
  const char* names[] = {"alltoall", "allgather", "neighbor_alltoall"};
  for (int k = 0; k < 3; ++k) {
    double t[3][7];
    for (int round = 0; round < 7; ++round)
      for (int m = 0; m < 3; ++m) {
        const void* s = m ? (void*)send_bytes : (void*)send;
        void* r = m ? (void*)recv_bytes : (void*)recv;
        const MPI_Datatype type = m ? MPI_BYTE : element;
        const int n = m ? bytes : 1;
        PMPI_Barrier(MPI_COMM_WORLD);
        const double start = PMPI_Wtime();
        for (int c = 0; c < calls; ++c) {
          for (int p = 0; m == 2 && p < size; ++p) {
            int position = 0;
            PMPI_Pack(send + p * 2 * ints, 1, element, send_bytes + p * bytes, bytes, &position,
                      MPI_COMM_WORLD);
          }
          if (k == 0)
            PMPI_Alltoall(s, n, type, r, n, type, MPI_COMM_WORLD);
          else if (k == 1)
            PMPI_Allgather(s, n, type, r, n, type, MPI_COMM_WORLD);
          else
            PMPI_Neighbor_alltoall(s, n, type, r, n, type, graph);
          for (int p = 0; m == 2 && p < size; ++p) {
            int position = 0;
            PMPI_Unpack(recv_bytes + p * bytes, bytes, &position, recv + p * 2 * ints, 1, element,
                        MPI_COMM_WORLD);
          }
        }
        t[m][round] = (PMPI_Wtime() - start) / calls * 1e6;
      }
    for (int m = 0; m < 3; ++m) qsort(t[m], 7, sizeof(double), cmp);
    if (rank == 0) printf("%s %d %.3f %.3f %.3f\n", names[k], ints, t[0][3], t[1][3], t[2][3]);
  }
  free(send);
  free(recv);
  free(send_bytes);
  free(recv_bytes);
  MPI_Type_free(&element);
  MPI_Comm_free(&graph);
  MPI_Finalize();
  return 0;
}
