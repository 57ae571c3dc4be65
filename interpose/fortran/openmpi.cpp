// Fortran family, Open MPI. Open MPI's Fortran bindings (mpif.h, `use mpi` and
// `use mpi_f08`) call the host's PMPI_* entry points directly, so without these wrappers a
// Fortran program would never reach Loom: no plans, no packing, no statistics. Each wrapper
// takes the binding's arguments (Fortran INTEGER handles, MPI_BOTTOM as a common block,
// integer statuses, 1-based indices), converts them as the host's binding does, and calls
// Loom's own C entry point. Every symbol name the host's bindings export is defined:
// ompi_<name>_f (what `use mpi_f08` calls) and MPI_NAME, mpi_name, mpi_name_, mpi_name__.
// MPICH's Fortran bindings call the C MPI_* entry points, which Loom already intercepts.
//
// Completion calls are wrapped along with everything that creates a Loom request: a
// request whose unpack Loom owes must be completed through Loom, whichever binding
// completes it.
#include <mpi.h>

#include <memory>
#include <vector>

#include "interpose/fortran/bindings.hpp"
#include "mpi/requests.hpp"
#include "mpi/topology.hpp"

// The host's Fortran constants live in common blocks of libmpi.
extern "C" MPI_Fint mpi_fortran_bottom_;
extern "C" MPI_Fint mpi_fortran_in_place_;

namespace {

using loom::fortran::Logical;
using loom::fortran::logical;
using loom::fortran::set_ierror;

constexpr size_t kStatusInts = sizeof(MPI_Status) / sizeof(MPI_Fint);

void* c_buffer(void* buf) {
  return buf == &mpi_fortran_bottom_ ? MPI_BOTTOM : buf;
}
// Collectives also take MPI_IN_PLACE.
void* c_collective_buffer(void* buf) {
  return buf == &mpi_fortran_in_place_ ? MPI_IN_PLACE : c_buffer(buf);
}
MPI_Datatype c_type(const MPI_Fint* type) {
  return PMPI_Type_f2c(*type);
}
MPI_Comm c_comm(const MPI_Fint* comm) {
  return PMPI_Comm_f2c(*comm);
}

// A Fortran status argument: MPI_STATUS_IGNORE stays ignored, otherwise the C status is
// copied out after the call.
class StatusOut {
 public:
  explicit StatusOut(MPI_Fint* fortran) : fortran_(fortran) {}
  MPI_Status* get() { return ignored() ? MPI_STATUS_IGNORE : &status_; }
  void copy_out() {
    if (!ignored()) PMPI_Status_c2f(&status_, fortran_);
  }

 private:
  bool ignored() const { return fortran_ == MPI_F_STATUS_IGNORE; }
  MPI_Fint* fortran_;
  MPI_Status status_{};
};

// Arrays of Fortran requests and statuses, converted to C for one completion call.
class RequestArray {
 public:
  RequestArray(MPI_Fint count, MPI_Fint* requests, MPI_Fint* statuses)
      : count_(count > 0 ? count : 0),
        fortran_requests_(requests),
        fortran_statuses_(statuses),
        requests_(static_cast<size_t>(count_)),
        statuses_(static_cast<size_t>(count_)) {
    for (int i = 0; i < count_; ++i)
      requests_[static_cast<size_t>(i)] = PMPI_Request_f2c(requests[i]);
  }
  int count() const { return count_; }
  MPI_Request* requests() { return requests_.data(); }
  MPI_Status* statuses() {
    return statuses_ignored() || count_ == 0 ? MPI_STATUSES_IGNORE : statuses_.data();
  }
  // Completed requests become MPI_REQUEST_NULL (persistent ones stay), as in C.
  void copy_requests_out() {
    for (int i = 0; i < count_; ++i)
      fortran_requests_[i] = PMPI_Request_c2f(requests_[static_cast<size_t>(i)]);
  }
  // The first `n` C statuses to the first `n` Fortran status slots.
  void copy_statuses_out(int n) {
    if (statuses_ignored()) return;
    for (int k = 0; k < n; ++k)
      PMPI_Status_c2f(&statuses_[static_cast<size_t>(k)],
                      fortran_statuses_ + static_cast<size_t>(k) * kStatusInts);
  }

