// Built only for SMPI (sim/CMakeLists.txt).
#include "mpi/sim_clock.hpp"

#include <mpi.h>
#include <simgrid/cond.h>
#include <simgrid/mutex.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <unordered_set>
#include <utility>

#include "base/env.hpp"

namespace loom::mpi::sim {
namespace {

constexpr base::EnvVar kPack{
    "LOOM_SIM_PACK", "40,8",
    "SMPI build: the cost of Loom's copies as 'ns per contiguous run,GB/s' (sim/calibrate.sh "
    "measures it)"};
constexpr base::EnvVar kHostPack{
    "LOOM_SIM_HOST_PACK", "80,4",
    "SMPI build: the cost of the host MPI's datatype engine as 'ns per contiguous run,GB/s', "
    "for the plain-MPI exchanges a projection compares with (sim/calibrate.sh measures it)"};

constexpr base::EnvVar kCodec{
    "LOOM_SIM_CODEC", "unset (as measured while simulating)",
    "SMPI build: the codec's speed as 'compress MB/s,decompress MB/s' of raw data "
    "(sim/calibrate.sh measures each codec)"};

constexpr base::EnvVar kFold{
    "LOOM_SIM_FOLD", "0",
    "SMPI build: 1 folds every simulated rank's fields and packed messages onto the same "
    "memory (projections of thousands of ranks; the exchanged values are then meaningless)"};

struct Cost {
  double per_row = 0;   // seconds
  double per_byte = 0;  // seconds
};

Cost cost_of(const base::EnvVar& var, double row_ns, double gbps) {
  if (const char* text = base::read(var)) {
    char* end = nullptr;
    const double r = std::strtod(text, &end);
    const double g = end && *end == ',' ? std::strtod(end + 1, &end) : 0;
    if (end && *end == '\0' && r >= 0 && g > 0) {
      row_ns = r;
      gbps = g;
    } else {
      base::warn_bad_value(var, text, "is not 'ns per run,GB/s'", "using the default");
    }
  }
  return {row_ns * 1e-9, 1.0 / (gbps * 1e9)};
}

const Cost& loom_cost() {
  static const Cost cost = cost_of(kPack, 40, 8);
  return cost;
}
const Cost& host_cost() {
  static const Cost cost = cost_of(kHostPack, 80, 4);
  return cost;
}

}  // namespace

void charge_copy(int64_t rows, int64_t bytes) {
  const Cost& c = loom_cost();
  charge_seconds(static_cast<double>(rows) * c.per_row + static_cast<double>(bytes) * c.per_byte);
}

void charge_host_pack(int64_t rows, int64_t bytes) {
  const Cost& c = host_cost();
  charge_seconds(static_cast<double>(rows) * c.per_row + static_cast<double>(bytes) * c.per_byte);
}

// smpi_execute drops work below smpi/cpu-threshold (1 us by default) and runs the rest as
// seconds x smpi/host-speed flops on the simulated host: projections run with
// --cfg=smpi/cpu-threshold:0 and host-speed equal to the platform's host speed (sim/project.py).
void charge_codec(bool compress, int64_t raw_bytes, double measured_seconds) {
  static const std::pair<double, double> speeds = [] {
    std::pair<double, double> mbps{0, 0};
    if (const char* text = base::read(kCodec)) {
      char* end = nullptr;
      mbps.first = std::strtod(text, &end);
      mbps.second = end && *end == ',' ? std::strtod(end + 1, &end) : 0;
      if (!end || *end != '\0' || mbps.first <= 0 || mbps.second <= 0) {
        base::warn_bad_value(kCodec, text, "is not 'MB/s,MB/s'", "charging measured time");
        mbps = {0, 0};
      }
    }
    return mbps;
  }();
  const double mbps = compress ? speeds.first : speeds.second;
  charge_seconds(mbps > 0 ? static_cast<double>(raw_bytes) / (mbps * 1e6) : measured_seconds);
}

void charge_seconds(double seconds) {
  if (seconds > 0) smpi_execute(seconds);
}

// Every simulated rank runs on the simulator's one thread, in turns: a rank that finds the flag
// short waits on the condition (which releases the mutex) and runs again once a writer has
// stored and notified; the mutex keeps a notification from falling between check and wait.
struct Signal::Handles {
  sg_mutex_t mutex = sg_mutex_init();
  sg_cond_t condition = sg_cond_init();
};

Signal::Signal() : handles_(new Handles) {}

Signal::~Signal() {
  sg_cond_destroy(handles_->condition);
  sg_mutex_destroy(handles_->mutex);
  delete handles_;
}

void Signal::wait_until(const int64_t* flag, int64_t value) {
  sg_mutex_lock(handles_->mutex);
  while (__atomic_load_n(flag, __ATOMIC_ACQUIRE) < value)
    sg_cond_wait(handles_->condition, handles_->mutex);
  sg_mutex_unlock(handles_->mutex);
}

void Signal::notify() {
  sg_mutex_lock(handles_->mutex);
  sg_cond_notify_all(handles_->condition);
  sg_mutex_unlock(handles_->mutex);
}

}  // namespace loom::mpi::sim

namespace loom::mpi::sim {
namespace {
// Folded blocks, to free them the way they were made (one list for every simulated rank:
// allocation and release happen between simulator steps, never concurrently).
std::unordered_set<void*>& folded() {
  static auto* blocks = new std::unordered_set<void*>();
  return *blocks;
}
}  // namespace

void* allocate_raw(size_t bytes, size_t keep) {
  static const bool fold = base::read_flag(kFold);
  const size_t size = (bytes + 63) / 64 * 64;
  if (fold && size > keep) {
    const size_t shared[2] = {keep, size};
    void* memory = smpi_shared_malloc_partial(size, shared, 1);
    if (memory) {
      std::memset(memory, 0, keep);
      folded().insert(memory);
    }
    return memory;
  }
  void* memory = std::aligned_alloc(64, size);
  if (memory) std::memset(memory, 0, bytes);
  return memory;
}

void release(void* memory) {
  if (!memory) return;
  if (folded().erase(memory)) {
    smpi_shared_free(memory);
    return;
  }
  std::free(memory);
}

}  // namespace loom::mpi::sim
