// The simulated clock, when the host MPI is SimGrid's SMPI (the -DLOOM_SMPI=ON build,
// docs/projection.md): SMPI times communication on its simulated platform, and each simulated
// rank's CPU work is charged here from models calibrated on a real machine (sim/calibrate.sh),
// so that a projection does not depend on the load of the machine that runs it. With a real
// MPI every function here is an empty inline and costs nothing.
#pragma once

#include <cstdint>

namespace loom::mpi::sim {

#ifdef LOOM_SMPI
// Loom's own copies: `bytes` moved in `rows` contiguous runs by the pack kernels or the box copy
// (LOOM_SIM_PACK).
void charge_copy(int64_t rows, int64_t bytes);
// The host MPI's datatype engine packing or unpacking the same (LOOM_SIM_HOST_PACK); for the
// plain-MPI exchanges that projections compare with.
void charge_host_pack(int64_t rows, int64_t bytes);
// Work measured on this machine while simulating (a codec's call), charged as it took.
void charge_seconds(double seconds);
// Lets the other simulated ranks run while this one polls memory another rank writes.
void yield();
#else
inline void charge_copy(int64_t, int64_t) {}
inline void charge_host_pack(int64_t, int64_t) {}
inline void charge_seconds(double) {}
inline void yield() {}
#endif

}  // namespace loom::mpi::sim
