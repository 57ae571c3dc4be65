// The host MPI's quirks the tests must allow for, in one place (the library keeps its own in
// mpi/quirks.hpp). Each test that differs by host names the quirk, not the MPI.
#pragma once

namespace loom::test {

#ifdef MPICH_VERSION
constexpr bool kHostIsMpich = true;
#else
constexpr bool kHostIsMpich = false;
#endif

// MPICH 4.0's own in-place MPI_Alltoallw fails with MPI_ERR_TRUNCATE on many layouts (it
// receives a peer's bytes as that peer's types), so there the reference for Loom's in-place
// call is the same exchange sent from a copy of the receive buffer.
constexpr bool kHostInPlaceAlltoallwFails = kHostIsMpich;

// The host's part of Loom's built-in method rule (mpi/quirks.hpp, builtin_rule_for_host): MPICH's
// engine is as fast as packing from 16 KiB for blocks above 128 B.
constexpr long kHostTypedAsFastFromBytes = kHostIsMpich ? 16384 : -1;  // -1: never
constexpr long kHostTypedAsFastAboveBlock = 128;

// Whether the host's collectives move one element of a one-run type as fast as its bytes
// (mpi/quirks.hpp, host_moves_one_run_elements_as_bytes): Loom then leaves such a side as written.
constexpr bool kHostMovesOneRunElementsAsBytes = !kHostIsMpich;

// Messages of a kind's trial wait that warm the host's typed path up (mpi/quirks.hpp,
// host_typed_warmup_messages): the wait's last ones go to the host.
constexpr int kHostTypedWarmupMessages = kHostIsMpich ? 16 : 0;

// MPICH before 4.3 releases the send side's datatype once too often in MPI_Isendrecv and
// MPI_Isendrecv_replace (pmodels/mpich#7098): the type's next use crashes. There the reference
// for Loom's call is the same exchange made of MPI_Irecv and MPI_Isend.
#if defined(MPICH_NUMVERSION) && MPICH_NUMVERSION < 40300000
constexpr bool kHostIsendrecvReleasesDerivedTypes = true;
#else
constexpr bool kHostIsendrecvReleasesDerivedTypes = false;
#endif

// MPICH's persistent MPI_Gather_init, MPI_Scatter_init and MPI_Allgather_init deliver wrong data
// (mpi/quirks.hpp, host_persistent_uniform_collectives_misdeliver; Loom makes them through their
// v forms). There the reference for Loom's persistent call is the host's non-blocking form,
// started as often.
constexpr bool kHostPersistentUniformCollectivesMisdeliver = kHostIsMpich;

// MPICH 4.0 reads through a null count, displacement or type array of a v or w collective (a
// segmentation fault; Loom reports the error, ops/coll_arrays.hpp). Open MPI 4.1 reports a class
// for each but an all-gather's null recvcounts.
constexpr bool kHostReadsNullCollectiveArrays = kHostIsMpich;

// One-sided bad input the hosts do not survive or do not check (docs/rma.md, "Findings"): neither
// host checks a target range on a shared-memory window (Open MPI 4.1 writes past the segment,
// MPICH 4.0 crashes); MPICH 4.0 also crashes on a range beyond an MPI_Win_allocate window and on
// a negative displacement into a dynamic window. The tests do not ask them those.
constexpr bool kHostChecksSharedRange = false;
constexpr bool kHostCrashesOnAllocatedOverrun = kHostIsMpich;
constexpr bool kHostCrashesOnNegativeDynamicDisp = kHostIsMpich;

}  // namespace loom::test
