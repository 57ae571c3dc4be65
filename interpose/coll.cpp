// Collective family: entry points, each served by ops/coll.hpp (derived types packed by Loom,
// same-node neighbourhood exchanges through the shared window, the rest left to the host). Each
// collective comes in a blocking and a non-blocking form that differ only in the request.
#include "ops/coll.hpp"
#include "base/bytes.hpp"
#include "mpi/host.hpp"
#include "ops/codec_slot.hpp"
#include "ops/coll_arrays.hpp"

// MPI_<Name>(PARAMS, MPI_Comm) and MPI_I<name>(PARAMS, MPI_Comm, MPI_Request*), forwarded to
// loom::ops::<name> and loom::ops::i<name>, and the persistent form where the host has one.
// PARAMS and ARGS are parenthesised lists. CHECK, an error code, reports a null array argument
// the call reads (ops/coll_arrays.hpp; MPI_SUCCESS for the collectives without arrays).
// Each form first asks its PASSES, an inline test of the common case that the host
// serves as written (ops/coll.hpp).
#define LOOM_UNPAREN(...) __VA_ARGS__
#define LOOM_CHECKED(CHECK) \
  if (const int array_rc = (CHECK); array_rc != MPI_SUCCESS) return array_rc
// MPI_<Name>_init(PARAMS, MPI_Comm, MPI_Info, MPI_Request*), the persistent form (Open MPI's
// MPIX_<Name>_init before MPI-4), forwarded to loom::ops::i<name> as a persistent call.
#ifdef LOOM_PERSISTENT_COLLECTIVES
#define LOOM_PERSISTENT_COLLECTIVE(Name, name, PARAMS, ARGS, CHECK)                              \
  extern "C" int LOOM_PERSISTENT(Name##_init)(LOOM_UNPAREN PARAMS, MPI_Comm comm, MPI_Info info, \
                                              MPI_Request * request) {                           \
    LOOM_CHECKED(CHECK);                                                                         \
    return loom::ops::i##name(LOOM_UNPAREN ARGS, comm, loom::ops::Later{request, true, info});   \
  }
