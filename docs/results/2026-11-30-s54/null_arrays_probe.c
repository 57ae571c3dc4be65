#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
/* One v collective with one of its arrays null, errors returned: prints rank 0's error class.
   argv[1]: the call; argv[2]: which array is null (0 sendcounts, 1 sdispls (Alltoallw: sdispls),
   2 recvcounts, 3 rdispls, 4 sendtypes, 5 recvtypes); argv[3]: plain (MPI_INT) or vec.
   Every rank passes the same null array; the rooted calls' non-roots then wait for a root
   that returned (run them under a timeout). run_null_arrays.sh runs every case. */
int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  MPI_Datatype vec;
  MPI_Type_vector(4, 1, 2, MPI_INT, &vec);
  MPI_Type_commit(&vec);
  MPI_Datatype t = strcmp(argv[3], "vec") == 0 ? vec : MPI_INT;
  static int buf[256], rbuf[256];
  int c[8], d[8], c2[8], d2[8];
  MPI_Datatype ts[8], ts2[8];
  for (int i = 0; i < 8; i++) {
    c[i] = c2[i] = 1;
    d[i] = d2[i] = 8 * i;
    ts[i] = ts2[i] = t;
  }
  int wd[8];
  for (int i = 0; i < 8; i++) wd[i] = 32 * i;
  const char* call = argv[1];
  int nul = atoi(argv[2]);
  void* a[6] = {c, d, c2, d2, ts, ts2};
  a[nul] = NULL;
  MPI_Comm cart;
  int dims[1] = {size}, per[1] = {1};
  MPI_Cart_create(MPI_COMM_WORLD, 1, dims, per, 0, &cart);
  MPI_Comm_set_errhandler(cart, MPI_ERRORS_RETURN);
  int rc = -1;
  MPI_Request req;
  if (!strcmp(call, "alltoallv"))
    rc = MPI_Alltoallv(buf, a[0], a[1], t, rbuf, a[2], a[3], t, MPI_COMM_WORLD);
  else if (!strcmp(call, "ialltoallv")) {
    rc = MPI_Ialltoallv(buf, a[0], a[1], t, rbuf, a[2], a[3], t, MPI_COMM_WORLD, &req);
    if (rc == MPI_SUCCESS) MPI_Wait(&req, MPI_STATUS_IGNORE);
  } else if (!strcmp(call, "alltoallw")) {
    int* sd = nul == 1 ? NULL : wd;
    int* rd = nul == 3 ? NULL : wd;
    rc = MPI_Alltoallw(buf, a[0], sd, a[4], rbuf, a[2], rd, a[5], MPI_COMM_WORLD);
  } else if (!strcmp(call, "allgatherv"))
    rc = MPI_Allgatherv(buf, 1, t, rbuf, a[2], a[3], t, MPI_COMM_WORLD);
  else if (!strcmp(call, "gatherv"))
    rc = MPI_Gatherv(buf, 1, t, rbuf, a[2], a[3], t, 0, MPI_COMM_WORLD);
  else if (!strcmp(call, "scatterv"))
    rc = MPI_Scatterv(buf, a[0], a[1], t, rbuf, 1, t, 0, MPI_COMM_WORLD);
  else if (!strcmp(call, "neighbor_alltoallv"))
    rc = MPI_Neighbor_alltoallv(buf, a[0], a[1], t, rbuf, a[2], a[3], t, cart);
  else if (!strcmp(call, "neighbor_allgatherv"))
    rc = MPI_Neighbor_allgatherv(buf, 1, t, rbuf, a[2], a[3], t, cart);
  int cls = -1;
  if (rc != MPI_SUCCESS && rc != -1) MPI_Error_class(rc, &cls);
  printf("rank %d rc=%d class=%d\n", rank, rc, cls);
  MPI_Finalize();
  return 0;
}
