// Point-to-point family: entry points. A contiguous message to another process is decided inline,
// counted and goes straight to the host; everything else is served by ops/p2p.hpp.
#include "ops/p2p.hpp"

#include "base/bytes.hpp"
#include "mpi/host.hpp"

using loom::mpi::host;
using loom::ops::passes_through;

// The four send modes share their arguments: MPI_<Mode>send, MPI_I<mode>send and
// MPI_<Mode>send_init decide the common case inline: a persistent request of a plain type made
// and freed every iteration cost measurably more through Loom's out-of-line route
// (docs/p2p.md, "What goes to the host").
#define LOOM_SEND_PARAMS \
  const void *buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm
#define LOOM_SEND_ARGS buf, count, type, dest, tag, comm
#define LOOM_SEND_MODE(Mode, mode)                                                       \
  extern "C" int MPI_##Mode(LOOM_SEND_PARAMS) {                                          \
    if (passes_through(buf, type, comm, dest))                                           \
      return loom::ops::count_plain_send(), host().Mode(LOOM_SEND_ARGS);                 \
    return loom::ops::mode(LOOM_SEND_ARGS);                                              \
  }                                                                                      \
  extern "C" int MPI_I##mode(LOOM_SEND_PARAMS, MPI_Request* request) {                   \
    if (passes_through(buf, type, comm, dest))                                           \
      return loom::ops::count_plain_send(), host().I##mode(LOOM_SEND_ARGS, request);     \
    return loom::ops::i##mode(LOOM_SEND_ARGS, request);                                  \
  }                                                                                      \
  extern "C" int MPI_##Mode##_init(LOOM_SEND_PARAMS, MPI_Request* request) {             \
    if (passes_through(buf, type, comm, dest))                                           \
      return loom::ops::count_plain_send(), host().Mode##_init(LOOM_SEND_ARGS, request); \
    return loom::ops::mode##_init(LOOM_SEND_ARGS, request);                              \
  }

LOOM_SEND_MODE(Send, send)
LOOM_SEND_MODE(Ssend, ssend)
LOOM_SEND_MODE(Rsend, rsend)
// The host copies a buffered send into the attached buffer before returning, so the staging
// buffer can go at once (the packed size never exceeds MPI_Pack_size's answer).
LOOM_SEND_MODE(Bsend, bsend)

extern "C" int MPI_Recv(void* buf, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm,
                        MPI_Status* status) {
  if (passes_through(buf, type, comm, source))
    return loom::ops::count_plain_recv(), host().Recv(buf, count, type, source, tag, comm, status);
  return loom::ops::recv(buf, count, type, source, tag, comm, status);
}

extern "C" int MPI_Irecv(void* buf, int count, MPI_Datatype type, int source, int tag,
                         MPI_Comm comm, MPI_Request* request) {
  if (passes_through(buf, type, comm, source))
    return loom::ops::count_plain_recv(),
           host().Irecv(buf, count, type, source, tag, comm, request);
  return loom::ops::irecv(buf, count, type, source, tag, comm, request);
}

extern "C" int MPI_Recv_init(void* buf, int count, MPI_Datatype type, int source, int tag,
                             MPI_Comm comm, MPI_Request* request) {
  if (passes_through(buf, type, comm, source))
    return loom::ops::count_plain_recv(),
           host().Recv_init(buf, count, type, source, tag, comm, request);
  return loom::ops::recv_init(buf, count, type, source, tag, comm, request);
}

extern "C" int MPI_Sendrecv(const void* sendbuf, int sendcount, MPI_Datatype sendtype, int dest,
                            int sendtag, void* recvbuf, int recvcount, MPI_Datatype recvtype,
                            int source, int recvtag, MPI_Comm comm, MPI_Status* status) {
  if (passes_through(sendbuf, sendtype, comm, dest) &&
      passes_through(recvbuf, recvtype, comm, source))
    return loom::ops::count_plain_send(), loom::ops::count_plain_recv(),
           host().Sendrecv(sendbuf, sendcount, sendtype, dest, sendtag, recvbuf, recvcount,
                           recvtype, source, recvtag, comm, status);
  return loom::ops::sendrecv(sendbuf, sendcount, sendtype, dest, sendtag, recvbuf, recvcount,
                             recvtype, source, recvtag, comm, status);
}