 private:
  bool statuses_ignored() const { return fortran_statuses_ == MPI_F_STATUSES_IGNORE; }
  int count_;
  MPI_Fint* fortran_requests_;
  MPI_Fint* fortran_statuses_;
  std::vector<MPI_Request> requests_;
  std::vector<MPI_Status> statuses_;
};

// The `count` datatypes of a w-form collective's Fortran array.
std::vector<MPI_Datatype> c_types(const MPI_Fint* types, int count) {
  std::vector<MPI_Datatype> c(static_cast<size_t>(count > 0 ? count : 0));
  for (size_t i = 0; i < c.size(); ++i) c[i] = PMPI_Type_f2c(types[i]);
  return c;
}

// How many blocks each side of a w-form collective has: the group size for the all-to-all
// (the remote group's on an intercommunicator), the degrees for the neighbourhood one.
void alltoallw_blocks(MPI_Comm comm, int* sends, int* receives) {
  int inter = 0;
  *sends = *receives = 0;
  if (comm == MPI_COMM_NULL || PMPI_Comm_test_inter(comm, &inter) != MPI_SUCCESS) return;
  if (inter)
    PMPI_Comm_remote_size(comm, sends);
  else
    PMPI_Comm_size(comm, sends);
  *receives = *sends;
}
void neighbour_blocks(MPI_Comm comm, int* sends, int* receives) {
  if (!loom::mpi::topology_degrees(comm, receives, sends)) *sends = *receives = 0;
}

// The converted datatype arrays of a non-blocking w-form call the host runs itself: Open MPI
// 4.1 reads them when the operation progresses, after the call has returned (its own
// Fortran binding frees them at once, and MPI_IALLTOALLW then crashes).
class KeptTypeArrays final : public loom::mpi::PendingOp {
 public:
  KeptTypeArrays(std::vector<MPI_Datatype> sends, std::vector<MPI_Datatype> receives)
      : sends_(std::move(sends)), receives_(std::move(receives)) {}
  int on_complete(MPI_Status*) override { return MPI_SUCCESS; }

 private:
  std::vector<MPI_Datatype> sends_, receives_;
};

}  // namespace

