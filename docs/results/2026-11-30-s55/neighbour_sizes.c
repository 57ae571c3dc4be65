/* Per-call time of neighbourhood all-to-alls over a size sweep, through MPI_ (Loom,
   when preloaded) and PMPI_ (the host) in alternate rounds of one job: rank 0's us per
   call, median of 7 rounds each, printed as "... bytes mpi_us pmpi_us". 2 ranks; argv[1] = "line"
   (1D Cartesian, not periodic: one neighbour and one MPI_PROC_NULL each) or "graph" (a distributed
   graph naming the other rank once each way); argv[2] = "alltoall", "alltoallv" or "alltoallw";
   argv[3] = "bytes" (the default) or "vector" (each block a vector of 4-byte
   elements every 8 bytes, the same bytes sent as "bytes" sends). Each
   round runs calls until 50 ms have passed (at least 20), trials included. */
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
  const int graph = argc > 1 && strcmp(argv[1], "graph") == 0;
  const char* call = argc > 2 ? argv[2] : "alltoall";
  const int form = strcmp(call, "alltoallv") == 0 ? 1 : strcmp(call, "alltoallw") == 0 ? 2 : 0;
  const int vector = argc > 3 && strcmp(argv[3], "vector") == 0;
  MPI_Comm comm;
  if (graph) {
    int peer = (rank + 1) % size, weight = 1;
    MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 1, &peer, &weight, 1, &peer, &weight,
                                   MPI_INFO_NULL, 0, &comm);
  } else {
    int dims[1] = {size}, periods[1] = {0};
    MPI_Cart_create(MPI_COMM_WORLD, 1, dims, periods, 0, &comm);
  }
  int in, out, weighted;
  if (graph) {
    MPI_Dist_graph_neighbors_count(comm, &in, &out, &weighted);
  } else {
    in = out = 2;
  }
  const size_t max_bytes = (size_t)4 << 20;
  const size_t spread = vector ? 2 : 1; /* a block's extent over its bytes */
  char* send = malloc(max_bytes * spread * out);
  char* recv = malloc(max_bytes * spread * in);
  memset(send, rank + 1, max_bytes * spread * out);
  int counts[2], idispls[2];
  MPI_Aint adispls[2];
  for (size_t bytes = 4; bytes <= max_bytes; bytes *= 4) {
    /* one element of `block` is one peer's block */
    MPI_Datatype block;
    if (vector) {
      MPI_Datatype strided;
      MPI_Type_vector((int)(bytes / 4), 1, 2, MPI_INT, &strided);
      MPI_Type_create_resized(strided, 0, (MPI_Aint)(bytes * spread), &block);
      MPI_Type_free(&strided);
    } else {
      MPI_Type_contiguous((int)bytes, MPI_BYTE, &block);
    }
    MPI_Type_commit(&block);
    MPI_Datatype types[2] = {block, block};
    for (int i = 0; i < 2; ++i) {
      counts[i] = 1;
      idispls[i] = i;
      adispls[i] = (MPI_Aint)(i * bytes * spread);
    }
    double t[2][7]; /* [0]: MPI_ (Loom when preloaded), [1]: PMPI_ (the host) */
    for (int round = 0; round < 7; ++round)
      for (int host = 0; host < 2; ++host) {
        PMPI_Barrier(MPI_COMM_WORLD);
        const double start = MPI_Wtime();
        int calls = 0, go = 1;
        while (go) {
          if (form == 0)
            (host ? PMPI_Neighbor_alltoall : MPI_Neighbor_alltoall)(send, 1, block, recv, 1, block,
                                                                    comm);
          else if (form == 1)
            (host ? PMPI_Neighbor_alltoallv : MPI_Neighbor_alltoallv)(
                send, counts, idispls, block, recv, counts, idispls, block, comm);
          else
            (host ? PMPI_Neighbor_alltoallw : MPI_Neighbor_alltoallw)(
                send, counts, adispls, types, recv, counts, adispls, types, comm);
          ++calls;
          /* every rank stops at the same call: rank 0's clock decides every 20 calls */
          if (calls % 20 == 0) {
            go = MPI_Wtime() - start < 0.05;
            PMPI_Bcast(&go, 1, MPI_INT, 0, MPI_COMM_WORLD);
          }
        }
        t[host][round] = (MPI_Wtime() - start) / calls * 1e6;
      }
    MPI_Type_free(&block);
    qsort(t[0], 7, sizeof(double), cmp);
    qsort(t[1], 7, sizeof(double), cmp);
    if (rank == 0)
      printf("%s %s %s %zu %.3f %.3f\n", graph ? "graph" : "line", call,
             vector ? "vector" : "bytes", bytes, t[0][3], t[1][3]);
  }
  free(send);
  free(recv);
  MPI_Comm_free(&comm);
  MPI_Finalize();
  return 0;
}
