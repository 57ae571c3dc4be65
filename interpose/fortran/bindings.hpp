// What every Fortran binding family (fortran_openmpi.cpp, fortran_mpich.cpp) converts alike.
#pragma once

#include <mpi.h>

namespace loom::fortran {

// A Fortran LOGICAL as gfortran and both hosts' bindings write it: .TRUE. is 1.
using Logical = MPI_Fint;
inline Logical logical(int c_flag) {
  return c_flag ? 1 : 0;
}

// ierror: OPTIONAL in mpi_f08 (absent, it arrives as a null pointer), always there otherwise.
inline void set_ierror(MPI_Fint* ierror, int rc) {
  if (ierror) *ierror = rc;
}

// An index MPI returns, as Fortran sees it: 1-based, MPI_UNDEFINED unchanged.
inline MPI_Fint index(int c_index) {
  return c_index >= 0 ? c_index + 1 : c_index;
}

}  // namespace loom::fortran