// Defines ompi_<name>_f and the four public spellings as aliases of it; the body follows.
#define LOOM_FORTRAN(name, NAME, params)                                            \
  extern "C" void ompi_##name##_f params;                                           \
  extern "C" void NAME params __attribute__((alias("ompi_" #name "_f")));           \
  extern "C" void mpi_##name params __attribute__((alias("ompi_" #name "_f")));     \
  extern "C" void mpi_##name##_ params __attribute__((alias("ompi_" #name "_f")));  \
  extern "C" void mpi_##name##__ params __attribute__((alias("ompi_" #name "_f"))); \
  extern "C" void ompi_##name##_f params

// ---- Init, Finalize, communicator lifetime ------------------------------------------------

LOOM_FORTRAN(init, MPI_INIT, (MPI_Fint * ierr)) {
  *ierr = MPI_Init(nullptr, nullptr);
}

LOOM_FORTRAN(init_thread, MPI_INIT_THREAD,
             (MPI_Fint * required, MPI_Fint* provided, MPI_Fint* ierr)) {
  int c_provided = 0;
  *ierr = MPI_Init_thread(nullptr, nullptr, *required, &c_provided);
  *provided = c_provided;
}

LOOM_FORTRAN(finalize, MPI_FINALIZE, (MPI_Fint * ierr)) {
  *ierr = MPI_Finalize();
}

LOOM_FORTRAN(comm_free, MPI_COMM_FREE, (MPI_Fint * comm, MPI_Fint* ierr)) {
  MPI_Comm c = c_comm(comm);
  *ierr = MPI_Comm_free(&c);
  if (*ierr == MPI_SUCCESS) *comm = PMPI_Comm_c2f(c);
}

LOOM_FORTRAN(comm_disconnect, MPI_COMM_DISCONNECT, (MPI_Fint * comm, MPI_Fint* ierr)) {
  MPI_Comm c = c_comm(comm);
  *ierr = MPI_Comm_disconnect(&c);
  if (*ierr == MPI_SUCCESS) *comm = PMPI_Comm_c2f(c);
}

// ---- Datatypes and MPI_Pack ------------------------------------------------------------

LOOM_FORTRAN(type_commit, MPI_TYPE_COMMIT, (MPI_Fint * type, MPI_Fint* ierr)) {
  MPI_Datatype c = c_type(type);
  *ierr = MPI_Type_commit(&c);
}

LOOM_FORTRAN(type_free, MPI_TYPE_FREE, (MPI_Fint * type, MPI_Fint* ierr)) {
  MPI_Datatype c = c_type(type);
  *ierr = MPI_Type_free(&c);
  if (*ierr == MPI_SUCCESS) *type = PMPI_Type_c2f(c);
}

LOOM_FORTRAN(type_dup, MPI_TYPE_DUP, (MPI_Fint * type, MPI_Fint* newtype, MPI_Fint* ierr)) {
  MPI_Datatype c_new = MPI_DATATYPE_NULL;
  *ierr = MPI_Type_dup(c_type(type), &c_new);
  if (*ierr == MPI_SUCCESS) *newtype = PMPI_Type_c2f(c_new);
}

// MPI_PACK and MPI_UNPACK: Fortran's position is updated only when the C call succeeds.
template <typename Call>
void with_c_position(MPI_Fint* position, MPI_Fint* ierr, Call call) {
  int c_position = *position;
  *ierr = call(&c_position);
  if (*ierr == MPI_SUCCESS) *position = c_position;
}

LOOM_FORTRAN(pack, MPI_PACK,
             (char* inbuf, MPI_Fint* incount, MPI_Fint* type, char* outbuf, MPI_Fint* outsize,
              MPI_Fint* position, MPI_Fint* comm, MPI_Fint* ierr)) {
  with_c_position(position, ierr, [&](int* c_position) {
    return MPI_Pack(c_buffer(inbuf), *incount, c_type(type), outbuf, *outsize, c_position,
                    c_comm(comm));
  });
}

LOOM_FORTRAN(unpack, MPI_UNPACK,
             (char* inbuf, MPI_Fint* insize, MPI_Fint* position, char* outbuf, MPI_Fint* outcount,
              MPI_Fint* type, MPI_Fint* comm, MPI_Fint* ierr)) {
  with_c_position(position, ierr, [&](int* c_position) {
    return MPI_Unpack(inbuf, *insize, c_position, c_buffer(outbuf), *outcount, c_type(type),
                      c_comm(comm));
  });
}

// ---- Sends ----------------------------------------------------------------------------

#define LOOM_FORTRAN_BLOCKING_SEND(name, NAME, CName)                                      \
  LOOM_FORTRAN(name, NAME,                                                                 \
               (char* buf, MPI_Fint* count, MPI_Fint* type, MPI_Fint* dest, MPI_Fint* tag, \
                MPI_Fint* comm, MPI_Fint* ierr)) {                                         \
    *ierr = CName(c_buffer(buf), *count, c_type(type), *dest, *tag, c_comm(comm));         \
  }
LOOM_FORTRAN_BLOCKING_SEND(send, MPI_SEND, MPI_Send)
LOOM_FORTRAN_BLOCKING_SEND(ssend, MPI_SSEND, MPI_Ssend)
LOOM_FORTRAN_BLOCKING_SEND(rsend, MPI_RSEND, MPI_Rsend)
LOOM_FORTRAN_BLOCKING_SEND(bsend, MPI_BSEND, MPI_Bsend)

// Non-blocking and persistent sends share one shape: they return a request (`peer` is the
// destination, or the source for the receives below).
#define LOOM_FORTRAN_REQUEST_SEND(name, NAME, CName)                                           \
  LOOM_FORTRAN(name, NAME,                                                                     \
               (char* buf, MPI_Fint* count, MPI_Fint* type, MPI_Fint* peer, MPI_Fint* tag,     \
                MPI_Fint* comm, MPI_Fint* request, MPI_Fint* ierr)) {                          \
    MPI_Request c_request = MPI_REQUEST_NULL;                                                  \
    *ierr = CName(c_buffer(buf), *count, c_type(type), *peer, *tag, c_comm(comm), &c_request); \
    if (*ierr == MPI_SUCCESS) *request = PMPI_Request_c2f(c_request);                          \
  }
LOOM_FORTRAN_REQUEST_SEND(isend, MPI_ISEND, MPI_Isend)
LOOM_FORTRAN_REQUEST_SEND(issend, MPI_ISSEND, MPI_Issend)
LOOM_FORTRAN_REQUEST_SEND(irsend, MPI_IRSEND, MPI_Irsend)
LOOM_FORTRAN_REQUEST_SEND(ibsend, MPI_IBSEND, MPI_Ibsend)
LOOM_FORTRAN_REQUEST_SEND(send_init, MPI_SEND_INIT, MPI_Send_init)
LOOM_FORTRAN_REQUEST_SEND(ssend_init, MPI_SSEND_INIT, MPI_Ssend_init)
LOOM_FORTRAN_REQUEST_SEND(rsend_init, MPI_RSEND_INIT, MPI_Rsend_init)
LOOM_FORTRAN_REQUEST_SEND(bsend_init, MPI_BSEND_INIT, MPI_Bsend_init)
// Receives that return a request have the same shape, with the source for the destination.
LOOM_FORTRAN_REQUEST_SEND(irecv, MPI_IRECV, MPI_Irecv)
LOOM_FORTRAN_REQUEST_SEND(recv_init, MPI_RECV_INIT, MPI_Recv_init)

// ---- Receives -------------------------------------------------------------------------

LOOM_FORTRAN(recv, MPI_RECV,
             (char* buf, MPI_Fint* count, MPI_Fint* type, MPI_Fint* source, MPI_Fint* tag,
              MPI_Fint* comm, MPI_Fint* status, MPI_Fint* ierr)) {
  StatusOut out(status);
  *ierr = MPI_Recv(c_buffer(buf), *count, c_type(type), *source, *tag, c_comm(comm), out.get());
  out.copy_out();
}

LOOM_FORTRAN(sendrecv, MPI_SENDRECV,
             (char* sendbuf, MPI_Fint* sendcount, MPI_Fint* sendtype, MPI_Fint* dest,
              MPI_Fint* sendtag, char* recvbuf, MPI_Fint* recvcount, MPI_Fint* recvtype,
              MPI_Fint* source, MPI_Fint* recvtag, MPI_Fint* comm, MPI_Fint* status,
              MPI_Fint* ierr)) {
  StatusOut out(status);
  *ierr = MPI_Sendrecv(c_buffer(sendbuf), *sendcount, c_type(sendtype), *dest, *sendtag,
                       c_buffer(recvbuf), *recvcount, c_type(recvtype), *source, *recvtag,
                       c_comm(comm), out.get());
  out.copy_out();
}

LOOM_FORTRAN(sendrecv_replace, MPI_SENDRECV_REPLACE,
             (char* buf, MPI_Fint* count, MPI_Fint* type, MPI_Fint* dest, MPI_Fint* sendtag,
              MPI_Fint* source, MPI_Fint* recvtag, MPI_Fint* comm, MPI_Fint* status,
              MPI_Fint* ierr)) {
  StatusOut out(status);
  *ierr = MPI_Sendrecv_replace(c_buffer(buf), *count, c_type(type), *dest, *sendtag, *source,
                               *recvtag, c_comm(comm), out.get());
  out.copy_out();
}

LOOM_FORTRAN(mrecv, MPI_MRECV,
             (char* buf, MPI_Fint* count, MPI_Fint* type, MPI_Fint* message, MPI_Fint* status,
              MPI_Fint* ierr)) {
  StatusOut out(status);
  MPI_Message c_message = PMPI_Message_f2c(*message);
  *ierr = MPI_Mrecv(c_buffer(buf), *count, c_type(type), &c_message, out.get());
  *message = PMPI_Message_c2f(c_message);
  out.copy_out();
}

LOOM_FORTRAN(imrecv, MPI_IMRECV,
             (char* buf, MPI_Fint* count, MPI_Fint* type, MPI_Fint* message, MPI_Fint* request,
              MPI_Fint* ierr)) {
  MPI_Message c_message = PMPI_Message_f2c(*message);
  MPI_Request c_request = MPI_REQUEST_NULL;
  *ierr = MPI_Imrecv(c_buffer(buf), *count, c_type(type), &c_message, &c_request);
  *message = PMPI_Message_c2f(c_message);
  if (*ierr == MPI_SUCCESS) *request = PMPI_Request_c2f(c_request);
}

// ---- Requests: start and completion ----------------------------------------------------

LOOM_FORTRAN(start, MPI_START, (MPI_Fint * request, MPI_Fint* ierr)) {
  MPI_Request c = PMPI_Request_f2c(*request);
  *ierr = MPI_Start(&c);
  *request = PMPI_Request_c2f(c);
}

LOOM_FORTRAN(startall, MPI_STARTALL, (MPI_Fint * count, MPI_Fint* requests, MPI_Fint* ierr)) {
  RequestArray array(*count, requests, MPI_F_STATUSES_IGNORE);
  *ierr = MPI_Startall(array.count(), array.requests());
  array.copy_requests_out();
}

LOOM_FORTRAN(wait, MPI_WAIT, (MPI_Fint * request, MPI_Fint* status, MPI_Fint* ierr)) {
  StatusOut out(status);
  MPI_Request c = PMPI_Request_f2c(*request);
  *ierr = MPI_Wait(&c, out.get());
  *request = PMPI_Request_c2f(c);
  out.copy_out();
}

LOOM_FORTRAN(test, MPI_TEST,
             (MPI_Fint * request, Logical* flag, MPI_Fint* status, MPI_Fint* ierr)) {
  StatusOut out(status);
  MPI_Request c = PMPI_Request_f2c(*request);
  int c_flag = 0;
  set_ierror(ierr, MPI_Test(&c, &c_flag, out.get()));
  *request = PMPI_Request_c2f(c);
  *flag = logical(c_flag);
  if (c_flag) out.copy_out();
}

LOOM_FORTRAN(request_get_status, MPI_REQUEST_GET_STATUS,
             (MPI_Fint * request, Logical* flag, MPI_Fint* status, MPI_Fint* ierr)) {
  StatusOut out(status);
  int c_flag = 0;
  set_ierror(ierr, MPI_Request_get_status(PMPI_Request_f2c(*request), &c_flag, out.get()));
  *flag = logical(c_flag);
  if (c_flag) out.copy_out();
}

LOOM_FORTRAN(request_free, MPI_REQUEST_FREE, (MPI_Fint * request, MPI_Fint* ierr)) {
  MPI_Request c = PMPI_Request_f2c(*request);
  *ierr = MPI_Request_free(&c);
  *request = PMPI_Request_c2f(c);
}

// Cancellation and probes: a process's messages to itself may be Loom's to report or withdraw
// (transport/self_channel.hpp).
LOOM_FORTRAN(cancel, MPI_CANCEL, (MPI_Fint * request, MPI_Fint* ierr)) {
  MPI_Request c = PMPI_Request_f2c(*request);
  *ierr = MPI_Cancel(&c);
}

LOOM_FORTRAN(probe, MPI_PROBE,
             (MPI_Fint * source, MPI_Fint* tag, MPI_Fint* comm, MPI_Fint* status, MPI_Fint* ierr)) {
  StatusOut out(status);
  *ierr = MPI_Probe(*source, *tag, c_comm(comm), out.get());
  out.copy_out();
}

LOOM_FORTRAN(iprobe, MPI_IPROBE,
             (MPI_Fint * source, MPI_Fint* tag, MPI_Fint* comm, Logical* flag, MPI_Fint* status,
              MPI_Fint* ierr)) {
  StatusOut out(status);
  int c_flag = 0;
  set_ierror(ierr, MPI_Iprobe(*source, *tag, c_comm(comm), &c_flag, out.get()));
  *flag = logical(c_flag);
  if (c_flag) out.copy_out();
}

LOOM_FORTRAN(mprobe, MPI_MPROBE,
             (MPI_Fint * source, MPI_Fint* tag, MPI_Fint* comm, MPI_Fint* message, MPI_Fint* status,
              MPI_Fint* ierr)) {
  StatusOut out(status);
  MPI_Message c_message = MPI_MESSAGE_NULL;
  *ierr = MPI_Mprobe(*source, *tag, c_comm(comm), &c_message, out.get());
  *message = PMPI_Message_c2f(c_message);
  out.copy_out();
}

LOOM_FORTRAN(improbe, MPI_IMPROBE,
             (MPI_Fint * source, MPI_Fint* tag, MPI_Fint* comm, Logical* flag, MPI_Fint* message,
              MPI_Fint* status, MPI_Fint* ierr)) {
  StatusOut out(status);
  int c_flag = 0;
  MPI_Message c_message = MPI_MESSAGE_NULL;
  set_ierror(ierr, MPI_Improbe(*source, *tag, c_comm(comm), &c_flag, &c_message, out.get()));
  *flag = logical(c_flag);
  if (c_flag) {
    *message = PMPI_Message_c2f(c_message);
    out.copy_out();
  }
}

LOOM_FORTRAN(waitall, MPI_WAITALL,
             (MPI_Fint * count, MPI_Fint* requests, MPI_Fint* statuses, MPI_Fint* ierr)) {
  RequestArray array(*count, requests, statuses);
  *ierr = MPI_Waitall(array.count(), array.requests(), array.statuses());
  array.copy_requests_out();
  array.copy_statuses_out(array.count());
}

LOOM_FORTRAN(testall, MPI_TESTALL,
             (MPI_Fint * count, MPI_Fint* requests, Logical* flag, MPI_Fint* statuses,
              MPI_Fint* ierr)) {
  RequestArray array(*count, requests, statuses);
  int c_flag = 0;
  set_ierror(ierr, MPI_Testall(array.count(), array.requests(), &c_flag, array.statuses()));
  array.copy_requests_out();
  *flag = logical(c_flag);
  if (c_flag) array.copy_statuses_out(array.count());
}

LOOM_FORTRAN(waitany, MPI_WAITANY,
             (MPI_Fint * count, MPI_Fint* requests, MPI_Fint* index, MPI_Fint* status,
              MPI_Fint* ierr)) {
  RequestArray array(*count, requests, MPI_F_STATUSES_IGNORE);
  StatusOut out(status);
  int c_index = MPI_UNDEFINED;
  *ierr = MPI_Waitany(array.count(), array.requests(), &c_index, out.get());
  array.copy_requests_out();
  *index = loom::fortran::index(c_index);
  out.copy_out();
}

LOOM_FORTRAN(testany, MPI_TESTANY,
             (MPI_Fint * count, MPI_Fint* requests, MPI_Fint* index, Logical* flag,
              MPI_Fint* status, MPI_Fint* ierr)) {
  RequestArray array(*count, requests, MPI_F_STATUSES_IGNORE);
  StatusOut out(status);
  int c_index = MPI_UNDEFINED, c_flag = 0;
  set_ierror(ierr, MPI_Testany(array.count(), array.requests(), &c_index, &c_flag, out.get()));
  array.copy_requests_out();
  *index = loom::fortran::index(c_index);
  *flag = logical(c_flag);
  if (c_flag) out.copy_out();
}

// Waitsome and Testsome fill the statuses of the completed requests in order, one slot
// per completion, as C does.
#define LOOM_FORTRAN_SOME(name, NAME, CName)                                                      \
  LOOM_FORTRAN(name, NAME,                                                                        \
               (MPI_Fint * incount, MPI_Fint * requests, MPI_Fint * outcount, MPI_Fint * indices, \
                MPI_Fint * statuses, MPI_Fint * ierr)) {                                          \
    RequestArray array(*incount, requests, statuses);                                             \
    std::vector<int> c_indices(static_cast<size_t>(array.count()) + 1);                           \
    int c_outcount = MPI_UNDEFINED;                                                               \
    set_ierror(ierr, CName(array.count(), array.requests(), &c_outcount, c_indices.data(),        \
                           array.statuses()));                                                    \
    array.copy_requests_out();                                                                    \
    *outcount = c_outcount;                                                                       \
    if (c_outcount == MPI_UNDEFINED) return;                                                      \
    for (int k = 0; k < c_outcount; ++k)                                                          \
      indices[k] = loom::fortran::index(c_indices[static_cast<size_t>(k)]);                       \
    array.copy_statuses_out(c_outcount);                                                          \
  }
LOOM_FORTRAN_SOME(waitsome, MPI_WAITSOME, MPI_Waitsome)
LOOM_FORTRAN_SOME(testsome, MPI_TESTSOME, MPI_Testsome)

// The f08 entry points of the calls Open MPI's mpi_f08 module reaches through pmpi_<name>_,
// past ompi_<name>_f; their bodies above take a null (absent) ierror.
extern "C" void mpi_test_f08_(MPI_Fint*, Logical*, MPI_Fint*, MPI_Fint*)
    __attribute__((alias("ompi_test_f")));
extern "C" void mpi_request_get_status_f08_(MPI_Fint*, Logical*, MPI_Fint*, MPI_Fint*)
    __attribute__((alias("ompi_request_get_status_f")));
extern "C" void mpi_testall_f08_(MPI_Fint*, MPI_Fint*, Logical*, MPI_Fint*, MPI_Fint*)
    __attribute__((alias("ompi_testall_f")));
extern "C" void mpi_testany_f08_(MPI_Fint*, MPI_Fint*, MPI_Fint*, Logical*, MPI_Fint*, MPI_Fint*)
    __attribute__((alias("ompi_testany_f")));
extern "C" void mpi_testsome_f08_(MPI_Fint*, MPI_Fint*, MPI_Fint*, MPI_Fint*, MPI_Fint*, MPI_Fint*)
    __attribute__((alias("ompi_testsome_f")));
extern "C" void mpi_iprobe_f08_(MPI_Fint*, MPI_Fint*, MPI_Fint*, Logical*, MPI_Fint*, MPI_Fint*)
    __attribute__((alias("ompi_iprobe_f")));
extern "C" void mpi_improbe_f08_(MPI_Fint*, MPI_Fint*, MPI_Fint*, Logical*, MPI_Fint*, MPI_Fint*,
                                 MPI_Fint*) __attribute__((alias("ompi_improbe_f")));

// ---- Collectives --------------------------------------------------------------------------
// A blocking collective returns only ierr; its non-blocking form also a request.
// MPI_<NAME> and MPI_I<NAME>: the blocking and the non-blocking form of one collective, whose
// own arguments (PARAMS and ARGS, parenthesised) come before the communicator.
#define LOOM_UNPAREN(...) __VA_ARGS__
#define LOOM_FORTRAN_COLLECTIVES(name, NAME, Cname, PARAMS, ARGS)                             \
  LOOM_FORTRAN(name, MPI_##NAME, (LOOM_UNPAREN PARAMS, MPI_Fint * comm, MPI_Fint * ierr)) {   \
    *ierr = MPI_##Cname(LOOM_UNPAREN ARGS, c_comm(comm));                                     \
  }                                                                                           \
  LOOM_FORTRAN(i##name, MPI_I##NAME,                                                          \
               (LOOM_UNPAREN PARAMS, MPI_Fint * comm, MPI_Fint * request, MPI_Fint * ierr)) { \
    MPI_Request c_request = MPI_REQUEST_NULL;                                                 \
    *ierr = MPI_I##name(LOOM_UNPAREN ARGS, c_comm(comm), &c_request);                         \
    if (*ierr == MPI_SUCCESS) *request = PMPI_Request_c2f(c_request);                         \
  }

// clang-format off
#define LOOM_UNIFORM_PARAMS char *sendbuf, MPI_Fint *sendcount, MPI_Fint *sendtype, \
    char *recvbuf, MPI_Fint *recvcount, MPI_Fint *recvtype
#define LOOM_UNIFORM_ARGS c_collective_buffer(sendbuf), *sendcount, c_type(sendtype), \
    c_collective_buffer(recvbuf), *recvcount, c_type(recvtype)
#define LOOM_V_PARAMS char *sendbuf, MPI_Fint *sendcounts, MPI_Fint *sdispls, MPI_Fint *sendtype, \
    char *recvbuf, MPI_Fint *recvcounts, MPI_Fint *rdispls, MPI_Fint *recvtype
#define LOOM_V_ARGS c_collective_buffer(sendbuf), sendcounts, sdispls, c_type(sendtype), \
    c_collective_buffer(recvbuf), recvcounts, rdispls, c_type(recvtype)
#define LOOM_GATHERV_PARAMS char *sendbuf, MPI_Fint *sendcount, MPI_Fint *sendtype, \
    char *recvbuf, MPI_Fint *recvcounts, MPI_Fint *displs, MPI_Fint *recvtype
#define LOOM_GATHERV_ARGS c_collective_buffer(sendbuf), *sendcount, c_type(sendtype), \
    c_collective_buffer(recvbuf), recvcounts, displs, c_type(recvtype)
#define LOOM_SCATTERV_PARAMS char *sendbuf, MPI_Fint *sendcounts, MPI_Fint *displs, \
    MPI_Fint *sendtype, char *recvbuf, MPI_Fint *recvcount, MPI_Fint *recvtype
#define LOOM_SCATTERV_ARGS c_collective_buffer(sendbuf), sendcounts, displs, c_type(sendtype), \
    c_collective_buffer(recvbuf), *recvcount, c_type(recvtype)

// Every process takes part alike:
LOOM_FORTRAN_COLLECTIVES(alltoall, ALLTOALL, Alltoall, (LOOM_UNIFORM_PARAMS), (LOOM_UNIFORM_ARGS))
LOOM_FORTRAN_COLLECTIVES(allgather, ALLGATHER, Allgather, (LOOM_UNIFORM_PARAMS), (LOOM_UNIFORM_ARGS))
LOOM_FORTRAN_COLLECTIVES(neighbor_alltoall, NEIGHBOR_ALLTOALL, Neighbor_alltoall, (LOOM_UNIFORM_PARAMS), (LOOM_UNIFORM_ARGS))
LOOM_FORTRAN_COLLECTIVES(neighbor_allgather, NEIGHBOR_ALLGATHER, Neighbor_allgather, (LOOM_UNIFORM_PARAMS), (LOOM_UNIFORM_ARGS))
LOOM_FORTRAN_COLLECTIVES(alltoallv, ALLTOALLV, Alltoallv, (LOOM_V_PARAMS), (LOOM_V_ARGS))
LOOM_FORTRAN_COLLECTIVES(neighbor_alltoallv, NEIGHBOR_ALLTOALLV, Neighbor_alltoallv, (LOOM_V_PARAMS), (LOOM_V_ARGS))
LOOM_FORTRAN_COLLECTIVES(allgatherv, ALLGATHERV, Allgatherv, (LOOM_GATHERV_PARAMS), (LOOM_GATHERV_ARGS))
LOOM_FORTRAN_COLLECTIVES(neighbor_allgatherv, NEIGHBOR_ALLGATHERV, Neighbor_allgatherv, (LOOM_GATHERV_PARAMS), (LOOM_GATHERV_ARGS))
// One root sends or receives for all:
LOOM_FORTRAN_COLLECTIVES(gather, GATHER, Gather, (LOOM_UNIFORM_PARAMS, MPI_Fint* root), (LOOM_UNIFORM_ARGS, *root))
LOOM_FORTRAN_COLLECTIVES(scatter, SCATTER, Scatter, (LOOM_UNIFORM_PARAMS, MPI_Fint* root), (LOOM_UNIFORM_ARGS, *root))
LOOM_FORTRAN_COLLECTIVES(gatherv, GATHERV, Gatherv, (LOOM_GATHERV_PARAMS, MPI_Fint* root), (LOOM_GATHERV_ARGS, *root))
LOOM_FORTRAN_COLLECTIVES(scatterv, SCATTERV, Scatterv, (LOOM_SCATTERV_PARAMS, MPI_Fint* root), (LOOM_SCATTERV_ARGS, *root))
LOOM_FORTRAN_COLLECTIVES(bcast, BCAST, Bcast, (char* buffer, MPI_Fint* count, MPI_Fint* type, MPI_Fint* root), (c_buffer(buffer), *count, c_type(type), *root))
// clang-format on

// The w forms convert their arrays of datatypes (not the send side's with MPI_IN_PLACE,
// where the user need not pass one). Where Loom serves a non-blocking one it keeps copies of
// its own; where the host runs it, the converted arrays live until the request completes.
#define LOOM_FORTRAN_W_CONVERT(blocks)                                              \
  const MPI_Comm c = c_comm(comm);                                                  \
  int sends = 0, receives = 0;                                                      \
  blocks(c, &sends, &receives);                                                     \
  const bool in_place = c_collective_buffer(sendbuf) == MPI_IN_PLACE;               \
  std::vector<MPI_Datatype> c_sendtypes = c_types(sendtypes, in_place ? 0 : sends); \
  std::vector<MPI_Datatype> c_recvtypes = c_types(recvtypes, receives);
#define LOOM_FORTRAN_W_ARGS                                                                   \
  c_collective_buffer(sendbuf), sendcounts, sdispls, in_place ? nullptr : c_sendtypes.data(), \
      c_collective_buffer(recvbuf), recvcounts, rdispls, c_recvtypes.data(), c
#define LOOM_FORTRAN_W(name, NAME, Displacement, blocks, call)                                   \
  LOOM_FORTRAN(name, NAME,                                                                       \
               (char* sendbuf, MPI_Fint* sendcounts, Displacement* sdispls, MPI_Fint* sendtypes, \
                char* recvbuf, MPI_Fint* recvcounts, Displacement* rdispls, MPI_Fint* recvtypes, \
                MPI_Fint* comm, MPI_Fint* ierr)) {                                               \
    LOOM_FORTRAN_W_CONVERT(blocks)                                                               \
    *ierr = call(LOOM_FORTRAN_W_ARGS);                                                           \
  }
#define LOOM_FORTRAN_IW(name, NAME, Displacement, blocks, call)                                  \
  LOOM_FORTRAN(name, NAME,                                                                       \
               (char* sendbuf, MPI_Fint* sendcounts, Displacement* sdispls, MPI_Fint* sendtypes, \
                char* recvbuf, MPI_Fint* recvcounts, Displacement* rdispls, MPI_Fint* recvtypes, \
                MPI_Fint* comm, MPI_Fint* request, MPI_Fint* ierr)) {                            \
    LOOM_FORTRAN_W_CONVERT(blocks)                                                               \
    MPI_Request c_request = MPI_REQUEST_NULL;                                                    \
    *ierr = call(LOOM_FORTRAN_W_ARGS, &c_request);                                               \
    if (*ierr != MPI_SUCCESS) return;                                                            \
    if (!loom::mpi::is_tracked(c_request))                                                       \
      loom::mpi::track_request(c_request, std::make_unique<KeptTypeArrays>(                      \
                                              std::move(c_sendtypes), std::move(c_recvtypes)));  \
    *request = PMPI_Request_c2f(c_request);                                                      \
  }
LOOM_FORTRAN_W(alltoallw, MPI_ALLTOALLW, MPI_Fint, alltoallw_blocks, MPI_Alltoallw)
LOOM_FORTRAN_IW(ialltoallw, MPI_IALLTOALLW, MPI_Fint, alltoallw_blocks, MPI_Ialltoallw)
LOOM_FORTRAN_W(neighbor_alltoallw, MPI_NEIGHBOR_ALLTOALLW, MPI_Aint, neighbour_blocks,
               MPI_Neighbor_alltoallw)
LOOM_FORTRAN_IW(ineighbor_alltoallw, MPI_INEIGHBOR_ALLTOALLW, MPI_Aint, neighbour_blocks,
                MPI_Ineighbor_alltoallw)
