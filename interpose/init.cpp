// MPI_Init/Finalize family: the LOOM_STATS report is printed as MPI finalizes.
#include "interpose/host.hpp"
#include "interpose/runtime.hpp"

extern "C" int MPI_Finalize(void) {
  if (loom::interpose::config().stats && !loom::interpose::config().disabled) {
    int rank = 0;
    PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
    loom::interpose::print_stats(rank);
  }
  return loom::interpose::host().Finalize();
}