#else
#define LOOM_PERSISTENT_COLLECTIVE(Name, name, PARAMS, ARGS, CHECK)
#endif
// BLOCKING_PASSES and LATER_PASSES: inline tests of the blocking and of the non-blocking form.
// The PASSES tests name `host_call` (loom::ops::HostCall), which makes the host's call.
#define LOOM_PASSING_FORMS(Name, name, PARAMS, ARGS, CHECK, BLOCKING_PASSES, LATER_PASSES)   \
  extern "C" int MPI_##Name(LOOM_UNPAREN PARAMS, MPI_Comm comm) {                            \
    LOOM_CHECKED(CHECK);                                                                     \
    if (loom::ops::HostCall host_call; BLOCKING_PASSES)                                      \
      return host_call.run([&] { return loom::mpi::host().Name(LOOM_UNPAREN ARGS, comm); }); \
    return loom::ops::name(LOOM_UNPAREN ARGS, comm);                                         \
  }                                                                                          \
  extern "C" int MPI_I##name(LOOM_UNPAREN PARAMS, MPI_Comm comm, MPI_Request* request) {     \
    LOOM_CHECKED(CHECK);                                                                     \
    if (loom::ops::HostCall host_call; LATER_PASSES)                                         \
      return host_call.run(                                                                  \
          [&] { return loom::mpi::host().I##name(LOOM_UNPAREN ARGS, comm, request); });      \
    return loom::ops::i##name(LOOM_UNPAREN ARGS, comm, loom::ops::Later{request});           \
  }                                                                                          \
  LOOM_PERSISTENT_COLLECTIVE(Name, name, PARAMS, ARGS, CHECK)
#define LOOM_PASSING_COLLECTIVE(Name, name, PARAMS, ARGS, CHECK, PASSES) \
  LOOM_PASSING_FORMS(Name, name, PARAMS, ARGS, CHECK, PASSES, PASSES)
// Only the non-blocking form passes inline: the blocking neighbourhood all-to-alls first ask
// whether the same-node window carries the call (ops/coll_neighbour.cpp).
#define LOOM_LATER_PASSING_COLLECTIVE(Name, name, PARAMS, ARGS, CHECK, PASSES) \
  LOOM_PASSING_FORMS(Name, name, PARAMS, ARGS, CHECK, false, PASSES)
// Both sides plain; all-to-alls also without any codec requested (docs/compress.md).
#define LOOM_PLAIN_SIDES \
  loom::ops::collective_passes_through(host_call, sendbuf, sendtype, recvbuf, recvtype)
#define LOOM_PLAIN_ALLTOALL (!loom::ops::compression_requested() && LOOM_PLAIN_SIDES)
#define LOOM_PLAIN_UNIFORM                                                                       \
  loom::ops::uniform_passes_through(host_call, sendbuf, sendcount, sendtype, recvbuf, recvcount, \
                                    recvtype)
// The w-forms: every type of both sides plain (`call`: alltoallw or neighbor_alltoallw).
#define LOOM_PLAIN_W(call) \
  loom::ops::call##_passes_through(host_call, comm, sendbuf, sendtypes, recvbuf, recvtypes)
// The rooted collectives: the sides significant on this rank plain (`gather`: a gather's).
#define LOOM_PLAIN_ROOTED(gather)                                                             \
  loom::ops::rooted_passes_through(host_call, comm, root, gather, sendbuf, sendtype, recvbuf, \
                                   recvtype)

// The argument lists the collectives share.
#define LOOM_UNIFORM_PARAMS                                                                \
  const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount, \
      MPI_Datatype recvtype
#define LOOM_UNIFORM_ARGS sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype
#define LOOM_V_PARAMS                                                                      \
  const void *sendbuf, const int sendcounts[], const int sdispls[], MPI_Datatype sendtype, \
      void *recvbuf, const int recvcounts[], const int rdispls[], MPI_Datatype recvtype
#define LOOM_V_ARGS sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls, recvtype
#define LOOM_W_PARAMS(Displ)                                                 \
  const void *sendbuf, const int sendcounts[], const Displ sdispls[],        \
      const MPI_Datatype sendtypes[], void *recvbuf, const int recvcounts[], \
      const Displ rdispls[], const MPI_Datatype recvtypes[]
#define LOOM_W_ARGS sendbuf, sendcounts, sdispls, sendtypes, recvbuf, recvcounts, rdispls, recvtypes
#define LOOM_GATHERV_PARAMS                                                 \
  const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, \
      const int recvcounts[], const int displs[], MPI_Datatype recvtype
#define LOOM_GATHERV_ARGS sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype
#define LOOM_SCATTERV_PARAMS                                                              \
  const void *sendbuf, const int sendcounts[], const int displs[], MPI_Datatype sendtype, \
      void *recvbuf, int recvcount, MPI_Datatype recvtype
#define LOOM_SCATTERV_ARGS sendbuf, sendcounts, displs, sendtype, recvbuf, recvcount, recvtype
// The CHECK of each kind of array argument list (classic and large-count alike).
#define LOOM_NO_ARRAYS MPI_SUCCESS
#define LOOM_ARRAYS(Call, root, ...) \
  loom::ops::null_array_error(loom::ops::ArrayCall::Call, comm, sendbuf, root, __VA_ARGS__)
#define LOOM_V_ARRAYS(Call) LOOM_ARRAYS(Call, 0, sendcounts, sdispls, recvcounts, rdispls)
#define LOOM_W_ARRAYS(Call) \
  LOOM_ARRAYS(Call, 0, sendcounts, sdispls, sendtypes, recvcounts, rdispls, recvtypes)
#define LOOM_GATHERV_ARRAYS(Call, root) LOOM_ARRAYS(Call, root, recvcounts, displs)
#define LOOM_SCATTERV_ARRAYS LOOM_ARRAYS(ScatterV, root, sendcounts, displs)

// clang-format off
LOOM_PASSING_COLLECTIVE(Alltoall, alltoall, (LOOM_UNIFORM_PARAMS), (LOOM_UNIFORM_ARGS),
                        LOOM_NO_ARRAYS, !loom::ops::compression_requested() && LOOM_PLAIN_UNIFORM)
LOOM_PASSING_COLLECTIVE(Alltoallv, alltoallv, (LOOM_V_PARAMS), (LOOM_V_ARGS),
                        LOOM_V_ARRAYS(AllToAllV), LOOM_PLAIN_ALLTOALL)
LOOM_PASSING_COLLECTIVE(Alltoallw, alltoallw, (LOOM_W_PARAMS(int)), (LOOM_W_ARGS),
                        LOOM_W_ARRAYS(AllToAllW), LOOM_PLAIN_W(alltoallw))
LOOM_PASSING_COLLECTIVE(Allgather, allgather, (LOOM_UNIFORM_PARAMS), (LOOM_UNIFORM_ARGS),
                        LOOM_NO_ARRAYS, LOOM_PLAIN_UNIFORM)
LOOM_PASSING_COLLECTIVE(Allgatherv, allgatherv, (LOOM_GATHERV_PARAMS), (LOOM_GATHERV_ARGS),
                        LOOM_GATHERV_ARRAYS(AllGatherV, 0), LOOM_PLAIN_SIDES)
LOOM_PASSING_COLLECTIVE(Gather, gather, (LOOM_UNIFORM_PARAMS, int root),
                        (LOOM_UNIFORM_ARGS, root), LOOM_NO_ARRAYS, LOOM_PLAIN_ROOTED(true))
LOOM_PASSING_COLLECTIVE(Gatherv, gatherv, (LOOM_GATHERV_PARAMS, int root),
                        (LOOM_GATHERV_ARGS, root), LOOM_GATHERV_ARRAYS(GatherV, root),
                        LOOM_PLAIN_ROOTED(true))
LOOM_PASSING_COLLECTIVE(Scatter, scatter, (LOOM_UNIFORM_PARAMS, int root),
                        (LOOM_UNIFORM_ARGS, root), LOOM_NO_ARRAYS, LOOM_PLAIN_ROOTED(false))
LOOM_PASSING_COLLECTIVE(Scatterv, scatterv, (LOOM_SCATTERV_PARAMS, int root),
                        (LOOM_SCATTERV_ARGS, root), LOOM_SCATTERV_ARRAYS,
                        LOOM_PLAIN_ROOTED(false))
LOOM_PASSING_COLLECTIVE(Bcast, bcast, (void* buffer, int count, MPI_Datatype datatype, int root),
                        (buffer, count, datatype, root), LOOM_NO_ARRAYS,
                        host_call.serves(buffer, datatype))
LOOM_LATER_PASSING_COLLECTIVE(Neighbor_alltoall, neighbor_alltoall, (LOOM_UNIFORM_PARAMS),
                              (LOOM_UNIFORM_ARGS), LOOM_NO_ARRAYS, LOOM_PLAIN_UNIFORM)
LOOM_LATER_PASSING_COLLECTIVE(Neighbor_alltoallv, neighbor_alltoallv, (LOOM_V_PARAMS),
                              (LOOM_V_ARGS), LOOM_V_ARRAYS(NeighbourAllToAllV), LOOM_PLAIN_SIDES)
LOOM_LATER_PASSING_COLLECTIVE(Neighbor_alltoallw, neighbor_alltoallw, (LOOM_W_PARAMS(MPI_Aint)),
                              (LOOM_W_ARGS), LOOM_W_ARRAYS(NeighbourAllToAllW),
                              LOOM_PLAIN_W(neighbor_alltoallw))
LOOM_PASSING_COLLECTIVE(Neighbor_allgather, neighbor_allgather, (LOOM_UNIFORM_PARAMS),
                        (LOOM_UNIFORM_ARGS), LOOM_NO_ARRAYS, LOOM_PLAIN_UNIFORM)
LOOM_PASSING_COLLECTIVE(Neighbor_allgatherv, neighbor_allgatherv, (LOOM_GATHERV_PARAMS),
                        (LOOM_GATHERV_ARGS), LOOM_GATHERV_ARRAYS(NeighbourAllGatherV, 0),
                        LOOM_PLAIN_SIDES)
// clang-format on

#if MPI_VERSION >= 4
// MPI-4's large-count forms (blocking, non-blocking, persistent): counts and displacements that
// fit an int make the classic call, larger ones go to the host as written. First the collectives
// whose counts are scalars.
#define LOOM_COLLECTIVE_C(Name, name, PARAMS, FITS, ARGS_C, ARGS)                            \
  extern "C" int MPI_##Name##_c(LOOM_UNPAREN PARAMS, MPI_Comm comm) {                        \
    if (!(FITS)) return PMPI_##Name##_c(LOOM_UNPAREN ARGS_C, comm);                          \
    return MPI_##Name(LOOM_UNPAREN ARGS, comm);                                              \
  }                                                                                          \
  extern "C" int MPI_I##name##_c(LOOM_UNPAREN PARAMS, MPI_Comm comm, MPI_Request* request) { \
    if (!(FITS)) return PMPI_I##name##_c(LOOM_UNPAREN ARGS_C, comm, request);                \
    return MPI_I##name(LOOM_UNPAREN ARGS, comm, request);                                    \
  }                                                                                          \
  extern "C" int MPI_##Name##_init_c(LOOM_UNPAREN PARAMS, MPI_Comm comm, MPI_Info info,      \
                                     MPI_Request* request) {                                 \
    if (!(FITS)) return PMPI_##Name##_init_c(LOOM_UNPAREN ARGS_C, comm, info, request);      \
    return MPI_##Name##_init(LOOM_UNPAREN ARGS, comm, info, request);                        \
  }