extern "C" int MPI_Sendrecv_replace(void* buf, int count, MPI_Datatype type, int dest, int sendtag,
                                    int source, int recvtag, MPI_Comm comm, MPI_Status* status) {
  if (passes_through(buf, type, comm, dest) && passes_through(buf, type, comm, source))
    return loom::ops::count_plain_send(), loom::ops::count_plain_recv(),
           host().Sendrecv_replace(buf, count, type, dest, sendtag, source, recvtag, comm, status);
  return loom::ops::sendrecv_replace(buf, count, type, dest, sendtag, source, recvtag, comm,
                                     status);
}

extern "C" int MPI_Mrecv(void* buf, int count, MPI_Datatype type, MPI_Message* message,
                         MPI_Status* status) {
  return loom::ops::mrecv(buf, count, type, message, status);
}

extern "C" int MPI_Imrecv(void* buf, int count, MPI_Datatype type, MPI_Message* message,
                          MPI_Request* request) {
  return loom::ops::imrecv(buf, count, type, message, request);
}

extern "C" int MPI_Iprobe(int source, int tag, MPI_Comm comm, int* flag, MPI_Status* status) {
  return loom::ops::iprobe(source, tag, comm, flag, status);
}

extern "C" int MPI_Probe(int source, int tag, MPI_Comm comm, MPI_Status* status) {
  return loom::ops::probe(source, tag, comm, status);
}

extern "C" int MPI_Improbe(int source, int tag, MPI_Comm comm, int* flag, MPI_Message* message,
                           MPI_Status* status) {
  return loom::ops::improbe(source, tag, comm, flag, message, status);
}

extern "C" int MPI_Mprobe(int source, int tag, MPI_Comm comm, MPI_Message* message,
                          MPI_Status* status) {
  return loom::ops::mprobe(source, tag, comm, message, status);
}

extern "C" int MPI_Cancel(MPI_Request* request) {
  return loom::ops::cancel(request);
}

#if MPI_VERSION >= 4
// MPI-4's non-blocking send-receive, and the large-count forms (MPICH 4 has them; mpi4py 4
// calls nothing else): a count that fits an int makes the classic call, anything larger goes
// to the host as written.
using loom::base::fits_int;

#define LOOM_SEND_C_PARAMS \
  const void *buf, MPI_Count count, MPI_Datatype type, int dest, int tag, MPI_Comm comm
#define LOOM_SEND_C_ARGS(count) buf, count, type, dest, tag, comm
#define LOOM_SEND_MODE_C(Mode, mode)                                                     \
  extern "C" int MPI_##Mode##_c(LOOM_SEND_C_PARAMS) {                                    \
    if (!fits_int(count)) return PMPI_##Mode##_c(LOOM_SEND_C_ARGS(count));               \
    return MPI_##Mode(LOOM_SEND_C_ARGS(static_cast<int>(count)));                        \
  }                                                                                      \
  extern "C" int MPI_I##mode##_c(LOOM_SEND_C_PARAMS, MPI_Request* request) {             \
    if (!fits_int(count)) return PMPI_I##mode##_c(LOOM_SEND_C_ARGS(count), request);     \
    return MPI_I##mode(LOOM_SEND_C_ARGS(static_cast<int>(count)), request);              \
  }                                                                                      \
  extern "C" int MPI_##Mode##_init_c(LOOM_SEND_C_PARAMS, MPI_Request* request) {         \
    if (!fits_int(count)) return PMPI_##Mode##_init_c(LOOM_SEND_C_ARGS(count), request); \
    return MPI_##Mode##_init(LOOM_SEND_C_ARGS(static_cast<int>(count)), request);        \
  }

LOOM_SEND_MODE_C(Send, send)
LOOM_SEND_MODE_C(Ssend, ssend)
LOOM_SEND_MODE_C(Rsend, rsend)
LOOM_SEND_MODE_C(Bsend, bsend)

extern "C" int MPI_Recv_c(void* buf, MPI_Count count, MPI_Datatype type, int source, int tag,
                          MPI_Comm comm, MPI_Status* status) {
  if (!fits_int(count)) return PMPI_Recv_c(buf, count, type, source, tag, comm, status);
  return MPI_Recv(buf, static_cast<int>(count), type, source, tag, comm, status);
}

extern "C" int MPI_Irecv_c(void* buf, MPI_Count count, MPI_Datatype type, int source, int tag,
                           MPI_Comm comm, MPI_Request* request) {
  if (!fits_int(count)) return PMPI_Irecv_c(buf, count, type, source, tag, comm, request);
  return MPI_Irecv(buf, static_cast<int>(count), type, source, tag, comm, request);
}

