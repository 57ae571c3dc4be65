// Process-wide configuration, read once from the environment. Counters: runtime/counters.hpp.
#pragma once

#include <atomic>
#include <cstdint>

#include "pack/kernels.hpp"

namespace loom::runtime {

// Whether blocking neighbourhood all-to-alls on one node go through Loom's shared-memory window
// (transport/shared_exchange.hpp): never, where the measured rule says it pays (the default), or
// always where it can.
enum class SharedCollectives : uint8_t { Never, WherePays, Always };

struct Config {
  bool disabled = false;              // LOOM_DISABLE=1: pure pass-through
  bool stats = false;                 // LOOM_STATS=1: report at MPI_Finalize, time the kernels
  bool debug = false;                 // LOOM_DEBUG=1: print each committed type's plan
  bool verbose = false;               // LOOM_VERBOSE=1 (or LOOM_DEBUG=1): say what Loom noticed
  pack::Isa isa = pack::Isa::Scalar;  // LOOM_ISA=scalar|avx2|avx512, default: best available
  bool online = true;                 // LOOM_ONLINE=0: blocking messages follow the model alone
  bool self_channel = true;           // LOOM_SELF=0: a process's messages to itself go to the host
  // LOOM_PLAN=eager: every committed type planned at its first use; lazy (the default): once its
  // host time pays for the plan (mpi/type_registry.hpp, docs/commit.md).
  bool plan_eagerly = false;
  // LOOM_SHARED_COLLECTIVES=0, auto (the default) or 1.
  SharedCollectives shared_collectives = SharedCollectives::WherePays;
};
// Read from the environment as libloom loads, before any MPI call can reach it; a plain
// global so that the pass-through path pays one load, not a call and a guard check.
extern const Config loaded_config;
inline const Config& config() {
  return loaded_config;
}

// Whether the application may call MPI from several threads at once (MPI_Init_thread provided
// MPI_THREAD_MULTIPLE); below that its calls are ordered, and Loom's shared state needs no
// read-modify-write atomics. Set as MPI starts.
extern std::atomic<bool> mpi_thread_multiple;
inline bool concurrent_calls() {
  return mpi_thread_multiple.load(std::memory_order_relaxed);
}

}  // namespace loom::runtime
