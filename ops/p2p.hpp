// Point-to-point operations: what Loom does with a message the interposer did not pass straight to
// the host. A message whose datatype Loom has a (non-dense) plan for, and for which the method
// model prefers packing, is packed into a staging buffer and travels as `bytes` MPI_PACKED on the
// user's communicator with the user's tag: one ordinary message, so matching, wildcards, ordering
// and the receiver's choice of type are untouched. A device buffer is always staged: packed, or,
// for a small send the model leaves to the host, copied to the host whole and sent with its type. A
// message to oneself goes through the self transport (transport/select.hpp). Each function has its
// MPI namesake's arguments and result.
#pragma once

#include <mpi.h>

#include "ops/plain_buffer.hpp"
#include "transport/self_channel.hpp"

namespace loom::ops {

// The common case, decided inline before anything else: a contiguous or basic datatype
// (nothing to pack) to or from another process (no self channel to serve it). A wildcard
// source is not: it must demote the self channel.
[[gnu::always_inline]] inline bool passes_through(const void* buf, MPI_Datatype type, MPI_Comm comm,
                                                  int peer) {
  return peer != MPI_ANY_SOURCE && plain_host_buffer(buf, type) &&
         !transport::self_channel(comm, peer);
}

// The common case's count, as it passes (a thread-local add): every message is counted on its
// route (LOOM_STATS' p2p line).
[[gnu::always_inline]] inline void count_plain_send() {
  runtime::count(transport::kSendPlain);
}
[[gnu::always_inline]] inline void count_plain_recv() {
  runtime::count(transport::kRecvPlain);
}

int send(const void* buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm);
int ssend(const void* buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm);
int rsend(const void* buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm);
int bsend(const void* buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm);
int isend(const void* buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm,
          MPI_Request* request);
int issend(const void* buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm,
           MPI_Request* request);
int irsend(const void* buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm,
           MPI_Request* request);
int ibsend(const void* buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm,
           MPI_Request* request);
int send_init(const void* buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm,
              MPI_Request* request);
int ssend_init(const void* buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm,
               MPI_Request* request);
int rsend_init(const void* buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm,
               MPI_Request* request);
int bsend_init(const void* buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm,
               MPI_Request* request);
int recv(void* buf, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm,
         MPI_Status* status);
int irecv(void* buf, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm,
          MPI_Request* request);
int recv_init(void* buf, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm,
              MPI_Request* request);
int sendrecv(const void* sendbuf, int sendcount, MPI_Datatype sendtype, int dest, int sendtag,
             void* recvbuf, int recvcount, MPI_Datatype recvtype, int source, int recvtag,
             MPI_Comm comm, MPI_Status* status);
int sendrecv_replace(void* buf, int count, MPI_Datatype type, int dest, int sendtag, int source,
                     int recvtag, MPI_Comm comm, MPI_Status* status);
#if MPI_VERSION >= 4
int isendrecv(const void* sendbuf, int sendcount, MPI_Datatype sendtype, int dest, int sendtag,
              void* recvbuf, int recvcount, MPI_Datatype recvtype, int source, int recvtag,
              MPI_Comm comm, MPI_Request* request);
int isendrecv_replace(void* buf, int count, MPI_Datatype type, int dest, int sendtag, int source,
                      int recvtag, MPI_Comm comm, MPI_Request* request);
#endif
int mrecv(void* buf, int count, MPI_Datatype type, MPI_Message* message, MPI_Status* status);
int imrecv(void* buf, int count, MPI_Datatype type, MPI_Message* message, MPI_Request* request);
int iprobe(int source, int tag, MPI_Comm comm, int* flag, MPI_Status* status);
int probe(int source, int tag, MPI_Comm comm, MPI_Status* status);
int improbe(int source, int tag, MPI_Comm comm, int* flag, MPI_Message* message,
            MPI_Status* status);
int mprobe(int source, int tag, MPI_Comm comm, MPI_Message* message, MPI_Status* status);
int cancel(MPI_Request* request);

}  // namespace loom::ops
