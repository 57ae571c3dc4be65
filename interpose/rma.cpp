// One-sided family: entry points. A put, get or accumulate of contiguous data on both sides is
// decided inline and goes straight to the host; everything else, and the window and
// synchronisation calls Loom tracks, is served by ops/rma.hpp.
#include "ops/rma.hpp"

#include "mpi/host.hpp"
#include "runtime/runtime.hpp"

using loom::mpi::host;
using loom::ops::rma_passes_through;
using loom::runtime::config;

extern "C" int MPI_Put(const void* origin, int origin_count, MPI_Datatype origin_type,
                       int target_rank, MPI_Aint target_disp, int target_count,
                       MPI_Datatype target_type, MPI_Win win) {
  if (rma_passes_through(origin, origin_type, target_type))
    return host().Put(origin, origin_count, origin_type, target_rank, target_disp, target_count,
                      target_type, win);
  return loom::ops::put(origin, origin_count, origin_type, target_rank, target_disp, target_count,
                        target_type, win);
}

extern "C" int MPI_Get(void* origin, int origin_count, MPI_Datatype origin_type, int target_rank,
                       MPI_Aint target_disp, int target_count, MPI_Datatype target_type,
                       MPI_Win win) {
  if (rma_passes_through(origin, origin_type, target_type))
    return host().Get(origin, origin_count, origin_type, target_rank, target_disp, target_count,
                      target_type, win);
  return loom::ops::get(origin, origin_count, origin_type, target_rank, target_disp, target_count,
                        target_type, win);
}

extern "C" int MPI_Accumulate(const void* origin, int origin_count, MPI_Datatype origin_type,
                              int target_rank, MPI_Aint target_disp, int target_count,
                              MPI_Datatype target_type, MPI_Op op, MPI_Win win) {
  if (rma_passes_through(origin, origin_type, target_type))
    return host().Accumulate(origin, origin_count, origin_type, target_rank, target_disp,
                             target_count, target_type, op, win);
  return loom::ops::accumulate(origin, origin_count, origin_type, target_rank, target_disp,
                               target_count, target_type, op, win);
}

extern "C" int MPI_Get_accumulate(const void* origin, int origin_count, MPI_Datatype origin_type,
                                  void* result, int result_count, MPI_Datatype result_type,
                                  int target_rank, MPI_Aint target_disp, int target_count,
                                  MPI_Datatype target_type, MPI_Op op, MPI_Win win) {
  if (rma_passes_through(result, result_type, target_type) &&
      (op == MPI_NO_OP || rma_passes_through(origin, origin_type, target_type)))
    return host().Get_accumulate(origin, origin_count, origin_type, result, result_count,
                                 result_type, target_rank, target_disp, target_count, target_type,
                                 op, win);
  return loom::ops::get_accumulate(origin, origin_count, origin_type, result, result_count,
                                   result_type, target_rank, target_disp, target_count, target_type,
                                   op, win);
}

extern "C" int MPI_Rput(const void* origin, int origin_count, MPI_Datatype origin_type,
                        int target_rank, MPI_Aint target_disp, int target_count,
                        MPI_Datatype target_type, MPI_Win win, MPI_Request* request) {
  if (rma_passes_through(origin, origin_type, target_type))
    return host().Rput(origin, origin_count, origin_type, target_rank, target_disp, target_count,
                       target_type, win, request);
  return loom::ops::rput(origin, origin_count, origin_type, target_rank, target_disp, target_count,
                         target_type, win, request);
}

extern "C" int MPI_Rget(void* origin, int origin_count, MPI_Datatype origin_type, int target_rank,
                        MPI_Aint target_disp, int target_count, MPI_Datatype target_type,
                        MPI_Win win, MPI_Request* request) {
  if (rma_passes_through(origin, origin_type, target_type))
    return host().Rget(origin, origin_count, origin_type, target_rank, target_disp, target_count,
                       target_type, win, request);
  return loom::ops::rget(origin, origin_count, origin_type, target_rank, target_disp, target_count,
                         target_type, win, request);
}

