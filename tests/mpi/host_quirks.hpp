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

// Messages of a kind's trial wait that warm the host's typed path up (mpi/quirks.hpp,
// host_typed_warmup_messages): the wait's last ones go to the host.
constexpr int kHostTypedWarmupMessages = kHostIsMpich ? 16 : 0;

}  // namespace loom::test