#define LOOM_UNIFORM_C_PARAMS                                                     \
  const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, void *recvbuf, \
      MPI_Count recvcount, MPI_Datatype recvtype
#define LOOM_UNIFORM_FITS loom::base::fits_int(sendcount) && loom::base::fits_int(recvcount)
#define LOOM_UNIFORM_INT_ARGS \
  sendbuf, static_cast<int>(sendcount), sendtype, recvbuf, static_cast<int>(recvcount), recvtype

// clang-format off
LOOM_COLLECTIVE_C(Alltoall, alltoall, (LOOM_UNIFORM_C_PARAMS), LOOM_UNIFORM_FITS,
                  (LOOM_UNIFORM_ARGS), (LOOM_UNIFORM_INT_ARGS))
LOOM_COLLECTIVE_C(Allgather, allgather, (LOOM_UNIFORM_C_PARAMS), LOOM_UNIFORM_FITS,
                  (LOOM_UNIFORM_ARGS), (LOOM_UNIFORM_INT_ARGS))
LOOM_COLLECTIVE_C(Gather, gather, (LOOM_UNIFORM_C_PARAMS, int root), LOOM_UNIFORM_FITS,
                  (LOOM_UNIFORM_ARGS, root), (LOOM_UNIFORM_INT_ARGS, root))
