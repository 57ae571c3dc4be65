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
MPI_Win c_win(const MPI_Fint* win) {
  static_assert(sizeof(MPI_Win) == sizeof(MPI_Fint), "MPICH windows are Fortran integers");
  return static_cast<MPI_Win>(*win);
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

// One-sided synchronisation: mpi_f08 moves data through the C MPI_Put & co. but synchronises
// through PMPI_* directly, so that a get or put Loom staged (ops/rma.hpp) would never complete.
void mpi_win_fence_f08_(MPI_Fint* assert_flags, MPI_Fint* win, MPI_Fint* ierror) {
  set_ierror(ierror, MPI_Win_fence(*assert_flags, c_win(win)));
}
void mpi_win_start_f08_(MPI_Fint* group, MPI_Fint* assert_flags, MPI_Fint* win, MPI_Fint* ierror) {
  static_assert(sizeof(MPI_Group) == sizeof(MPI_Fint), "MPICH groups are Fortran integers");
  set_ierror(ierror, MPI_Win_start(static_cast<MPI_Group>(*group), *assert_flags, c_win(win)));
}
void mpi_win_complete_f08_(MPI_Fint* win, MPI_Fint* ierror) {
  set_ierror(ierror, MPI_Win_complete(c_win(win)));
}
void mpi_win_lock_f08_(MPI_Fint* lock_type, MPI_Fint* rank, MPI_Fint* assert_flags, MPI_Fint* win,
                       MPI_Fint* ierror) {
  set_ierror(ierror, MPI_Win_lock(*lock_type, *rank, *assert_flags, c_win(win)));
}
void mpi_win_unlock_f08_(MPI_Fint* rank, MPI_Fint* win, MPI_Fint* ierror) {
  set_ierror(ierror, MPI_Win_unlock(*rank, c_win(win)));
}
void mpi_win_lock_all_f08_(MPI_Fint* assert_flags, MPI_Fint* win, MPI_Fint* ierror) {
  set_ierror(ierror, MPI_Win_lock_all(*assert_flags, c_win(win)));
}
void mpi_win_unlock_all_f08_(MPI_Fint* win, MPI_Fint* ierror) {
  set_ierror(ierror, MPI_Win_unlock_all(c_win(win)));
}
void mpi_win_flush_f08_(MPI_Fint* rank, MPI_Fint* win, MPI_Fint* ierror) {
  set_ierror(ierror, MPI_Win_flush(*rank, c_win(win)));
}
void mpi_win_flush_all_f08_(MPI_Fint* win, MPI_Fint* ierror) {
  set_ierror(ierror, MPI_Win_flush_all(c_win(win)));
}
void mpi_win_flush_local_f08_(MPI_Fint* rank, MPI_Fint* win, MPI_Fint* ierror) {
  set_ierror(ierror, MPI_Win_flush_local(*rank, c_win(win)));
}
void mpi_win_flush_local_all_f08_(MPI_Fint* win, MPI_Fint* ierror) {
  set_ierror(ierror, MPI_Win_flush_local_all(c_win(win)));
}
void mpi_win_free_f08_(MPI_Fint* win, MPI_Fint* ierror) {
  MPI_Win handle = c_win(win);
  set_ierror(ierror, MPI_Win_free(&handle));
  *win = static_cast<MPI_Fint>(handle);
}

}  // extern "C"
