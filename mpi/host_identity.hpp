// Which host MPI this process runs on, and how it is set up: what a calibration records and the
// host-MPI quirks are keyed on (mpi/quirks.hpp).
#pragma once

#include <string>

namespace loom::mpi {

// "openmpi" or "mpich", from MPI_Get_library_version (callable before MPI_Init).
const char* host_mpi_family();
bool host_is_mpich();  // host_mpi_family() is "mpich"
// A short name of the running host MPI, e.g. "Open MPI v4.1.4" or "MPICH 4.0.2": what a
// calibration records in "host_mpi".
std::string host_mpi_version();
// The host's transport settings in this process's environment, sorted and space-separated,
// e.g. "OMPI_MCA_btl_vader_single_copy_mechanism=none": under Open MPI its btl/pml/mtl
// parameters, under MPICH its MPIR_CVAR_*/MPICH_* (less the host name Hydra sets per
// process); UCX_* and FI_* under both.
// What a calibration records in "host_settings".
std::string host_transport_settings();

}  // namespace loom::mpi
