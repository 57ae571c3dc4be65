// MPI_Pack family: entry points, served by ops/pack.hpp.
#include "ops/pack.hpp"

extern "C" int MPI_Pack(const void* inbuf, int incount, MPI_Datatype datatype, void* outbuf,
                        int outsize, int* position, MPI_Comm comm) {
  return loom::ops::pack(inbuf, incount, datatype, outbuf, outsize, position, comm);
}

extern "C" int MPI_Unpack(const void* inbuf, int insize, int* position, void* outbuf, int outcount,
                          MPI_Datatype datatype, MPI_Comm comm) {
  return loom::ops::unpack(inbuf, insize, position, outbuf, outcount, datatype, comm);
}

extern "C" int MPI_Pack_size(int incount, MPI_Datatype datatype, MPI_Comm comm, int* size) {
  return loom::ops::pack_size(incount, datatype, comm, size);
}
