// Loom's non-blocking operations. The user always holds the host MPI's own request
// handle, so every MPI call that takes a request accepts it and arrays may mix Loom's
// requests with the host's. Loom remembers, per handle, what must happen when the host
// request completes (unpack a staging buffer, release it) and runs it inside the
// intercepted completion calls (Wait*, Test*, Request_get_status, Request_free).
#pragma once

#include <mpi.h>

#include <cstdint>
#include <memory>

namespace loom::mpi {

class PendingOp {
 public:
  virtual ~PendingOp() = default;
  // The host request completed with `status` (never MPI_STATUS_IGNORE; it may be
  // rewritten for the user). Returns an MPI error code for the user, or MPI_SUCCESS.
  // Runs exactly once per completion: once per start for persistent requests.
  virtual int on_complete(MPI_Status* status) = 0;
  // Persistent requests only: runs at MPI_Start/Startall before the host starts it.
  virtual int on_start() { return MPI_SUCCESS; }
  // Persistent requests only: runs once the host has started `request`.
  virtual void on_started(MPI_Request /*request*/) {}
  virtual bool persistent() const { return false; }
};

// Registers `op` for the host request `request`, which the caller hands to the user.
// Safe from any thread.
void track_request(MPI_Request request, std::unique_ptr<PendingOp> op);

// Keeps `payload` alive until `request` completes (or, freed while active, until Loom reaps it),
// beside any operation already registered for it: arrays that a non-blocking call handed the
// host by pointer, which the host may read until completion.
void keep_until_complete(MPI_Request request, std::shared_ptr<const void> payload);

// The same for a persistent request, which the host may read from at every start: `payload`
// lives until the user frees `persistent_request` (and, freed while active, it completes).
void keep_until_freed(MPI_Request persistent_request, std::shared_ptr<const void> payload);

// Whether Loom has an operation registered for `request`.
bool is_tracked(MPI_Request request);

// Hands Loom an active host request nobody will complete: `op` runs when a later
// completion call (or MPI_Finalize) finds it done.
void detach_request(MPI_Request request, std::unique_ptr<PendingOp> op);

// Completes any operation whose request the user freed while it was still active.
void reap_detached_requests(bool wait_for_all);

// MPI_Wait ... MPI_Startall: each has its MPI namesake's arguments and result, and goes
// straight to the host while no Loom request is pending.
int wait(MPI_Request* request, MPI_Status* status);
int test(MPI_Request* request, int* flag, MPI_Status* status);
int waitall(int count, MPI_Request requests[], MPI_Status statuses[]);
int testall(int count, MPI_Request requests[], int* flag, MPI_Status statuses[]);
int waitany(int count, MPI_Request requests[], int* index, MPI_Status* status);
int testany(int count, MPI_Request requests[], int* index, int* flag, MPI_Status* status);
int waitsome(int incount, MPI_Request requests[], int* outcount, int indices[],
             MPI_Status statuses[]);
int testsome(int incount, MPI_Request requests[], int* outcount, int indices[],
             MPI_Status statuses[]);
int request_get_status(MPI_Request request, int* flag, MPI_Status* status);

// Calls of the MPI_Wait family so far in this process: an exchange message's trial sample
// (ops/method.hpp) counts only if one ran between its post and the next, so that a host whose
// MPI_Isend returns at once and packs inside the wait is timed for that work too.
uint64_t wait_calls();
int request_free(MPI_Request* request);
int start(MPI_Request* request);
int startall(int count, MPI_Request requests[]);

}  // namespace loom::mpi
