/* Every interposed collective with plain MPI_INT, `ints` ints a peer, Loom's call (MPI_) against
   the host's (PMPI_) in alternate rounds of one job, 7 rounds of `calls` calls, medians.
   Prints "<call> <ints> <loom us> <host us> <host/loom>". argv: ints calls [only call k] */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
static int cmp(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return x < y ? -1 : x > y;
}
#define NCALL 22
int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int n = argc > 1 ? atoi(argv[1]) : 1, calls = argc > 2 ? atoi(argv[2]) : 20000;
  const int peer = (rank + 1) % size, weight = 1;
  MPI_Comm g;
  MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 1, &peer, &weight, 1, &peer, &weight,
                                 MPI_INFO_NULL, 0, &g);
  int *s = calloc(n * size * 2, 4), *r = calloc(n * size * 2, 4);
  int cnt[64], dsp[64], cntb[64];
  MPI_Aint adsp[64];
  MPI_Datatype ty[64];
  for (int i = 0; i < 64; ++i) {
    cnt[i] = n;
    dsp[i] = i * n;
    adsp[i] = i * n * 4;
    ty[i] = MPI_INT;
    cntb[i] = n * 4;
  }
  int wd[64];
  for (int i = 0; i < 64; ++i) wd[i] = i * n * 4;
  const char* names[NCALL] = {"alltoall",
                              "ialltoall",
                              "alltoallv",
                              "ialltoallv",
                              "alltoallw",
                              "ialltoallw",
                              "allgather",
                              "iallgather",
                              "allgatherv",
                              "gather",
                              "scatter",
                              "bcast",
                              "ibcast",
                              "neighbor_alltoall",
                              "ineighbor_alltoall",
                              "neighbor_alltoallv",
                              "neighbor_alltoallw",
                              "neighbor_allgather",
                              "ineighbor_allgather",
                              "neighbor_allgatherv",
                              "gatherv",
                              "scatterv"};
  int only = argc > 3 ? atoi(argv[3]) : -1;
  for (int k = 0; k < NCALL; ++k) {
    if (only >= 0 && k != only) continue;
    double t[2][7];
    for (int round = 0; round < 7; ++round)
      for (int h = 0; h < 2; ++h) {
        PMPI_Barrier(MPI_COMM_WORLD);
        double st = MPI_Wtime();
        MPI_Request q;
        for (int c = 0; c < calls; ++c) {
          switch (k) {
            case 0:
              (h ? PMPI_Alltoall : MPI_Alltoall)(s, n, MPI_INT, r, n, MPI_INT, MPI_COMM_WORLD);
              break;
            case 1:
              (h ? PMPI_Ialltoall : MPI_Ialltoall)(s, n, MPI_INT, r, n, MPI_INT, MPI_COMM_WORLD,
                                                   &q);
              PMPI_Wait(&q, MPI_STATUS_IGNORE);
              break;
            case 2:
              (h ? PMPI_Alltoallv : MPI_Alltoallv)(s, cnt, dsp, MPI_INT, r, cnt, dsp, MPI_INT,
                                                   MPI_COMM_WORLD);
              break;
            case 3:
              (h ? PMPI_Ialltoallv : MPI_Ialltoallv)(s, cnt, dsp, MPI_INT, r, cnt, dsp, MPI_INT,
                                                     MPI_COMM_WORLD, &q);
              PMPI_Wait(&q, MPI_STATUS_IGNORE);
              break;
            case 4:
              (h ? PMPI_Alltoallw : MPI_Alltoallw)(s, cnt, wd, ty, r, cnt, wd, ty, MPI_COMM_WORLD);
              break;
            case 5:
              (h ? PMPI_Ialltoallw : MPI_Ialltoallw)(s, cnt, wd, ty, r, cnt, wd, ty, MPI_COMM_WORLD,
                                                     &q);
              PMPI_Wait(&q, MPI_STATUS_IGNORE);
              break;
            case 6:
              (h ? PMPI_Allgather : MPI_Allgather)(s, n, MPI_INT, r, n, MPI_INT, MPI_COMM_WORLD);
              break;
            case 7:
              (h ? PMPI_Iallgather : MPI_Iallgather)(s, n, MPI_INT, r, n, MPI_INT, MPI_COMM_WORLD,
                                                     &q);
              PMPI_Wait(&q, MPI_STATUS_IGNORE);
              break;
            case 8:
              (h ? PMPI_Allgatherv : MPI_Allgatherv)(s, n, MPI_INT, r, cnt, dsp, MPI_INT,
                                                     MPI_COMM_WORLD);
              break;
            case 9:
              (h ? PMPI_Gather : MPI_Gather)(s, n, MPI_INT, r, n, MPI_INT, 0, MPI_COMM_WORLD);
              break;
            case 10:
              (h ? PMPI_Scatter : MPI_Scatter)(s, n, MPI_INT, r, n, MPI_INT, 0, MPI_COMM_WORLD);
              break;
            case 11:
              (h ? PMPI_Bcast : MPI_Bcast)(s, n, MPI_INT, 0, MPI_COMM_WORLD);
              break;
            case 12:
              (h ? PMPI_Ibcast : MPI_Ibcast)(s, n, MPI_INT, 0, MPI_COMM_WORLD, &q);
              PMPI_Wait(&q, MPI_STATUS_IGNORE);
              break;
            case 13:
              (h ? PMPI_Neighbor_alltoall : MPI_Neighbor_alltoall)(s, n, MPI_INT, r, n, MPI_INT, g);
              break;
            case 14:
              (h ? PMPI_Ineighbor_alltoall : MPI_Ineighbor_alltoall)(s, n, MPI_INT, r, n, MPI_INT,
                                                                     g, &q);
              PMPI_Wait(&q, MPI_STATUS_IGNORE);
              break;
            case 15:
              (h ? PMPI_Neighbor_alltoallv : MPI_Neighbor_alltoallv)(s, cnt, dsp, MPI_INT, r, cnt,
                                                                     dsp, MPI_INT, g);
              break;
            case 16:
              (h ? PMPI_Neighbor_alltoallw : MPI_Neighbor_alltoallw)(s, cnt, adsp, ty, r, cnt, adsp,
                                                                     ty, g);
              break;
            case 17:
              (h ? PMPI_Neighbor_allgather : MPI_Neighbor_allgather)(s, n, MPI_INT, r, n, MPI_INT,
                                                                     g);
              break;
            case 18:
              (h ? PMPI_Ineighbor_allgather : MPI_Ineighbor_allgather)(s, n, MPI_INT, r, n, MPI_INT,
                                                                       g, &q);
              PMPI_Wait(&q, MPI_STATUS_IGNORE);
              break;
            case 19:
              (h ? PMPI_Neighbor_allgatherv : MPI_Neighbor_allgatherv)(s, n, MPI_INT, r, cnt, dsp,
                                                                       MPI_INT, g);
              break;
            case 20:
              (h ? PMPI_Gatherv : MPI_Gatherv)(s, n, MPI_INT, r, cnt, dsp, MPI_INT, 0,
                                               MPI_COMM_WORLD);
              break;
            case 21:
              (h ? PMPI_Scatterv : MPI_Scatterv)(s, cnt, dsp, MPI_INT, r, n, MPI_INT, 0,
                                                 MPI_COMM_WORLD);
              break;
          }
        }
        t[h][round] = (MPI_Wtime() - st) / calls * 1e6;
      }
    qsort(t[0], 7, sizeof(double), cmp);
    qsort(t[1], 7, sizeof(double), cmp);
    if (rank == 0)
      printf("%-20s %d %.3f %.3f %.2f\n", names[k], n, t[0][3], t[1][3], t[1][3] / t[0][3]);
  }
  MPI_Comm_free(&g);
  free(s);
  free(r);
  MPI_Finalize();
}
