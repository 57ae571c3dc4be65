// Completion and persistent-request family: entry points over Loom's request table
// (mpi/requests.hpp). With no Loom request pending, each goes straight to the host.
#include "mpi/requests.hpp"

extern "C" int MPI_Wait(MPI_Request* request, MPI_Status* status) {
  return loom::mpi::wait(request, status);
}

extern "C" int MPI_Test(MPI_Request* request, int* flag, MPI_Status* status) {
  return loom::mpi::test(request, flag, status);
}

extern "C" int MPI_Waitall(int count, MPI_Request requests[], MPI_Status statuses[]) {
  return loom::mpi::waitall(count, requests, statuses);
}

extern "C" int MPI_Testall(int count, MPI_Request requests[], int* flag, MPI_Status statuses[]) {
  return loom::mpi::testall(count, requests, flag, statuses);
}

extern "C" int MPI_Waitany(int count, MPI_Request requests[], int* index, MPI_Status* status) {
  return loom::mpi::waitany(count, requests, index, status);
}

extern "C" int MPI_Testany(int count, MPI_Request requests[], int* index, int* flag,
                           MPI_Status* status) {
  return loom::mpi::testany(count, requests, index, flag, status);
}

extern "C" int MPI_Waitsome(int incount, MPI_Request requests[], int* outcount, int indices[],
                            MPI_Status statuses[]) {
  return loom::mpi::waitsome(incount, requests, outcount, indices, statuses);
}

extern "C" int MPI_Testsome(int incount, MPI_Request requests[], int* outcount, int indices[],
                            MPI_Status statuses[]) {
  return loom::mpi::testsome(incount, requests, outcount, indices, statuses);
}

extern "C" int MPI_Request_get_status(MPI_Request request, int* flag, MPI_Status* status) {
  return loom::mpi::request_get_status(request, flag, status);
}

extern "C" int MPI_Request_free(MPI_Request* request) {
  return loom::mpi::request_free(request);
}

extern "C" int MPI_Start(MPI_Request* request) {
  return loom::mpi::start(request);
}

extern "C" int MPI_Startall(int count, MPI_Request requests[]) {
  return loom::mpi::startall(count, requests);
}
