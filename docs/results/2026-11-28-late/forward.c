// The least an interposer costs: MPI_Send and MPI_Recv forwarded to PMPI_* and nothing else.
//   mpicc -O2 -shared -fPIC forward.c -o forward.so
#include <mpi.h>

int MPI_Send(const void* buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm) {
  return PMPI_Send(buf, count, type, dest, tag, comm);
}

int MPI_Recv(void* buf, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm,
             MPI_Status* status) {
  return PMPI_Recv(buf, count, type, source, tag, comm, status);
}
