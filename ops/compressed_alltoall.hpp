// Online-compressed MPI_Alltoall(v) and their non-blocking forms (docs/compress.md).
// Where the codec slot (ops/codec_slot.hpp) names a codec for the communicator, the data is
// MPI_FLOAT or MPI_DOUBLE (or a derived type made only of one of them), some peer is on
// another node and the codec is faster than the link on every rank (compression_pays), Loom
// runs its own exchange on a private duplicate of the communicator: receives posted first,
// each peer's block compressed chunk by chunk in rotated peer order (rank+1, rank+2, ...) and
// sent as soon as each chunk is ready, each chunk decompressed as it arrives. A peer on this
// node gets its block raw, and so does every peer once the call's first chunk did not shrink
// by 5%. Otherwise the caller runs its usual path.
#pragma once

#include <mpi.h>

namespace loom::ops {

// Returns true when the compressed exchange served the call, with its MPI result in *rc;
// false to let the caller run its usual path (counted when compression was requested).
// `sendcounts`/`sdispls` null with `sendbuf` == MPI_IN_PLACE. `request` null: blocking.
bool compressed_alltoallv(const void* sendbuf, const int* sendcounts, const int* sdispls,
                          MPI_Datatype sendtype, void* recvbuf, const int* recvcounts,
                          const int* rdispls, MPI_Datatype recvtype, MPI_Comm comm,
                          MPI_Request* request, int* rc);
// MPI_Alltoall's uniform counts, as the above.
bool compressed_alltoall(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                         int recvcount, MPI_Datatype recvtype, MPI_Comm comm, MPI_Request* request,
                         int* rc);

// LOOM_COMPRESS_CHECK=1: the largest absolute error and lowest PSNR (dB) of values this
// process compressed, as decoded (0 and +Inf when none).
void compress_check_summary(double* max_abs_error, double* min_psnr_db);
bool compress_check_enabled();

}  // namespace loom::ops