LOOM_COLLECTIVE_C(Scatter, scatter, (LOOM_UNIFORM_C_PARAMS, int root), LOOM_UNIFORM_FITS,
                  (LOOM_UNIFORM_ARGS, root), (LOOM_UNIFORM_INT_ARGS, root))
LOOM_COLLECTIVE_C(Neighbor_alltoall, neighbor_alltoall, (LOOM_UNIFORM_C_PARAMS),
                  LOOM_UNIFORM_FITS, (LOOM_UNIFORM_ARGS), (LOOM_UNIFORM_INT_ARGS))
LOOM_COLLECTIVE_C(Neighbor_allgather, neighbor_allgather, (LOOM_UNIFORM_C_PARAMS),
                  LOOM_UNIFORM_FITS, (LOOM_UNIFORM_ARGS), (LOOM_UNIFORM_INT_ARGS))
LOOM_COLLECTIVE_C(Bcast, bcast, (void* buffer, MPI_Count count, MPI_Datatype datatype, int root),
                  loom::base::fits_int(count), (buffer, count, datatype, root),
                  (buffer, static_cast<int>(count), datatype, root))
// clang-format on

// The v and w forms, whose counts and displacements are arrays: the classic call on int copies
// of them (ops/coll_arrays.hpp), which a non-blocking call keeps until it completes and a
// persistent one until it is freed. NARROW is
// the copies' constructor arguments; ARGS, the classic call's, may name `narrowed`.
#define LOOM_ARRAY_COLLECTIVE_C(Name, name, PARAMS, CHECK, FITS, NARROW, ARGS_C, ARGS)       \
  extern "C" int MPI_##Name##_c(LOOM_UNPAREN PARAMS, MPI_Comm comm) {                        \
    LOOM_CHECKED(CHECK);                                                                     \
    if (FITS) {                                                                              \
      const loom::ops::NarrowedArrays narrowed NARROW;                                       \
      if (narrowed.ok()) return MPI_##Name(LOOM_UNPAREN ARGS, comm);                         \
    }                                                                                        \
    return PMPI_##Name##_c(LOOM_UNPAREN ARGS_C, comm);                                       \
  }                                                                                          \
  extern "C" int MPI_I##name##_c(LOOM_UNPAREN PARAMS, MPI_Comm comm, MPI_Request* request) { \
    LOOM_CHECKED(CHECK);                                                                     \
    if (FITS) {                                                                              \
      loom::ops::NarrowedArrays narrowed NARROW;                                             \
      if (narrowed.ok()) {                                                                   \
        const int rc = MPI_I##name(LOOM_UNPAREN ARGS, comm, request);                        \
        if (rc == MPI_SUCCESS) narrowed.keep_until_complete(*request);                       \
        return rc;                                                                           \
      }                                                                                      \
    }                                                                                        \
    return PMPI_I##name##_c(LOOM_UNPAREN ARGS_C, comm, request);                             \
  }                                                                                          \
  extern "C" int MPI_##Name##_init_c(LOOM_UNPAREN PARAMS, MPI_Comm comm, MPI_Info info,      \
                                     MPI_Request* request) {                                 \
    LOOM_CHECKED(CHECK);                                                                     \
    if (FITS) {                                                                              \
      loom::ops::NarrowedArrays narrowed NARROW;                                             \
      if (narrowed.ok()) {                                                                   \
        const int rc = MPI_##Name##_init(LOOM_UNPAREN ARGS, comm, info, request);            \
        if (rc == MPI_SUCCESS) narrowed.keep_until_freed(*request);                          \
        return rc;                                                                           \
      }                                                                                      \
    }                                                                                        \
    return PMPI_##Name##_init_c(LOOM_UNPAREN ARGS_C, comm, info, request);                   \
  }
