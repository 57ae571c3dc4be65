// MPI_Pack family: Loom packs and unpacks with its plans. Unusual calls (bad arguments, null
// buffers, a type without a plan) go to the host MPI, which reports exactly the error it always
// would, through the communicator's error handler. Each function has its MPI namesake's
// arguments and result.
#pragma once

#include <mpi.h>

namespace loom::ops {

int pack(const void* inbuf, int incount, MPI_Datatype datatype, void* outbuf, int outsize,
         int* position, MPI_Comm comm);
int unpack(const void* inbuf, int insize, int* position, void* outbuf, int outcount,
           MPI_Datatype datatype, MPI_Comm comm);
int pack_size(int incount, MPI_Datatype datatype, MPI_Comm comm, int* size);

}  // namespace loom::ops
