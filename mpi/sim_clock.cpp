// Built only for SMPI (sim/CMakeLists.txt).
#include "mpi/sim_clock.hpp"

#include <mpi.h>

#include <cstdio>
#include <cstdlib>

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

// Simulated microseconds between two polls of memory another rank writes: short against a
// message's latency, long enough that a rank waiting a millisecond costs the simulator few steps.
constexpr unsigned kPollMicros = 1;

}  // namespace

void charge_copy(int64_t rows, int64_t bytes) {
  const Cost& c = loom_cost();
  charge_seconds(static_cast<double>(rows) * c.per_row + static_cast<double>(bytes) * c.per_byte);
}

void charge_host_pack(int64_t rows, int64_t bytes) {
  const Cost& c = host_cost();
  charge_seconds(static_cast<double>(rows) * c.per_row + static_cast<double>(bytes) * c.per_byte);
}

// smpi_execute drops work below smpi/cpu-threshold (1 us by default): projections run with
// --cfg=smpi/cpu-threshold:0 (sim/project.py) so that small copies count.
void charge_seconds(double seconds) {
  if (seconds > 0) smpi_execute(seconds);
}

// A sleep, which the threshold does not drop.
void yield() {
  smpi_usleep(kPollMicros);
}

}  // namespace loom::mpi::sim
