// Native check of the host's persistent collectives: each started three times with new send data
// before each start, compared with the blocking collective on the same data. Usage:
// persistent_native_check COLLECTIVE INTS_PER_BLOCK (alltoall alltoallv alltoallw allgather
// allgatherv gather gatherv scatter scatterv bcast). Open MPI names the inits MPIX_.
#include <mpi.h>
#ifdef OPEN_MPI
#include <mpi-ext.h>
#define PI(x) MPIX_##x
#else
#define PI(x) MPI_##x
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int r, p;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  MPI_Comm_size(MPI_COMM_WORLD, &p);
  int n = argc > 2 ? atoi(argv[2]) : 4; /* ints per block */
  int total = n * p;
  int *send = malloc(sizeof(int) * total), *recv = malloc(sizeof(int) * total),
      *ref = malloc(sizeof(int) * total);
  int counts[64], displs[64], bdispls[64];
  MPI_Datatype types[64];
  for (int i = 0; i < p; ++i) {
    counts[i] = n;
    displs[i] = n * i;
    bdispls[i] = 4 * n * i;
    types[i] = MPI_INT;
  }
  const char* w = argv[1];
  MPI_Comm c = MPI_COMM_WORLD;
  int root = p > 1 ? 1 : 0;
  MPI_Request q;
  int* bbuf = send;
#define ARGS_A2A send, n, MPI_INT, recv, n, MPI_INT, c
  if (!strcmp(w, "alltoall")) {
    PI(Alltoall_init)(ARGS_A2A, MPI_INFO_NULL, &q);
  }
  if (!strcmp(w, "alltoallv")) {
    PI(Alltoallv_init)
    (send, counts, displs, MPI_INT, recv, counts, displs, MPI_INT, c, MPI_INFO_NULL, &q);
  }
  if (!strcmp(w, "alltoallw")) {
    PI(Alltoallw_init)
    (send, counts, bdispls, types, recv, counts, bdispls, types, c, MPI_INFO_NULL, &q);
  }
  if (!strcmp(w, "allgather")) {
    PI(Allgather_init)(send, n, MPI_INT, recv, n, MPI_INT, c, MPI_INFO_NULL, &q);
  }
  if (!strcmp(w, "allgatherv")) {
    PI(Allgatherv_init)(send, n, MPI_INT, recv, counts, displs, MPI_INT, c, MPI_INFO_NULL, &q);
  }
  if (!strcmp(w, "gather")) {
    PI(Gather_init)(send, n, MPI_INT, recv, n, MPI_INT, root, c, MPI_INFO_NULL, &q);
  }
  if (!strcmp(w, "gatherv")) {
    PI(Gatherv_init)(send, n, MPI_INT, recv, counts, displs, MPI_INT, root, c, MPI_INFO_NULL, &q);
  }
  if (!strcmp(w, "scatter")) {
    PI(Scatter_init)(send, n, MPI_INT, recv, n, MPI_INT, root, c, MPI_INFO_NULL, &q);
  }
  if (!strcmp(w, "scatterv")) {
    PI(Scatterv_init)(send, counts, displs, MPI_INT, recv, n, MPI_INT, root, c, MPI_INFO_NULL, &q);
  }
  if (!strcmp(w, "bcast")) {
    PI(Bcast_init)(bbuf, total, MPI_INT, root, c, MPI_INFO_NULL, &q);
  }
  int bad = 0;
  for (int k = 0; k < 3; ++k) {
    for (int i = 0; i < total; ++i) {
      send[i] = 1 + i + 1000 * r + 100000 * k;
      recv[i] = -1;
      ref[i] = -1;
    }
    MPI_Start(&q);
    MPI_Wait(&q, MPI_STATUS_IGNORE);
    int* got = !strcmp(w, "bcast") ? send : recv;
    int* saved = malloc(sizeof(int) * total);
    memcpy(saved, got, sizeof(int) * total);
    for (int i = 0; i < total; ++i) {
      send[i] = 1 + i + 1000 * r + 100000 * k;
      recv[i] = -1;
    }
    if (!strcmp(w, "alltoall")) MPI_Alltoall(ARGS_A2A);
    if (!strcmp(w, "alltoallv"))
      MPI_Alltoallv(send, counts, displs, MPI_INT, recv, counts, displs, MPI_INT, c);
    if (!strcmp(w, "alltoallw"))
      MPI_Alltoallw(send, counts, bdispls, types, recv, counts, bdispls, types, c);
    if (!strcmp(w, "allgather")) MPI_Allgather(send, n, MPI_INT, recv, n, MPI_INT, c);
    if (!strcmp(w, "allgatherv"))
      MPI_Allgatherv(send, n, MPI_INT, recv, counts, displs, MPI_INT, c);
    if (!strcmp(w, "gather")) MPI_Gather(send, n, MPI_INT, recv, n, MPI_INT, root, c);
    if (!strcmp(w, "gatherv"))
      MPI_Gatherv(send, n, MPI_INT, recv, counts, displs, MPI_INT, root, c);
    if (!strcmp(w, "scatter")) MPI_Scatter(send, n, MPI_INT, recv, n, MPI_INT, root, c);
    if (!strcmp(w, "scatterv"))
      MPI_Scatterv(send, counts, displs, MPI_INT, recv, n, MPI_INT, root, c);
    if (!strcmp(w, "bcast")) MPI_Bcast(bbuf, total, MPI_INT, root, c);
    for (int i = 0; i < total; ++i)
      if (saved[i] != got[i]) {
        if (!bad) printf("%s rank %d start %d: [%d] %d != %d\n", w, r, k, i, saved[i], got[i]);
        bad++;
      }
    free(saved);
  }
  MPI_Request_free(&q);
  int all = 0;
  MPI_Allreduce(&bad, &all, 1, MPI_INT, MPI_SUM, c);
  if (r == 0) printf("%s n=%d p=%d: %s (%d wrong)\n", w, n, p, all ? "WRONG" : "ok", all);
  MPI_Finalize();
}
