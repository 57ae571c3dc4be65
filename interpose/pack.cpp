// MPI_Pack family: entry points, served by ops/pack.hpp.
#include "ops/pack.hpp"

#include "base/bytes.hpp"

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

#if MPI_VERSION >= 4
// MPI-4's large-count forms: counts and positions that fit an int make the classic call, larger
// ones go to the host as written. MPI_Pack_size_c is the host's alone, as MPI_Pack_size is.
using loom::base::fits_int;

extern "C" int MPI_Pack_c(const void* inbuf, MPI_Count incount, MPI_Datatype datatype, void* outbuf,
                          MPI_Count outsize, MPI_Count* position, MPI_Comm comm) {
  if (!position || !fits_int(incount) || !fits_int(outsize) || !fits_int(*position))
    return PMPI_Pack_c(inbuf, incount, datatype, outbuf, outsize, position, comm);
  int at = static_cast<int>(*position);
  const int rc = MPI_Pack(inbuf, static_cast<int>(incount), datatype, outbuf,
                          static_cast<int>(outsize), &at, comm);
  *position = at;
  return rc;
}

extern "C" int MPI_Unpack_c(const void* inbuf, MPI_Count insize, MPI_Count* position, void* outbuf,
                            MPI_Count outcount, MPI_Datatype datatype, MPI_Comm comm) {
  if (!position || !fits_int(insize) || !fits_int(outcount) || !fits_int(*position))
    return PMPI_Unpack_c(inbuf, insize, position, outbuf, outcount, datatype, comm);
  int at = static_cast<int>(*position);
  const int rc = MPI_Unpack(inbuf, static_cast<int>(insize), &at, outbuf,
                            static_cast<int>(outcount), datatype, comm);
  *position = at;
  return rc;
}
#endif
