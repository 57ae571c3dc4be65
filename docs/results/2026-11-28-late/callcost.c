// What an interposer costs on sub-microsecond messages: one-way us of a ping-pong of small
// derived types through PMPI_* (the host directly) and through MPI_* (whatever is preloaded),
// alternated in rounds; median over rounds of each round's mean.
//   mpicc -O2 callcost.c -o callcost
//   mpiexec -n 2 ./callcost                               (MPI_ is the host's own symbol)
//   mpiexec -n 2 -x LD_PRELOAD=./forward.so ./callcost    (a forwarder that does nothing)
//   mpiexec -n 2 -x LD_PRELOAD=libloom.so ./callcost      (Loom)
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

enum { kRounds = 15, kTrips = 20000 };

static int by_double(const void* a, const void* b) {
  const double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

typedef int (*SendFn)(const void*, int, MPI_Datatype, int, int, MPI_Comm);
typedef int (*RecvFn)(void*, int, MPI_Datatype, int, int, MPI_Comm, MPI_Status*);

static double one_way(SendFn send, RecvFn recv, char* buf, MPI_Datatype t, int rank) {
  const int peer = 1 - rank;
  PMPI_Barrier(MPI_COMM_WORLD);
  const double t0 = PMPI_Wtime();
  for (int i = 0; i < kTrips; ++i) {
    if (rank == 0) {
      send(buf, 1, t, peer, 7, MPI_COMM_WORLD);
      recv(buf, 1, t, peer, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else {
      recv(buf, 1, t, peer, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      send(buf, 1, t, peer, 7, MPI_COMM_WORLD);
    }
  }
  return (PMPI_Wtime() - t0) / kTrips / 2 * 1e6;
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  enum { kCases = 4 };
  const char* names[kCases] = {"contiguous 512 B", "nas_mg_y 512 B (8 x 64 B)",
                               "nas_lu_y 1000 B (5 x 200 B)", "indexed 64 B (4 x 16 B)"};
  MPI_Datatype types[kCases];
  MPI_Type_contiguous(512, MPI_BYTE, &types[0]);
  MPI_Type_vector(8, 8, 80, MPI_DOUBLE, &types[1]);
  MPI_Type_vector(5, 25, 360, MPI_DOUBLE, &types[2]);
  const int lengths[4] = {2, 2, 2, 2}, displs[4] = {0, 5, 11, 20};
  MPI_Type_indexed(4, lengths, displs, MPI_DOUBLE, &types[3]);
  char* buf = calloc(1 << 20, 1);
  if (rank == 0)
    printf("%-30s %9s %9s %9s %9s\n", "case (one-way us)", "PMPI", "MPI", "MPI-PMPI", "PMPI/MPI");
  for (int c = 0; c < kCases; ++c) {
    MPI_Type_commit(&types[c]);
    double host[kRounds], mpi[kRounds];
    one_way(PMPI_Send, PMPI_Recv, buf, types[c], rank);  // warm-up, trials included
    one_way(MPI_Send, MPI_Recv, buf, types[c], rank);
    for (int r = 0; r < kRounds; ++r) {
      if (r % 2) {
        host[r] = one_way(PMPI_Send, PMPI_Recv, buf, types[c], rank);
        mpi[r] = one_way(MPI_Send, MPI_Recv, buf, types[c], rank);
      } else {
        mpi[r] = one_way(MPI_Send, MPI_Recv, buf, types[c], rank);
        host[r] = one_way(PMPI_Send, PMPI_Recv, buf, types[c], rank);
      }
    }
    qsort(host, kRounds, sizeof(double), by_double);
    qsort(mpi, kRounds, sizeof(double), by_double);
    const double h = host[kRounds / 2], m = mpi[kRounds / 2];
    if (rank == 0) printf("%-30s %9.3f %9.3f %9.3f %8.3fx\n", names[c], h, m, m - h, h / m);
    MPI_Type_free(&types[c]);
  }
  free(buf);
  MPI_Finalize();
  return 0;
}
