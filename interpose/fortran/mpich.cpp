// Fortran family, MPICH's `use mpi_f08` module. MPICH's mpif.h and `use mpi` bindings call
// the C MPI_* entry points, which Loom intercepts. Its mpi_f08 bindings send and receive
// through them too, but commit and free datatypes, complete requests, start persistent
// ones, and initialise and finalise MPI through PMPI_* directly: Loom would then have no
// plan for an f08 program's types, and a receive Loom staged would never be unpacked if
// an f08 call completed it. Loom therefore defines those f08 entry points itself. They take
// no buffers, MPICH's handles are its C handles, and its f08 MPI_Status has the C layout,
// so each wrapper only maps the ignore objects, the optional ierror and 1-based indices.
#include <mpi.h>

#include "interpose/fortran/bindings.hpp"

namespace {

using loom::fortran::Logical;
using loom::fortran::logical;
using loom::fortran::set_ierror;

// The f08 MPI_Status has the C layout; its ignore objects are MPI 4.0's
// MPI_F08_STATUS(ES)_IGNORE.
static_assert(sizeof(MPI_F08_status) == sizeof(MPI_Status), "f08 and C statuses differ");
MPI_Status* c_status(MPI_F08_status* status) {
  return status == MPI_F08_STATUS_IGNORE ? MPI_STATUS_IGNORE
                                         : reinterpret_cast<MPI_Status*>(status);
}
MPI_Status* c_statuses(MPI_F08_status* statuses) {
  return statuses == MPI_F08_STATUSES_IGNORE ? MPI_STATUSES_IGNORE
                                             : reinterpret_cast<MPI_Status*>(statuses);
}
MPI_Request* c_requests(MPI_Fint* requests) {
  static_assert(sizeof(MPI_Request) == sizeof(MPI_Fint), "MPICH requests are Fortran integers");
  return reinterpret_cast<MPI_Request*>(requests);
}
MPI_Datatype* c_type(MPI_Fint* type) {
  static_assert(sizeof(MPI_Datatype) == sizeof(MPI_Fint), "MPICH datatypes are Fortran integers");
  return reinterpret_cast<MPI_Datatype*>(type);
}
MPI_Comm* c_comm(MPI_Fint* comm) {
  static_assert(sizeof(MPI_Comm) == sizeof(MPI_Fint), "MPICH communicators are Fortran integers");
  return reinterpret_cast<MPI_Comm*>(comm);
}
// Indices MPI returns, in place, as Fortran sees them.
void to_fortran_indices(int* indices, int count) {
  for (int k = 0; k < count; ++k) indices[k] = loom::fortran::index(indices[k]);
}

}  // namespace

