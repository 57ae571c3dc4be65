/* A persistent MPI_Alltoallv of a strided vector type, as an application would run it: the
 * type created, the request made, `starts` starts each with its wait (new data before each),
 * the request and the type freed, all timed; `runs` such runs, the median printed in us per
 * start, with a checksum of what arrived. Usage: persistent_alltoallv N STRIDE STARTS RUNS
 * (N elements of STRIDE-spaced doubles per peer); a fifth argument "blocking" makes each start a
 * blocking MPI_Alltoallv instead, for comparison. Open MPI names the init MPIX_Alltoallv_init. */
#include <mpi.h>
#if MPI_VERSION < 4
#include <mpi-ext.h>
#define ALLTOALLV_INIT MPIX_Alltoallv_init
#else
#define ALLTOALLV_INIT MPI_Alltoallv_init
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int by_value(const void* a, const void* b) {
  const double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const int n = argc > 1 ? atoi(argv[1]) : 1024, stride = argc > 2 ? atoi(argv[2]) : 2;
  const int starts = argc > 3 ? atoi(argv[3]) : 20, runs = argc > 4 ? atoi(argv[4]) : 5;
  const int blocking = argc > 5 && strcmp(argv[5], "blocking") == 0;
  const size_t span = (size_t)n * stride; /* doubles per peer block */
  double* send = malloc(sizeof(double) * span * size);
  double* recv = malloc(sizeof(double) * span * size);
  int* counts = malloc(sizeof(int) * size);
  int* displs = malloc(sizeof(int) * size);
  for (int p = 0; p < size; ++p) {
    counts[p] = 1;
    displs[p] = p;
  }
  double* times = malloc(sizeof(double) * runs);
  double checksum = 0;
  for (int run = 0; run < runs; ++run) {
    for (size_t i = 0; i < span * size; ++i) recv[i] = 0;
    MPI_Barrier(MPI_COMM_WORLD);
    const double t0 = MPI_Wtime();
    MPI_Datatype column, block;
    MPI_Type_vector(n, 1, stride, MPI_DOUBLE, &column);
    MPI_Type_create_resized(column, 0, (MPI_Aint)(sizeof(double) * span), &block);
    MPI_Type_commit(&block);
    MPI_Request request = MPI_REQUEST_NULL;
    if (!blocking)
      ALLTOALLV_INIT(send, counts, displs, block, recv, counts, displs, block, MPI_COMM_WORLD,
                     MPI_INFO_NULL, &request);
    for (int s = 0; s < starts; ++s) {
      for (size_t i = 0; i < span * size; i += stride) send[i] = rank + 0.001 * (double)i + s;
      if (blocking) {
        MPI_Alltoallv(send, counts, displs, block, recv, counts, displs, block, MPI_COMM_WORLD);
        continue;
      }
      MPI_Start(&request);
      MPI_Wait(&request, MPI_STATUS_IGNORE);
    }
    if (!blocking) MPI_Request_free(&request);
    MPI_Type_free(&block);
    MPI_Type_free(&column);
    times[run] = (MPI_Wtime() - t0) / starts * 1e6;
    if (run == runs - 1)
      for (size_t i = 0; i < span * size; ++i) checksum += recv[i] * (double)(i % 7 + 1);
  }
  double slowest[64];
  MPI_Reduce(times, slowest, runs, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
  if (rank == 0) {
    qsort(slowest, runs, sizeof(double), by_value);
    printf(
        "%s n=%d stride=%d starts=%d bytes_per_peer=%zu median_us_per_start=%.1f "
        "checksum=%.6e\n",
        blocking ? "blocking" : "persistent", n, stride, starts, (size_t)n * sizeof(double),
        slowest[runs / 2], checksum);
  }
  free(send);
  free(recv);
  free(counts);
  free(displs);
  free(times);
  MPI_Finalize();
  return 0;
}
