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

// Below this many bytes, Loom's built-in rule leaves messages of blocks of 8 B or more to the
// host's own datatype engine (mpi/quirks.hpp, host_typed_as_fast_below_bytes): Open MPI's is
// as fast as packing there.
constexpr long kHostTypedAsFastBelowBytes = kHostIsMpich ? 0 : 256;

}  // namespace loom::test
