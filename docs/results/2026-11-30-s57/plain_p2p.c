/* Point-to-point and datatype calls with plain MPI_INT, `ints` ints a message, Loom's call (MPI_)
   against the host's (PMPI_) in alternate rounds of one job, 7 rounds of `calls` calls (or
   pairs), medians. Prints "<call> <ints> <loom us> <host us> <host/loom>". argv: ints calls [k] */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
static int cmp(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return x < y ? -1 : x > y;
}
#define N 14
int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int n = argc > 1 ? atoi(argv[1]) : 1, calls = argc > 2 ? atoi(argv[2]) : 20000,
      only = argc > 3 ? atoi(argv[3]) : -1;
  int peer = rank ^ 1;
  int *s = calloc(n + 64, 4), *r = calloc(n + 64, 4);
  char packbuf[4096];
  const char* names[N] = {"send_recv",       "isend_irecv", "sendrecv",         "sendrecv_replace",
                          "ssend_recv",      "probe_recv",  "iprobe_recv",      "mprobe_mrecv",
                          "send_init_start", "pack_unpack", "type_create_free", "test_after_isend",
                          "bsend_recv",      "rsend_irecv"};
  int bsz = 1 << 20;
  void* bbuf = malloc(bsz);
  MPI_Buffer_attach(bbuf, bsz);
  for (int k = 0; k < N; ++k) {
    if (only >= 0 && k != only) continue;
    double t[2][7];
    for (int round = 0; round < 7; ++round)
      for (int h = 0; h < 2; ++h) {
        PMPI_Barrier(MPI_COMM_WORLD);
        double st = MPI_Wtime();
        MPI_Request q[2];
        MPI_Status stt;
        MPI_Message m;
        int flag, pos;
        for (int c = 0; c < calls; ++c) {
          switch (k) {
            case 0:
              if (rank == 0) {
                (h ? PMPI_Send : MPI_Send)(s, n, MPI_INT, peer, 0, MPI_COMM_WORLD);
                (h ? PMPI_Recv : MPI_Recv)(r, n, MPI_INT, peer, 0, MPI_COMM_WORLD, &stt);
              } else {
                (h ? PMPI_Recv : MPI_Recv)(r, n, MPI_INT, peer, 0, MPI_COMM_WORLD, &stt);
                (h ? PMPI_Send : MPI_Send)(s, n, MPI_INT, peer, 0, MPI_COMM_WORLD);
              }
              break;
            case 1:
              (h ? PMPI_Irecv : MPI_Irecv)(r, n, MPI_INT, peer, 0, MPI_COMM_WORLD, &q[0]);
              (h ? PMPI_Isend : MPI_Isend)(s, n, MPI_INT, peer, 0, MPI_COMM_WORLD, &q[1]);
              (h ? PMPI_Waitall : MPI_Waitall)(2, q, MPI_STATUSES_IGNORE);
              break;
            case 2:
              (h ? PMPI_Sendrecv : MPI_Sendrecv)(s, n, MPI_INT, peer, 0, r, n, MPI_INT, peer, 0,
                                                 MPI_COMM_WORLD, &stt);
              break;
            case 3:
              (h ? PMPI_Sendrecv_replace : MPI_Sendrecv_replace)(s, n, MPI_INT, peer, 0, peer, 0,
                                                                 MPI_COMM_WORLD, &stt);
              break;
            case 4:
              if (rank == 0) {
                (h ? PMPI_Ssend : MPI_Ssend)(s, n, MPI_INT, peer, 0, MPI_COMM_WORLD);
                (h ? PMPI_Recv : MPI_Recv)(r, n, MPI_INT, peer, 0, MPI_COMM_WORLD, &stt);
              } else {
                (h ? PMPI_Recv : MPI_Recv)(r, n, MPI_INT, peer, 0, MPI_COMM_WORLD, &stt);
                (h ? PMPI_Ssend : MPI_Ssend)(s, n, MPI_INT, peer, 0, MPI_COMM_WORLD);
              }
              break;
            case 5:
              if (rank == 0) {
                (h ? PMPI_Send : MPI_Send)(s, n, MPI_INT, peer, 0, MPI_COMM_WORLD);
                (h ? PMPI_Probe : MPI_Probe)(peer, 0, MPI_COMM_WORLD, &stt);
                (h ? PMPI_Recv : MPI_Recv)(r, n, MPI_INT, peer, 0, MPI_COMM_WORLD, &stt);
              } else {
                (h ? PMPI_Probe : MPI_Probe)(peer, 0, MPI_COMM_WORLD, &stt);
                (h ? PMPI_Recv : MPI_Recv)(r, n, MPI_INT, peer, 0, MPI_COMM_WORLD, &stt);
                (h ? PMPI_Send : MPI_Send)(s, n, MPI_INT, peer, 0, MPI_COMM_WORLD);
              }
              break;
            case 6:
              if (rank == 0) {
                (h ? PMPI_Send : MPI_Send)(s, n, MPI_INT, peer, 0, MPI_COMM_WORLD);
                do (h ? PMPI_Iprobe : MPI_Iprobe)(peer, 0, MPI_COMM_WORLD, &flag, &stt);
                while (!flag);
                (h ? PMPI_Recv : MPI_Recv)(r, n, MPI_INT, peer, 0, MPI_COMM_WORLD, &stt);
              } else {
                do (h ? PMPI_Iprobe : MPI_Iprobe)(peer, 0, MPI_COMM_WORLD, &flag, &stt);
                while (!flag);
                (h ? PMPI_Recv : MPI_Recv)(r, n, MPI_INT, peer, 0, MPI_COMM_WORLD, &stt);
                (h ? PMPI_Send : MPI_Send)(s, n, MPI_INT, peer, 0, MPI_COMM_WORLD);
              }
              break;
            case 7:
              if (rank == 0) {
                (h ? PMPI_Send : MPI_Send)(s, n, MPI_INT, peer, 0, MPI_COMM_WORLD);
                (h ? PMPI_Mprobe : MPI_Mprobe)(peer, 0, MPI_COMM_WORLD, &m, &stt);
                (h ? PMPI_Mrecv : MPI_Mrecv)(r, n, MPI_INT, &m, &stt);
              } else {
                (h ? PMPI_Mprobe : MPI_Mprobe)(peer, 0, MPI_COMM_WORLD, &m, &stt);
                (h ? PMPI_Mrecv : MPI_Mrecv)(r, n, MPI_INT, &m, &stt);
                (h ? PMPI_Send : MPI_Send)(s, n, MPI_INT, peer, 0, MPI_COMM_WORLD);
              }
              break;
            case 8:
              (h ? PMPI_Recv_init : MPI_Recv_init)(r, n, MPI_INT, peer, 0, MPI_COMM_WORLD, &q[0]);
              (h ? PMPI_Send_init : MPI_Send_init)(s, n, MPI_INT, peer, 0, MPI_COMM_WORLD, &q[1]);
              (h ? PMPI_Startall : MPI_Startall)(2, q);
              (h ? PMPI_Waitall : MPI_Waitall)(2, q, MPI_STATUSES_IGNORE);
              (h ? PMPI_Request_free : MPI_Request_free)(&q[0]);
              (h ? PMPI_Request_free : MPI_Request_free)(&q[1]);
              break;
            case 9:
              pos = 0;
              (h ? PMPI_Pack : MPI_Pack)(s, n, MPI_INT, packbuf, sizeof packbuf, &pos,
                                         MPI_COMM_WORLD);
              pos = 0;
              (h ? PMPI_Unpack : MPI_Unpack)(packbuf, sizeof packbuf, &pos, r, n, MPI_INT,
                                             MPI_COMM_WORLD);
              break;
            case 10: {
              MPI_Datatype ty;
              (h ? PMPI_Type_contiguous : MPI_Type_contiguous)(n, MPI_INT, &ty);
              (h ? PMPI_Type_commit : MPI_Type_commit)(&ty);
              (h ? PMPI_Type_free : MPI_Type_free)(&ty);
            } break;
            case 11:
              (h ? PMPI_Irecv : MPI_Irecv)(r, n, MPI_INT, peer, 0, MPI_COMM_WORLD, &q[0]);
              (h ? PMPI_Isend : MPI_Isend)(s, n, MPI_INT, peer, 0, MPI_COMM_WORLD, &q[1]);
              do (h ? PMPI_Testall : MPI_Testall)(2, q, &flag, MPI_STATUSES_IGNORE);
              while (!flag);
              break;
            case 12:
              if (rank == 0) {
                (h ? PMPI_Bsend : MPI_Bsend)(s, n, MPI_INT, peer, 0, MPI_COMM_WORLD);
                (h ? PMPI_Recv : MPI_Recv)(r, n, MPI_INT, peer, 0, MPI_COMM_WORLD, &stt);
              } else {
                (h ? PMPI_Recv : MPI_Recv)(r, n, MPI_INT, peer, 0, MPI_COMM_WORLD, &stt);
                (h ? PMPI_Bsend : MPI_Bsend)(s, n, MPI_INT, peer, 0, MPI_COMM_WORLD);
              }
              break;
            case 13:
              (h ? PMPI_Irecv : MPI_Irecv)(r, n, MPI_INT, peer, 1, MPI_COMM_WORLD, &q[0]);
              PMPI_Sendrecv(0, 0, MPI_INT, peer, 2, 0, 0, MPI_INT, peer, 2, MPI_COMM_WORLD,
                            MPI_STATUS_IGNORE);
              (h ? PMPI_Rsend : MPI_Rsend)(s, n, MPI_INT, peer, 1, MPI_COMM_WORLD);
              (h ? PMPI_Wait : MPI_Wait)(&q[0], MPI_STATUS_IGNORE);
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
  MPI_Buffer_detach(&bbuf, &bsz);
  free(bbuf);
  free(s);
  free(r);
  MPI_Finalize();
}