extern "C" {

void mpi_init_f08_(MPI_Fint* ierror) {
  set_ierror(ierror, MPI_Init(nullptr, nullptr));
}
void mpi_init_thread_f08_(MPI_Fint* required, MPI_Fint* provided, MPI_Fint* ierror) {
  set_ierror(ierror, MPI_Init_thread(nullptr, nullptr, *required, provided));
}
void mpi_finalize_f08_(MPI_Fint* ierror) {
  set_ierror(ierror, MPI_Finalize());
}
void mpi_comm_free_f08_(MPI_Fint* comm, MPI_Fint* ierror) {
  set_ierror(ierror, MPI_Comm_free(c_comm(comm)));
}
void mpi_comm_disconnect_f08_(MPI_Fint* comm, MPI_Fint* ierror) {
  set_ierror(ierror, MPI_Comm_disconnect(c_comm(comm)));
}

void mpi_type_commit_f08_(MPI_Fint* type, MPI_Fint* ierror) {
  set_ierror(ierror, MPI_Type_commit(c_type(type)));
}
void mpi_type_free_f08_(MPI_Fint* type, MPI_Fint* ierror) {
  set_ierror(ierror, MPI_Type_free(c_type(type)));
}
void mpi_type_dup_f08_(MPI_Fint* type, MPI_Fint* newtype, MPI_Fint* ierror) {
  set_ierror(ierror, MPI_Type_dup(*c_type(type), c_type(newtype)));
}

void mpi_start_f08_(MPI_Fint* request, MPI_Fint* ierror) {
  set_ierror(ierror, MPI_Start(c_requests(request)));
}
void mpi_startall_f08_(MPI_Fint* count, MPI_Fint* requests, MPI_Fint* ierror) {
  set_ierror(ierror, MPI_Startall(*count, c_requests(requests)));
}
void mpi_request_free_f08_(MPI_Fint* request, MPI_Fint* ierror) {
  set_ierror(ierror, MPI_Request_free(c_requests(request)));
}
// Cancellation and probes: a process's messages to itself may be Loom's to report or withdraw
// (transport/self_channel.hpp).
void mpi_cancel_f08_(MPI_Fint* request, MPI_Fint* ierror) {
  set_ierror(ierror, MPI_Cancel(c_requests(request)));
}
void mpi_probe_f08_(MPI_Fint* source, MPI_Fint* tag, MPI_Fint* comm, MPI_F08_status* status,
                    MPI_Fint* ierror) {
  set_ierror(ierror, MPI_Probe(*source, *tag, *c_comm(comm), c_status(status)));
}
void mpi_iprobe_f08_(MPI_Fint* source, MPI_Fint* tag, MPI_Fint* comm, Logical* flag,
                     MPI_F08_status* status, MPI_Fint* ierror) {
  int c_flag = 0;
  set_ierror(ierror, MPI_Iprobe(*source, *tag, *c_comm(comm), &c_flag, c_status(status)));
  *flag = logical(c_flag);
}
void mpi_mprobe_f08_(MPI_Fint* source, MPI_Fint* tag, MPI_Fint* comm, MPI_Fint* message,
                     MPI_F08_status* status, MPI_Fint* ierror) {
  static_assert(sizeof(MPI_Message) == sizeof(MPI_Fint), "MPICH messages are Fortran integers");
  set_ierror(ierror, MPI_Mprobe(*source, *tag, *c_comm(comm),
                                reinterpret_cast<MPI_Message*>(message), c_status(status)));
}
void mpi_improbe_f08_(MPI_Fint* source, MPI_Fint* tag, MPI_Fint* comm, Logical* flag,
                      MPI_Fint* message, MPI_F08_status* status, MPI_Fint* ierror) {
  int c_flag = 0;
  set_ierror(ierror, MPI_Improbe(*source, *tag, *c_comm(comm), &c_flag,
                                 reinterpret_cast<MPI_Message*>(message), c_status(status)));
  *flag = logical(c_flag);
}
void mpi_request_get_status_f08_(MPI_Fint* request, Logical* flag, MPI_F08_status* status,
                                 MPI_Fint* ierror) {
  int c_flag = 0;
  set_ierror(ierror, MPI_Request_get_status(*c_requests(request), &c_flag, c_status(status)));
  *flag = logical(c_flag);
}

void mpi_wait_f08_(MPI_Fint* request, MPI_F08_status* status, MPI_Fint* ierror) {
  set_ierror(ierror, MPI_Wait(c_requests(request), c_status(status)));
}
void mpi_test_f08_(MPI_Fint* request, Logical* flag, MPI_F08_status* status, MPI_Fint* ierror) {
  int c_flag = 0;
  set_ierror(ierror, MPI_Test(c_requests(request), &c_flag, c_status(status)));
  *flag = logical(c_flag);
}
void mpi_waitall_f08_(MPI_Fint* count, MPI_Fint* requests, MPI_F08_status* statuses,
                      MPI_Fint* ierror) {
  set_ierror(ierror, MPI_Waitall(*count, c_requests(requests), c_statuses(statuses)));
}
void mpi_testall_f08_(MPI_Fint* count, MPI_Fint* requests, Logical* flag, MPI_F08_status* statuses,
                      MPI_Fint* ierror) {
  int c_flag = 0;
  set_ierror(ierror, MPI_Testall(*count, c_requests(requests), &c_flag, c_statuses(statuses)));
  *flag = logical(c_flag);
}
void mpi_waitany_f08_(MPI_Fint* count, MPI_Fint* requests, MPI_Fint* index, MPI_F08_status* status,
                      MPI_Fint* ierror) {
  set_ierror(ierror, MPI_Waitany(*count, c_requests(requests), index, c_status(status)));
  to_fortran_indices(index, 1);
}
void mpi_testany_f08_(MPI_Fint* count, MPI_Fint* requests, MPI_Fint* index, Logical* flag,
                      MPI_F08_status* status, MPI_Fint* ierror) {
  int c_flag = 0;
  set_ierror(ierror, MPI_Testany(*count, c_requests(requests), index, &c_flag, c_status(status)));
  *flag = logical(c_flag);
  to_fortran_indices(index, 1);
}
void mpi_waitsome_f08_(MPI_Fint* incount, MPI_Fint* requests, MPI_Fint* outcount, MPI_Fint* indices,
                       MPI_F08_status* statuses, MPI_Fint* ierror) {
  set_ierror(ierror,
             MPI_Waitsome(*incount, c_requests(requests), outcount, indices, c_statuses(statuses)));
  to_fortran_indices(indices, *outcount);
}
void mpi_testsome_f08_(MPI_Fint* incount, MPI_Fint* requests, MPI_Fint* outcount, MPI_Fint* indices,
                       MPI_F08_status* statuses, MPI_Fint* ierror) {
  set_ierror(ierror,
             MPI_Testsome(*incount, c_requests(requests), outcount, indices, c_statuses(statuses)));
  to_fortran_indices(indices, *outcount);
}

}  // extern "C"
