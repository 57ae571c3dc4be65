// The same-node transport's pairwise synchronisation (docs/halo.md, Transports): each rank's
// block of flags in node-shared memory holds, at [0], the step whose interior is final, and at
// [1 + q] the step that reader q (a node rank) has copied. A source publishes before anyone reads
// (release), a reader waits for it (acquire), copies, marks it read (release), and the source
// waits for every reader (acquire) before its interior may change. No barrier, no MPI: the
// protocol is tested alone, with threads, under ThreadSanitizer (tests/halo/step_flags_test.cpp).
// Under SimGrid's SMPI (-DLOOM_SMPI=ON) each block of flags has a signal (mpi/sim_clock.hpp):
// writers notify it, and waiters block on it in the simulator; with a real MPI it is null.
#pragma once

#include <sched.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <span>

#include "mpi/sim_clock.hpp"

namespace loom::halo {

// Waits until `*flag` reaches `value`. Spins for `spin_micros` before yielding: a yield on a
// loaded machine gives the core away for a whole time slice, far longer than a peer on another
// core takes to arrive. Ranks oversubscribed on fewer cores spin 0 us (then 64 spins), so the
// peer they wait for can run.
inline void wait_at_least(int64_t* flag, int64_t value, int spin_micros,
                          mpi::sim::Signal* signal = nullptr) {
  std::atomic_ref<int64_t> a(*flag);
  if (a.load(std::memory_order_acquire) >= value) return;
#ifdef LOOM_SMPI
  // Simulated ranks take turns on one thread: polling would cost a simulator step per poll.
  (void)spin_micros;
  signal->wait_until(flag, value);
#else
  (void)signal;
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::microseconds(spin_micros);
  bool spinning = true;
  for (int spins = 0; a.load(std::memory_order_acquire) < value; ++spins) {
    if (!spinning) {
      sched_yield();
    } else if (spins % 64 == 63) {
      spinning = std::chrono::steady_clock::now() < give_up;
    }
  }
#endif
}

// Our interior is final for `step`: readers may copy it. `signal`: our block's.
inline void publish(int64_t* ours, int64_t step, mpi::sim::Signal* signal = nullptr) {
  std::atomic_ref<int64_t>(ours[0]).store(step, std::memory_order_release);
  mpi::sim::notify(signal);
}

// Before copying a source's interior for `step`. `signal`: the source's block's.
inline void wait_published(int64_t* theirs, int64_t step, int spin_micros,
                           mpi::sim::Signal* signal = nullptr) {
  wait_at_least(&theirs[0], step, spin_micros, signal);
}

// Reader `me` (its node rank) has copied the source's interior for `step`. `signal`: the
// source's block's.
inline void mark_read(int64_t* theirs, int me, int64_t step, mpi::sim::Signal* signal = nullptr) {
  std::atomic_ref<int64_t>(theirs[1 + me]).store(step, std::memory_order_release);
  mpi::sim::notify(signal);
}

// Before our interior may change after `step`: every reader has copied it. `signal`: our
// block's.
inline void wait_read(int64_t* ours, std::span<const int> readers, int64_t step, int spin_micros,
                      mpi::sim::Signal* signal = nullptr) {
  for (int q : readers) wait_at_least(&ours[1 + q], step, spin_micros, signal);
}

}  // namespace loom::halo