#define LOOM_V_C_PARAMS                                                        \
  const void *sendbuf, const MPI_Count sendcounts[], const MPI_Aint sdispls[], \
      MPI_Datatype sendtype, void *recvbuf, const MPI_Count recvcounts[],      \
      const MPI_Aint rdispls[], MPI_Datatype recvtype
#define LOOM_W_C_PARAMS                                                            \
  const void *sendbuf, const MPI_Count sendcounts[], const MPI_Aint sdispls[],     \
      const MPI_Datatype sendtypes[], void *recvbuf, const MPI_Count recvcounts[], \
      const MPI_Aint rdispls[], const MPI_Datatype recvtypes[]
#define LOOM_GATHERV_C_PARAMS                                                     \
  const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, void *recvbuf, \
      const MPI_Count recvcounts[], const MPI_Aint displs[], MPI_Datatype recvtype
#define LOOM_SCATTERV_C_PARAMS                                                \
  const void *sendbuf, const MPI_Count sendcounts[], const MPI_Aint displs[], \
      MPI_Datatype sendtype, void *recvbuf, MPI_Count recvcount, MPI_Datatype recvtype
#define LOOM_V_NARROWED_ARGS                                                  \
  sendbuf, narrowed.send_counts(), narrowed.send_displs(), sendtype, recvbuf, \
      narrowed.recv_counts(), narrowed.recv_displs(), recvtype
#define LOOM_W_NARROWED_ARGS(sdispls, rdispls)                                                   \
  sendbuf, narrowed.send_counts(), sdispls, sendtypes, recvbuf, narrowed.recv_counts(), rdispls, \
      recvtypes
#define LOOM_GATHERV_NARROWED_ARGS                                                 \
  sendbuf, static_cast<int>(sendcount), sendtype, recvbuf, narrowed.recv_counts(), \
      narrowed.recv_displs(), recvtype
