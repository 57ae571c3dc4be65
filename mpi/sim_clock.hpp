// The simulated clock, when the host MPI is SimGrid's SMPI (the -DLOOM_SMPI=ON build,
// docs/projection.md): SMPI times communication on its simulated platform, and each simulated
// rank's CPU work is charged here from models calibrated on a real machine (sim/calibrate.py),
// so that a projection does not depend on the load of the machine that runs it. With a real
// MPI the charges are empty inlines that cost nothing, and memory is ordinary memory.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>

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
void* allocate_raw(size_t bytes, size_t keep);
void release(void* memory);

// A point of synchronisation between simulated ranks through memory they share (the halo
// library's step flags): a rank that waits for a flag blocks in the simulator until a writer of
// the flag notifies, one simulated event however long the wait, instead of polling the clock.
class Signal {
 public:
  Signal();
  ~Signal();
  Signal(const Signal&) = delete;
  Signal& operator=(const Signal&) = delete;
  // Blocks until `*flag` reaches `value`; the flag's writers call notify() after each store.
  void wait_until(const int64_t* flag, int64_t value);
  void notify();

 private:
  struct Handles;
  Handles* handles_;
};
inline void notify(Signal* signal) {
  if (signal) signal->notify();
}
#else
inline void charge_copy(int64_t, int64_t) {}
inline void charge_host_pack(int64_t, int64_t) {}
inline void charge_codec(bool, int64_t, double) {}
inline void charge_seconds(double) {}
inline void* allocate_raw(size_t bytes, size_t /*keep*/) {
  void* memory = std::aligned_alloc(64, (bytes + 63) / 64 * 64);
  if (memory) __builtin_memset(memory, 0, bytes);
  return memory;
}
inline void release(void* memory) {
  std::free(memory);
}
class Signal {};  // a real MPI's ranks wait for flags themselves (halo/step_flags.hpp)
inline void notify(Signal*) {}
#endif

struct Release {
  void operator()(char* memory) const { release(memory); }
};
using Memory = std::unique_ptr<char[], Release>;

// Memory for data a projection does not read (fields, packed messages), 64-byte aligned and
// zeroed; null if it cannot be had. With LOOM_SIM_FOLD=1 (SMPI build) every simulated rank's is
// folded onto the same pages (SMPI_SHARED_MALLOC; the results are then meaningless, the timing
// is not) except its first `keep` bytes, so that thousands of ranks fit in memory.
inline Memory allocate(size_t bytes, size_t keep = 0) {
  return Memory(static_cast<char*>(allocate_raw(bytes, keep)));
}

}  // namespace loom::mpi::sim