extern "C" int MPI_Raccumulate(const void* origin, int origin_count, MPI_Datatype origin_type,
                               int target_rank, MPI_Aint target_disp, int target_count,
                               MPI_Datatype target_type, MPI_Op op, MPI_Win win,
                               MPI_Request* request) {
  if (rma_passes_through(origin, origin_type, target_type))
    return host().Raccumulate(origin, origin_count, origin_type, target_rank, target_disp,
                              target_count, target_type, op, win, request);
  return loom::ops::raccumulate(origin, origin_count, origin_type, target_rank, target_disp,
                                target_count, target_type, op, win, request);
}

extern "C" int MPI_Rget_accumulate(const void* origin, int origin_count, MPI_Datatype origin_type,
                                   void* result, int result_count, MPI_Datatype result_type,
                                   int target_rank, MPI_Aint target_disp, int target_count,
                                   MPI_Datatype target_type, MPI_Op op, MPI_Win win,
                                   MPI_Request* request) {
  if (rma_passes_through(result, result_type, target_type) &&
      (op == MPI_NO_OP || rma_passes_through(origin, origin_type, target_type)))
    return host().Rget_accumulate(origin, origin_count, origin_type, result, result_count,
                                  result_type, target_rank, target_disp, target_count, target_type,
                                  op, win, request);
  return loom::ops::rget_accumulate(origin, origin_count, origin_type, result, result_count,
                                    result_type, target_rank, target_disp, target_count,
                                    target_type, op, win, request);
}

// Window life cycle and synchronisation: Loom tracks the windows and epochs only when active.
extern "C" int MPI_Win_create(void* base, MPI_Aint size, int disp_unit, MPI_Info info,
                              MPI_Comm comm, MPI_Win* win) {
  if (config().disabled) return host().Win_create(base, size, disp_unit, info, comm, win);
  return loom::ops::win_create(base, size, disp_unit, info, comm, win);
}

extern "C" int MPI_Win_allocate(MPI_Aint size, int disp_unit, MPI_Info info, MPI_Comm comm,
                                void* baseptr, MPI_Win* win) {
  if (config().disabled) return host().Win_allocate(size, disp_unit, info, comm, baseptr, win);
  return loom::ops::win_allocate(size, disp_unit, info, comm, baseptr, win);
}

extern "C" int MPI_Win_allocate_shared(MPI_Aint size, int disp_unit, MPI_Info info, MPI_Comm comm,
                                       void* baseptr, MPI_Win* win) {
  if (config().disabled)
    return host().Win_allocate_shared(size, disp_unit, info, comm, baseptr, win);
  return loom::ops::win_allocate_shared(size, disp_unit, info, comm, baseptr, win);
}

extern "C" int MPI_Win_create_dynamic(MPI_Info info, MPI_Comm comm, MPI_Win* win) {
  if (config().disabled) return host().Win_create_dynamic(info, comm, win);
  return loom::ops::win_create_dynamic(info, comm, win);
}

extern "C" int MPI_Win_free(MPI_Win* win) {
  if (config().disabled) return host().Win_free(win);
  return loom::ops::win_free(win);
}

extern "C" int MPI_Win_fence(int assert_flags, MPI_Win win) {
  return loom::ops::win_fence(assert_flags, win);
}

extern "C" int MPI_Win_start(MPI_Group group, int assert_flags, MPI_Win win) {
  return loom::ops::win_start(group, assert_flags, win);
}

extern "C" int MPI_Win_complete(MPI_Win win) {
  return loom::ops::win_complete(win);
}

extern "C" int MPI_Win_lock(int lock_type, int rank, int assert_flags, MPI_Win win) {
  return loom::ops::win_lock(lock_type, rank, assert_flags, win);
}

extern "C" int MPI_Win_unlock(int rank, MPI_Win win) {
  return loom::ops::win_unlock(rank, win);
}

extern "C" int MPI_Win_lock_all(int assert_flags, MPI_Win win) {
  return loom::ops::win_lock_all(assert_flags, win);
}

extern "C" int MPI_Win_unlock_all(MPI_Win win) {
  return loom::ops::win_unlock_all(win);
}

extern "C" int MPI_Win_flush(int rank, MPI_Win win) {
  return loom::ops::win_flush(rank, win);
}

extern "C" int MPI_Win_flush_all(MPI_Win win) {
  return loom::ops::win_flush_all(win);
}

extern "C" int MPI_Win_flush_local(int rank, MPI_Win win) {
  return loom::ops::win_flush_local(rank, win);
}

extern "C" int MPI_Win_flush_local_all(MPI_Win win) {
  return loom::ops::win_flush_local_all(win);
}