#define LOOM_SCATTERV_NARROWED_ARGS                                           \
  sendbuf, narrowed.send_counts(), narrowed.send_displs(), sendtype, recvbuf, \
      static_cast<int>(recvcount), recvtype

// clang-format off
LOOM_ARRAY_COLLECTIVE_C(Alltoallv, alltoallv, (LOOM_V_C_PARAMS), LOOM_V_ARRAYS(AllToAllV), true,
                        (loom::ops::all_to_all_lengths(comm, sendbuf), sendcounts, sdispls,
                         recvcounts, rdispls),
                        (LOOM_V_ARGS), (LOOM_V_NARROWED_ARGS))
LOOM_ARRAY_COLLECTIVE_C(Alltoallw, alltoallw, (LOOM_W_C_PARAMS), LOOM_W_ARRAYS(AllToAllW), true,
                        (loom::ops::all_to_all_lengths(comm, sendbuf), sendcounts, sdispls,
                         recvcounts, rdispls),
                        (LOOM_W_ARGS),
                        (LOOM_W_NARROWED_ARGS(narrowed.send_displs(), narrowed.recv_displs())))
LOOM_ARRAY_COLLECTIVE_C(Neighbor_alltoallv, neighbor_alltoallv, (LOOM_V_C_PARAMS),
                        LOOM_V_ARRAYS(NeighbourAllToAllV), true,
                        (loom::ops::neighbourhood_lengths(comm), sendcounts, sdispls, recvcounts,
                         rdispls),
                        (LOOM_V_ARGS), (LOOM_V_NARROWED_ARGS))
LOOM_ARRAY_COLLECTIVE_C(Neighbor_alltoallw, neighbor_alltoallw, (LOOM_W_C_PARAMS),
                        LOOM_W_ARRAYS(NeighbourAllToAllW), true,
                        (loom::ops::neighbourhood_lengths(comm), sendcounts, nullptr, recvcounts,
                         nullptr, true),
                        (LOOM_W_ARGS), (LOOM_W_NARROWED_ARGS(sdispls, rdispls)))
LOOM_ARRAY_COLLECTIVE_C(Allgatherv, allgatherv, (LOOM_GATHERV_C_PARAMS),
                        LOOM_GATHERV_ARRAYS(AllGatherV, 0),
                        loom::base::fits_int(sendcount),
                        (loom::ops::all_gather_lengths(comm), nullptr, nullptr, recvcounts,
                         displs),
                        (LOOM_GATHERV_ARGS), (LOOM_GATHERV_NARROWED_ARGS))
LOOM_ARRAY_COLLECTIVE_C(Neighbor_allgatherv, neighbor_allgatherv, (LOOM_GATHERV_C_PARAMS),
                        LOOM_GATHERV_ARRAYS(NeighbourAllGatherV, 0),
                        loom::base::fits_int(sendcount),
                        (loom::ops::neighbourhood_lengths(comm, false), nullptr, nullptr,
                         recvcounts, displs),
                        (LOOM_GATHERV_ARGS), (LOOM_GATHERV_NARROWED_ARGS))
LOOM_ARRAY_COLLECTIVE_C(Gatherv, gatherv, (LOOM_GATHERV_C_PARAMS, int root),
                        LOOM_GATHERV_ARRAYS(GatherV, root),
                        loom::base::fits_int(sendcount),
                        (loom::ops::gather_lengths(comm, root), nullptr, nullptr, recvcounts,
                         displs),
                        (LOOM_GATHERV_ARGS, root), (LOOM_GATHERV_NARROWED_ARGS, root))
LOOM_ARRAY_COLLECTIVE_C(Scatterv, scatterv, (LOOM_SCATTERV_C_PARAMS, int root),
                        LOOM_SCATTERV_ARRAYS,
                        loom::base::fits_int(recvcount),
                        (loom::ops::scatter_lengths(comm, root), sendcounts, displs, nullptr,
                         nullptr),
                        (LOOM_SCATTERV_ARGS, root), (LOOM_SCATTERV_NARROWED_ARGS, root))
// clang-format on
#endif
