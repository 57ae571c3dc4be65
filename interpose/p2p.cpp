// Point-to-point family: entry points. A contiguous message to another process is decided inline
// and goes straight to the host; everything else is served by ops/p2p.hpp.
#include "ops/p2p.hpp"
#include "mpi/host.hpp"

using loom::mpi::host;
using loom::ops::passes_through;

extern "C" int MPI_Send(const void* buf, int count, MPI_Datatype type, int dest, int tag,
                        MPI_Comm comm) {
  if (passes_through(buf, type, comm, dest)) return host().Send(buf, count, type, dest, tag, comm);
  return loom::ops::send(buf, count, type, dest, tag, comm);
}

extern "C" int MPI_Ssend(const void* buf, int count, MPI_Datatype type, int dest, int tag,
                         MPI_Comm comm) {
  if (passes_through(buf, type, comm, dest)) return host().Ssend(buf, count, type, dest, tag, comm);
  return loom::ops::ssend(buf, count, type, dest, tag, comm);
}

extern "C" int MPI_Rsend(const void* buf, int count, MPI_Datatype type, int dest, int tag,
                         MPI_Comm comm) {
  if (passes_through(buf, type, comm, dest)) return host().Rsend(buf, count, type, dest, tag, comm);
  return loom::ops::rsend(buf, count, type, dest, tag, comm);
}

extern "C" int MPI_Bsend(const void* buf, int count, MPI_Datatype type, int dest, int tag,
                         MPI_Comm comm) {
  if (passes_through(buf, type, comm, dest)) return host().Bsend(buf, count, type, dest, tag, comm);
  return loom::ops::bsend(buf, count, type, dest, tag, comm);
}

extern "C" int MPI_Isend(const void* buf, int count, MPI_Datatype type, int dest, int tag,
                         MPI_Comm comm, MPI_Request* request) {
  if (passes_through(buf, type, comm, dest))
    return host().Isend(buf, count, type, dest, tag, comm, request);
  return loom::ops::isend(buf, count, type, dest, tag, comm, request);
}

extern "C" int MPI_Issend(const void* buf, int count, MPI_Datatype type, int dest, int tag,
                          MPI_Comm comm, MPI_Request* request) {
  if (passes_through(buf, type, comm, dest))
    return host().Issend(buf, count, type, dest, tag, comm, request);
  return loom::ops::issend(buf, count, type, dest, tag, comm, request);
}

extern "C" int MPI_Irsend(const void* buf, int count, MPI_Datatype type, int dest, int tag,
                          MPI_Comm comm, MPI_Request* request) {
  if (passes_through(buf, type, comm, dest))
    return host().Irsend(buf, count, type, dest, tag, comm, request);
  return loom::ops::irsend(buf, count, type, dest, tag, comm, request);
}

extern "C" int MPI_Ibsend(const void* buf, int count, MPI_Datatype type, int dest, int tag,
                          MPI_Comm comm, MPI_Request* request) {
  if (passes_through(buf, type, comm, dest))
    return host().Ibsend(buf, count, type, dest, tag, comm, request);
  return loom::ops::ibsend(buf, count, type, dest, tag, comm, request);
}

extern "C" int MPI_Send_init(const void* buf, int count, MPI_Datatype type, int dest, int tag,
                             MPI_Comm comm, MPI_Request* request) {
  return loom::ops::send_init(buf, count, type, dest, tag, comm, request);
}

extern "C" int MPI_Ssend_init(const void* buf, int count, MPI_Datatype type, int dest, int tag,
                              MPI_Comm comm, MPI_Request* request) {
  return loom::ops::ssend_init(buf, count, type, dest, tag, comm, request);
}

extern "C" int MPI_Rsend_init(const void* buf, int count, MPI_Datatype type, int dest, int tag,
                              MPI_Comm comm, MPI_Request* request) {
  return loom::ops::rsend_init(buf, count, type, dest, tag, comm, request);
}

extern "C" int MPI_Bsend_init(const void* buf, int count, MPI_Datatype type, int dest, int tag,
                              MPI_Comm comm, MPI_Request* request) {
  return loom::ops::bsend_init(buf, count, type, dest, tag, comm, request);
}

extern "C" int MPI_Recv(void* buf, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm,
                        MPI_Status* status) {
  if (passes_through(buf, type, comm, source))
    return host().Recv(buf, count, type, source, tag, comm, status);
  return loom::ops::recv(buf, count, type, source, tag, comm, status);
}

extern "C" int MPI_Irecv(void* buf, int count, MPI_Datatype type, int source, int tag,
                         MPI_Comm comm, MPI_Request* request) {
  if (passes_through(buf, type, comm, source))
    return host().Irecv(buf, count, type, source, tag, comm, request);
  return loom::ops::irecv(buf, count, type, source, tag, comm, request);
}

extern "C" int MPI_Recv_init(void* buf, int count, MPI_Datatype type, int source, int tag,
                             MPI_Comm comm, MPI_Request* request) {
  return loom::ops::recv_init(buf, count, type, source, tag, comm, request);
}

extern "C" int MPI_Sendrecv(const void* sendbuf, int sendcount, MPI_Datatype sendtype, int dest,
                            int sendtag, void* recvbuf, int recvcount, MPI_Datatype recvtype,
                            int source, int recvtag, MPI_Comm comm, MPI_Status* status) {
  return loom::ops::sendrecv(sendbuf, sendcount, sendtype, dest, sendtag, recvbuf, recvcount,
                             recvtype, source, recvtag, comm, status);
}

extern "C" int MPI_Sendrecv_replace(void* buf, int count, MPI_Datatype type, int dest, int sendtag,
                                    int source, int recvtag, MPI_Comm comm, MPI_Status* status) {
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
