// Packed messages under Open MPI: a seam in the wire type. Open MPI's shared-memory transport
// (vader) carries a contiguous message above its eager limit by single-copy rendezvous, a
// process_vm_readv per message, and a non-contiguous one by copy-in/copy-out through shared
// fragments. For Loom's packed bytes the second is 1.6-3.8x faster from 4 KiB to 1 MiB, in both
// of this machine's states (docs/p2p.md, "Packed messages under Open MPI"). So such a message
// travels as one element of a two-block type: its last kSeamTail bytes moved kSeamGap bytes on
// in the staging buffer. The byte stream, and what the receiver gets, are unchanged.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <cstdint>

namespace loom::transport {

constexpr int64_t kSeamTail = 64;
constexpr int64_t kSeamGap = 64;
// The sizes it applies to: above the blocking stack staging's 2 KiB, up to what was measured.
constexpr int64_t kSeamFromBytes = 2049;
constexpr int64_t kSeamUpToBytes = int64_t{1} << 20;

// Whether a packed host-memory message of `bytes` travels seamed: the host is Open MPI with its
// single-copy mechanism on (OMPI_MCA_btl_vader_single_copy_mechanism not "none", the UCX pml
// not asked for), LOOM_SEAMED_WIRE not 0, and the size in range.
bool seamed_wire_applies(int64_t bytes);
// Staging bytes a seamed message of `bytes` needs.
inline size_t seamed_staging_bytes(int64_t bytes) {
  return static_cast<size_t>(bytes + kSeamGap);
}
// Moves the packed tail of `staging` (`bytes` packed bytes) past the seam and returns the
// committed wire type that sends them as one element (cached by size; freed at MPI_Finalize),
// or MPI_DATATYPE_NULL when the host refused to build it (then send `bytes` MPI_PACKED as is:
// the tail is moved back).
MPI_Datatype open_seam(char* staging, int64_t bytes);
void release_seamed_wires();  // at MPI_Finalize, before the host's

}  // namespace loom::transport
