/* Blocking MPI_Alltoall and MPI_Alltoallv of one strided element a peer (a vector of `n`
   doubles `stride` apart, resized to n * stride doubles), through MPI_ (Loom, when preloaded)
   and PMPI_ (the host) in alternate rounds of one job: rank 0 prints the median of 5 rounds of
   `calls` calls each, per call, as "<call> <n> <stride> <loom us> <host us>", and whether the
   receive buffers of the last Loom and host rounds were identical. */
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
  const int n = argc > 1 ? atoi(argv[1]) : 1024, stride = argc > 2 ? atoi(argv[2]) : 2;
  const int calls = argc > 3 ? atoi(argv[3]) : 10;
  const size_t span = (size_t)n * stride;
  MPI_Datatype vector, element;
  MPI_Type_vector(n, 1, stride, MPI_DOUBLE, &vector);
  MPI_Type_create_resized(vector, 0, (MPI_Aint)(span * sizeof(double)), &element);
  MPI_Type_commit(&element);
  MPI_Type_free(&vector);
  double* send = malloc(sizeof(double) * span * size);
  double* recv[2] = {malloc(sizeof(double) * span * size), malloc(sizeof(double) * span * size)};
  for (size_t i = 0; i < span * size; ++i) send[i] = rank * 1e9 + (double)i;
  int* counts = malloc(sizeof(int) * size);
  int* displs = malloc(sizeof(int) * size);
  for (int p = 0; p < size; ++p) {
    counts[p] = 1;
    displs[p] = p;
  }
  const char* names[] = {"alltoall", "alltoallv"};
  for (int k = 0; k < 2; ++k) {
    double t[2][5];
    for (int round = 0; round < 5; ++round)
      for (int host = 0; host < 2; ++host) {
        memset(recv[host], 0, sizeof(double) * span * size);
        PMPI_Barrier(MPI_COMM_WORLD);
        const double start = PMPI_Wtime();
        for (int c = 0; c < calls; ++c) {
          if (k == 0)
            (host ? PMPI_Alltoall : MPI_Alltoall)(send, 1, element, recv[host], 1, element,
                                                  MPI_COMM_WORLD);
          else
            (host ? PMPI_Alltoallv : MPI_Alltoallv)(send, counts, displs, element, recv[host],
                                                    counts, displs, element, MPI_COMM_WORLD);
        }
        t[host][round] = (PMPI_Wtime() - start) / calls * 1e6;
      }
    const int same = memcmp(recv[0], recv[1], sizeof(double) * span * size) == 0;
    qsort(t[0], 5, sizeof(double), cmp);
    qsort(t[1], 5, sizeof(double), cmp);
    if (rank == 0)
      printf("%s %d %d %.1f %.1f %s\n", names[k], n, stride, t[0][2], t[1][2],
             same ? "same" : "DIFFERENT");
  }
  MPI_Type_free(&element);
  MPI_Finalize();
  return 0;
}
