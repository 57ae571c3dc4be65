// The simulated clock, when the host MPI is SimGrid's SMPI (the -DLOOM_SMPI=ON build,
// docs/projection.md): SMPI times communication on its simulated platform, and each simulated
// rank's CPU work is charged here from models calibrated on a real machine (sim/calibrate.sh),
// so that a projection does not depend on the load of the machine that runs it. With a real
// MPI every function here is an empty inline and costs nothing.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>

namespace loom::mpi::sim {

#ifdef LOOM_SMPI
// Loom's own copies: `bytes` moved in `rows` contiguous runs by the pack kernels or the box copy
// (LOOM_SIM_PACK).
void charge_copy(int64_t rows, int64_t bytes);
// The host MPI's datatype engine packing or unpacking the same (LOOM_SIM_HOST_PACK); for the
// plain-MPI exchanges that projections compare with.
void charge_host_pack(int64_t rows, int64_t bytes);
// A codec compressing (or decompressing) `raw_bytes`: at LOOM_SIM_CODEC's speeds where set
// (calibrated), else as long as it took here (`measured_seconds`).
void charge_codec(bool compress, int64_t raw_bytes, double measured_seconds);
void charge_seconds(double seconds);
// Lets the other simulated ranks run while this one polls memory another rank writes.
void yield();
// Memory for data a projection does not read (fields, packed messages), 64-byte aligned and
// zeroed: with LOOM_SIM_FOLD=1 every simulated rank's is folded onto the same pages
// (SMPI_SHARED_MALLOC; the results are then meaningless, the timing is not) except its first
// `keep` bytes, so that thousands of ranks fit in memory. release() frees it.
void* allocate(size_t bytes, size_t keep = 0);
void release(void* memory);
#else
inline void charge_copy(int64_t, int64_t) {}
inline void charge_host_pack(int64_t, int64_t) {}
inline void charge_codec(bool, int64_t, double) {}
inline void charge_seconds(double) {}
inline void yield() {}
inline void* allocate(size_t bytes, size_t /*keep*/ = 0) {
  void* memory = std::aligned_alloc(64, (bytes + 63) / 64 * 64);
  if (memory) __builtin_memset(memory, 0, bytes);
  return memory;
}
inline void release(void* memory) {
  std::free(memory);
}
#endif

}  // namespace loom::mpi::sim
