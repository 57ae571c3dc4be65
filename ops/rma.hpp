// One-sided communication: what Loom does with a put, get or accumulate the interposer did not pass
// straight to the host (docs/rma.md).
// - A shared-memory window (MPI_Win_allocate_shared; Loom maps every target's segment with
//   MPI_Win_shared_query): a put or get of any datatypes is one strided copy by Loom's kernels
//   between the origin buffer and the target's memory, made at the call, inside an epoch the
//   host's synchronisation opened to that target. Loom's copies are ordinary stores and loads
//   like the host's own copies on such a window, so the epoch's completion and MPI_Win_sync make
//   them visible exactly as they make the host's.
// - Any other window: an origin of a non-contiguous datatype is packed at the call (the standard
//   forbids touching the origin buffer until the operation completes) and travels as one
//   contiguous operation of its basic type; a get lands in staging and is unpacked, like the
//   staging of a put released, at the completion the synchronisation mode defines (flush,
//   unlock, complete, fence). Accumulates take this path on every window: the host applies the
//   operation, so element-wise atomicity is the host's.
// Loom serves a call only when it is valid as written (origin and target of one basic type and
// equal size, the target range inside the target's segment, an epoch open to the target); any
// other call goes to the host unchanged, which reports its own error class. Request-based calls
// (MPI_Rput, ...) go to the host. Derived-type calls are counted on the `rma` line of LOOM_STATS.
#pragma once

#include <mpi.h>

#include "mpi/type_registry.hpp"
#include "ops/plain_buffer.hpp"

namespace loom::ops {

// The common case, decided inline: contiguous data on both sides, which the host serves as
// written.
[[gnu::always_inline]] inline bool rma_passes_through(const void* origin, MPI_Datatype origin_type,
                                                      MPI_Datatype target_type) {
  if (origin_type == target_type) return plain_host_buffer(origin, origin_type);
  const mpi::TypePlan* target = mpi::find_plan(target_type);
  return target && target->plan.dense() && plain_host_buffer(origin, origin_type);
}

int put(const void* origin, int origin_count, MPI_Datatype origin_type, int target_rank,
        MPI_Aint target_disp, int target_count, MPI_Datatype target_type, MPI_Win win);
int get(void* origin, int origin_count, MPI_Datatype origin_type, int target_rank,
        MPI_Aint target_disp, int target_count, MPI_Datatype target_type, MPI_Win win);
int accumulate(const void* origin, int origin_count, MPI_Datatype origin_type, int target_rank,
               MPI_Aint target_disp, int target_count, MPI_Datatype target_type, MPI_Op op,
               MPI_Win win);
int get_accumulate(const void* origin, int origin_count, MPI_Datatype origin_type, void* result,
                   int result_count, MPI_Datatype result_type, int target_rank,
                   MPI_Aint target_disp, int target_count, MPI_Datatype target_type, MPI_Op op,
                   MPI_Win win);
// Request-based operations: counted, then the host's.
int rput(const void* origin, int origin_count, MPI_Datatype origin_type, int target_rank,
         MPI_Aint target_disp, int target_count, MPI_Datatype target_type, MPI_Win win,
         MPI_Request* request);
int rget(void* origin, int origin_count, MPI_Datatype origin_type, int target_rank,
         MPI_Aint target_disp, int target_count, MPI_Datatype target_type, MPI_Win win,
         MPI_Request* request);
int raccumulate(const void* origin, int origin_count, MPI_Datatype origin_type, int target_rank,
                MPI_Aint target_disp, int target_count, MPI_Datatype target_type, MPI_Op op,
                MPI_Win win, MPI_Request* request);
int rget_accumulate(const void* origin, int origin_count, MPI_Datatype origin_type, void* result,
                    int result_count, MPI_Datatype result_type, int target_rank,
                    MPI_Aint target_disp, int target_count, MPI_Datatype target_type, MPI_Op op,
                    MPI_Win win, MPI_Request* request);

// Window life cycle: the host's call, then Loom's record of the window.
int win_create(void* base, MPI_Aint size, int disp_unit, MPI_Info info, MPI_Comm comm,
               MPI_Win* win);
int win_allocate(MPI_Aint size, int disp_unit, MPI_Info info, MPI_Comm comm, void* baseptr,
                 MPI_Win* win);
int win_allocate_shared(MPI_Aint size, int disp_unit, MPI_Info info, MPI_Comm comm, void* baseptr,
                        MPI_Win* win);
int win_create_dynamic(MPI_Info info, MPI_Comm comm, MPI_Win* win);
int win_free(MPI_Win* win);

// Synchronisation: the host's call; then the epochs Loom tracks, and the completion of what Loom
// held for the operations it covers.
int win_fence(int assert_flags, MPI_Win win);
int win_start(MPI_Group group, int assert_flags, MPI_Win win);
int win_complete(MPI_Win win);
int win_lock(int lock_type, int rank, int assert_flags, MPI_Win win);
int win_unlock(int rank, MPI_Win win);
int win_lock_all(int assert_flags, MPI_Win win);
int win_unlock_all(MPI_Win win);
int win_flush(int rank, MPI_Win win);
int win_flush_all(MPI_Win win);
int win_flush_local(int rank, MPI_Win win);
int win_flush_local_all(MPI_Win win);

}  // namespace loom::ops
