/* tiny_derived.c of docs/results/2026-11-30-s55 with MPI_Neighbor_allgather added and a third
   argument: "plain" makes the element MPI_INT itself (which Loom passes to the host inline),
   anything else a vector of `ints` ints one every two, resized to twice its span (for one int, a
   one-run element, which Loom leaves to Open MPI as written and packs for MPICH). Per-call time
   through MPI_ (Loom, when preloaded) and PMPI_ (the host) in alternate rounds of one job, 2
   ranks: rank 0's median of 7 rounds of argv[2] calls each, printed as
   "call ints mpi_us pmpi_us". */
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
  const int ints = argc > 1 ? atoi(argv[1]) : 1;
  const int calls = argc > 2 ? atoi(argv[2]) : 20000;
  const int plain = argc > 3 && strcmp(argv[3], "plain") == 0;
  MPI_Datatype strided, element = MPI_INT;
  if (!plain) {
    MPI_Type_vector(ints, 1, 2, MPI_INT, &strided);
    MPI_Type_create_resized(strided, 0, (MPI_Aint)(2 * ints * sizeof(int)), &element);
    MPI_Type_commit(&element);
    MPI_Type_free(&strided);
  }
  int* send = calloc((size_t)(2 * ints * size), sizeof(int));
  int* recv = calloc((size_t)(2 * ints * size), sizeof(int));
  const int peer = (rank + 1) % size, weight = 1;
  MPI_Comm graph;
  MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 1, &peer, &weight, 1, &peer, &weight,
                                 MPI_INFO_NULL, 0, &graph);
  const char* names[] = {"alltoall", "allgather", "neighbor_alltoall", "neighbor_allgather"};
  for (int k = 0; k < 4; ++k) {
    double t[2][7];
    for (int round = 0; round < 7; ++round)
      for (int host = 0; host < 2; ++host) {
        PMPI_Barrier(MPI_COMM_WORLD);
        const double start = MPI_Wtime();
        for (int c = 0; c < calls; ++c) {
          if (k == 0)
            (host ? PMPI_Alltoall : MPI_Alltoall)(send, 1, element, recv, 1, element,
                                                  MPI_COMM_WORLD);
          else if (k == 1)
            (host ? PMPI_Allgather : MPI_Allgather)(send, 1, element, recv, 1, element,
                                                    MPI_COMM_WORLD);
          else if (k == 2)
            (host ? PMPI_Neighbor_alltoall : MPI_Neighbor_alltoall)(send, 1, element, recv, 1,
                                                                    element, graph);
          else
            (host ? PMPI_Neighbor_allgather : MPI_Neighbor_allgather)(send, 1, element, recv, 1,
                                                                      element, graph);
        }
        t[host][round] = (MPI_Wtime() - start) / calls * 1e6;
      }
    qsort(t[0], 7, sizeof(double), cmp);
    qsort(t[1], 7, sizeof(double), cmp);
    if (rank == 0) printf("%s %d %.3f %.3f\n", names[k], ints, t[0][3], t[1][3]);
  }
  free(send);
  free(recv);
  if (!plain) MPI_Type_free(&element);
  MPI_Comm_free(&graph);
  MPI_Finalize();
  return 0;
}
