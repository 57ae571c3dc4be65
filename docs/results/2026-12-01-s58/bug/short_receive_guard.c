/* A message of 4 ints received to oneself into 1 element of an indexed type whose first block
   holds those 4 ints and whose extent is 16 KiB (as MPICH's test datatype/lots_of_types.c does):
   only the first 16 bytes of the receive buffer may be touched. Here they end where a page with
   no access begins. Natively: "ok". Under Loom at 87d0130: a segfault (Loom reads and rewrites
   the whole element to merge a partial one, transport/staging.cpp unpack_received). */
#include <mpi.h>
#include <stdio.h>
#include <sys/mman.h>
int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int blks[1024], disps[1024];
  for (int j = 0; j < 1024; j++) {
    disps[j] = 4 * j;
    blks[j] = j ? (j % 3) + 1 : 4;
  }
  MPI_Datatype t;
  MPI_Type_indexed(1024, blks, disps, MPI_INT, &t);
  MPI_Type_commit(&t);
  char* pages = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  mprotect(pages + 4096, 4096, PROT_NONE);
  int* recvbuf = (int*)(pages + 4096 - 16);
  int sendbuf[4] = {1, 2, 3, 4};
  MPI_Request r;
  MPI_Irecv(recvbuf, 1, t, 0, 0, MPI_COMM_SELF, &r);
  MPI_Send(sendbuf, 4, MPI_INT, 0, 0, MPI_COMM_SELF);
  MPI_Wait(&r, MPI_STATUS_IGNORE);
  printf("%s\n", recvbuf[0] == 1 && recvbuf[3] == 4 ? "ok" : "wrong data");
  MPI_Type_free(&t);
  MPI_Finalize();
  return 0;
}
