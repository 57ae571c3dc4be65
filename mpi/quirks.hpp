// The host MPI's quirks that Loom's library code must match or avoid, in one place: each is a
// named question about the running host, answered from its identity (mpi/host_identity.hpp) or
// probed once. The tests keep theirs in tests/mpi/host_quirks.hpp.
#pragma once

namespace loom::mpi {

// After MPI_ERR_TRUNCATE, whether the host delivers the bytes that fit into a receive buffer
// (Open MPI, its status saying how many) or nothing (MPICH 4.0, whose status count is then
// undefined for a derived receive). Loom unpacks what the host would have delivered.
bool host_delivers_truncated_bytes();
// Below how many bytes the host's own datatype engine sends a message of blocks of 8 B or more
// as fast as Loom's pack path (0: no such size). Open MPI's does so below 256 B: forced to
// pack, 64 B of 8-32 B blocks ran at 0.80-0.86x of the host, 256 B at 1.04-1.27x (docs/model.md).
// MPICH's engine is slower per message: packing gains 1.1-1.4x there at 16-256 B.
double host_typed_as_fast_below_bytes();
// Whether the host receives a contiguous message of over ~8 KiB into a datatype with more than
// one basic type. MPICH 4.0 cannot, so Loom does not send such types packed there.
bool host_receives_packed_into_mixed_types();

// Whether the host reports a too small buffer in MPI_Pack / MPI_Unpack as an error, leaving the
// buffer and *position alone (MPICH 4.0 instead packs past `outsize`, and unpacks a short input
// and says success). Probed once, on the first call that does not fit; needs MPI initialised.
struct HostTruncation {
  bool pack_reports = false;
  bool unpack_reports = false;
};
const HostTruncation& host_truncation();

// Whether the host MPI reads and writes GPU memory itself (is CUDA-aware): LOOM_CUDA_AWARE=1 or
// 0 says so; otherwise the host's MPIX_Query_cuda_support (Open MPI, MPICH) answers, and a
// host without it is not. Debian's Open MPI and MPICH say 0. Needs MPI initialised.
bool host_reads_device_memory();

}  // namespace loom::mpi
