// Process-wide configuration (read once from the environment) and statistics.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>

#include "pack/kernels.hpp"

namespace loom::runtime {

struct Config {
  bool disabled = false;              // LOOM_DISABLE=1: pure pass-through
  bool stats = false;                 // LOOM_STATS=1: report at MPI_Finalize, time the kernels
  bool debug = false;                 // LOOM_DEBUG=1: print each committed type's plan
  bool verbose = false;               // LOOM_VERBOSE=1 (or LOOM_DEBUG=1): say what Loom noticed
  pack::Isa isa = pack::Isa::Scalar;  // LOOM_ISA=scalar|avx2|avx512, default: best available
  bool shared_collectives = true;     // LOOM_SHARED_COLLECTIVES=0: no same-node transport
  bool online = true;                 // LOOM_ONLINE=0: blocking messages follow the model alone
  bool self_channel = true;           // LOOM_SELF=0: a process's messages to itself go to the host
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

enum class Counter : int {
  PackLoom,
  PackHost,
  UnpackLoom,
  UnpackHost,
  PackBytes,
  UnpackBytes,
  TypesCommitted,
  TypesAccelerated,
  PackNanoseconds,
  UnpackNanoseconds,
  // Point-to-point with a derived type: packed by Loom and sent as MPI_PACKED, or left
  // to the host (by the model, LOOM_METHOD, or because Loom has no plan).
  SendPacked,
  SendHost,
  SendPackedBytes,
  RecvUnpacked,
  RecvHost,
  RecvUnpackedBytes,
  // Collectives with a derived type: packed to bytes by Loom, or left to the host.
  CollectivePacked,
  CollectiveHost,
  CollectivePackedBytes,
  // Collectives whose bytes went through Loom's same-node shared-memory window.
  CollectiveShared,
  // Online trials of blocking point-to-point messages (ops/method.hpp) that confirmed
  // the model's choice, and that overturned it.
  TrialsKept,
  TrialsSwitched,
  // Kinds whose trial started (past its wait), and its estimated cost (model/trial.hpp).
  TrialsStarted,
  TrialNanoseconds,
  // Messages a process sent to itself that Loom delivered (transport/self_channel.hpp), and
  // communicators whose such messages went back to the host.
  SelfDelivered,
  SelfDeliveredBytes,
  SelfDemoted,
  // Buffers in device memory that Loom packed, unpacked or copied through its device executor
  // (exec/device_memory.hpp), and their packed bytes.
  DeviceStaged,
  DeviceStagedBytes,
  // Compressed all-to-alls (ops/compressed_alltoall.hpp, docs/compress.md): calls through
  // Loom's compressed exchange; calls with compression requested left to the host because
  // every peer shares this node (the threshold) or the data is not float/double; bad codec
  // specs (LOOM_COMPRESS, the loom_compress info key); raw bytes sent to other ranks and the
  // bytes that went on the wire for them; time spent compressing and decompressing.
  CompressCalls,
  CompressHostThreshold,
  CompressHostType,
  CompressBadSpec,
  CompressRawBytes,
  CompressWireBytes,
  CompressNanoseconds,
  kCount
};

// Adds to this thread's counter; each thread owns its block, so this is one relaxed
// add with no sharing between threads.
void count(Counter which, uint64_t amount = 1);
// One served call and its bytes, with a single lookup of this thread's block.
void count_call(Counter calls, Counter bytes, uint64_t amount);
uint64_t total(Counter which);  // summed over all threads

// Times a scope into a counter, only when LOOM_STATS is on.
class KernelTimer {
 public:
  explicit KernelTimer(Counter which) : which_(which), on_(config().stats) {
    if (on_) start_ = std::chrono::steady_clock::now();
  }
  ~KernelTimer() {
    if (on_)
      count(which_, static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                              std::chrono::steady_clock::now() - start_)
                                              .count()));
  }
  KernelTimer(const KernelTimer&) = delete;
  KernelTimer& operator=(const KernelTimer&) = delete;

 private:
  Counter which_;
  bool on_;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace loom::runtime