extern "C" int MPI_Recv_init_c(void* buf, MPI_Count count, MPI_Datatype type, int source, int tag,
                               MPI_Comm comm, MPI_Request* request) {
  if (!fits_int(count)) return PMPI_Recv_init_c(buf, count, type, source, tag, comm, request);
  return MPI_Recv_init(buf, static_cast<int>(count), type, source, tag, comm, request);
}

extern "C" int MPI_Sendrecv_c(const void* sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                              int dest, int sendtag, void* recvbuf, MPI_Count recvcount,
                              MPI_Datatype recvtype, int source, int recvtag, MPI_Comm comm,
                              MPI_Status* status) {
  if (!fits_int(sendcount) || !fits_int(recvcount))
    return PMPI_Sendrecv_c(sendbuf, sendcount, sendtype, dest, sendtag, recvbuf, recvcount,
                           recvtype, source, recvtag, comm, status);
  return MPI_Sendrecv(sendbuf, static_cast<int>(sendcount), sendtype, dest, sendtag, recvbuf,
                      static_cast<int>(recvcount), recvtype, source, recvtag, comm, status);
}

extern "C" int MPI_Sendrecv_replace_c(void* buf, MPI_Count count, MPI_Datatype type, int dest,
                                      int sendtag, int source, int recvtag, MPI_Comm comm,
                                      MPI_Status* status) {
  if (!fits_int(count))
    return PMPI_Sendrecv_replace_c(buf, count, type, dest, sendtag, source, recvtag, comm, status);
  return MPI_Sendrecv_replace(buf, static_cast<int>(count), type, dest, sendtag, source, recvtag,
                              comm, status);
}

extern "C" int MPI_Isendrecv(const void* sendbuf, int sendcount, MPI_Datatype sendtype, int dest,
                             int sendtag, void* recvbuf, int recvcount, MPI_Datatype recvtype,
                             int source, int recvtag, MPI_Comm comm, MPI_Request* request) {
  return loom::ops::isendrecv(sendbuf, sendcount, sendtype, dest, sendtag, recvbuf, recvcount,
                              recvtype, source, recvtag, comm, request);
}
extern "C" int MPI_Isendrecv_replace(void* buf, int count, MPI_Datatype type, int dest, int sendtag,
                                     int source, int recvtag, MPI_Comm comm, MPI_Request* request) {
  return loom::ops::isendrecv_replace(buf, count, type, dest, sendtag, source, recvtag, comm,
                                      request);
}
extern "C" int MPI_Isendrecv_c(const void* sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                               int dest, int sendtag, void* recvbuf, MPI_Count recvcount,
                               MPI_Datatype recvtype, int source, int recvtag, MPI_Comm comm,
                               MPI_Request* request) {
  if (!fits_int(sendcount) || !fits_int(recvcount))
    return PMPI_Isendrecv_c(sendbuf, sendcount, sendtype, dest, sendtag, recvbuf, recvcount,
                            recvtype, source, recvtag, comm, request);
  return MPI_Isendrecv(sendbuf, static_cast<int>(sendcount), sendtype, dest, sendtag, recvbuf,
                       static_cast<int>(recvcount), recvtype, source, recvtag, comm, request);
}
extern "C" int MPI_Isendrecv_replace_c(void* buf, MPI_Count count, MPI_Datatype type, int dest,
                                       int sendtag, int source, int recvtag, MPI_Comm comm,
                                       MPI_Request* request) {
  if (!fits_int(count))
    return PMPI_Isendrecv_replace_c(buf, count, type, dest, sendtag, source, recvtag, comm,
                                    request);
  return MPI_Isendrecv_replace(buf, static_cast<int>(count), type, dest, sendtag, source, recvtag,
                               comm, request);
}
extern "C" int MPI_Mrecv_c(void* buf, MPI_Count count, MPI_Datatype type, MPI_Message* message,
                           MPI_Status* status) {
  if (!fits_int(count)) return PMPI_Mrecv_c(buf, count, type, message, status);
  return MPI_Mrecv(buf, static_cast<int>(count), type, message, status);
}

extern "C" int MPI_Imrecv_c(void* buf, MPI_Count count, MPI_Datatype type, MPI_Message* message,
                            MPI_Request* request) {
  if (!fits_int(count)) return PMPI_Imrecv_c(buf, count, type, message, request);
  return MPI_Imrecv(buf, static_cast<int>(count), type, message, request);
}
#endif
