// Packed messages under Open MPI: a seam in the wire type. Open MPI's shared-memory transport
// (vader) carries a contiguous message above its eager limit by single-copy rendezvous, a
// process_vm_readv per message, and a non-contiguous one by copy-in/copy-out through shared
// fragments. For Loom's packed bytes the second is faster from 4 KiB to 64 MiB on the machines
// measured (docs/p2p.md, "Packed messages under Open MPI"). So such a message
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
constexpr int64_t kSeamUpToBytes = int64_t{64} << 20;
// Wire types are cached per size; a message size is a kind's, so few recur.
constexpr size_t kMaxSeamedSizes = 256;

// The committed wire type that sends a packed host-memory message of `bytes` as one seamed
// element, cached by size and freed at MPI_Finalize; MPI_DATATYPE_NULL where it does not apply
// (the message then travels contiguous): the host does not send contiguous messages by
// single-copy rendezvous (mpi::host_sends_contiguous_by_single_copy), LOOM_SEAMED_WIRE=0, the
// size out of range, kMaxSeamedSizes sizes already cached, or the host refused the type.
MPI_Datatype seamed_wire_type(int64_t bytes);
// The same seam for a collective's block of `bytes` (a type of MPI_BYTE, the signature the
// receivers' MPI_BYTE expects): the block sits in staging with kSeamGap bytes after it, and
// successive blocks one extent (bytes + kSeamGap) apart. MPI_DATATYPE_NULL as above; each rank
// chooses alone, since the byte stream is the same either way.
MPI_Datatype seamed_block_type(int64_t bytes);
// Moves the last kSeamTail of the `bytes` packed bytes at `staging` (a buffer of at least
// bytes + kSeamGap) past the seam, where the wire type reads them.
void open_seam(char* staging, int64_t bytes);
void release_seamed_wires();  // at MPI_Finalize, before the host's

}  // namespace loom::transport
