#include "runtime/runtime.hpp"

#include "base/env.hpp"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace loom::runtime {
namespace {

constexpr base::EnvVar kDisable{"LOOM_DISABLE", "0", "1: pure pass-through to the host MPI"};
constexpr base::EnvVar kStats{"LOOM_STATS", "0",
                              "1: per-rank counters at MPI_Finalize; Loom's kernels timed"};
constexpr base::EnvVar kDebug{"LOOM_DEBUG", "0",
                              "1: each plan, model decision and trial; all LOOM_VERBOSE says"};
constexpr base::EnvVar kVerbose{"LOOM_VERBOSE", "0",
                                "1: what Loom noticed that changes only its speed, once per job"};
constexpr base::EnvVar kSharedCollectives{
    "LOOM_SHARED_COLLECTIVES", "auto",
    "0: same-node neighbourhood all-to-alls use the host's; 1: Loom's window for every one"};
constexpr base::EnvVar kOnline{"LOOM_ONLINE", "1", "0: no online trials; the model alone decides"};
constexpr base::EnvVar kSelf{"LOOM_SELF", "1", "0: messages to oneself go through the host"};
constexpr base::EnvVar kPlan{"LOOM_PLAN", "lazy",
                             "eager: plan every derived type at its first use (tests, benchmarks)"};
constexpr base::EnvVar kIsa{"LOOM_ISA", "best available", "scalar, avx2 or avx512 pack kernels"};

Config read_config() {
  Config c;
  c.disabled = base::read_flag(kDisable);
  c.stats = base::read_flag(kStats);
  c.debug = base::read_flag(kDebug);
  c.verbose = c.debug || base::read_flag(kVerbose);
  if (const char* shared = base::read(kSharedCollectives)) {
    if (std::strcmp(shared, "0") == 0)
      c.shared_collectives = SharedCollectives::Never;
    else if (std::strcmp(shared, "1") == 0)
      c.shared_collectives = SharedCollectives::Always;
    else if (std::strcmp(shared, "auto") != 0)
      base::warn_bad_value(kSharedCollectives, shared, "is not one of 0, 1, auto", "using auto");
  }
  c.online = base::read_flag(kOnline, true);
  c.self_channel = base::read_flag(kSelf, true);
  if (const char* plan = base::read(kPlan)) {
    if (std::strcmp(plan, "eager") == 0)
      c.plan_eagerly = true;
    else if (std::strcmp(plan, "lazy") != 0)
      base::warn_bad_value(kPlan, plan, "is not one of lazy, eager", "using lazy");
  }
  c.isa = pack::best_isa();
  if (const char* isa = base::read(kIsa)) {
    pack::Isa requested;
    const std::string fallback = std::string("using ") + pack::isa_name(c.isa);
    if (!pack::parse_isa(isa, &requested))
      base::warn_bad_value(kIsa, isa, "is not one of scalar, avx2, avx512", fallback.c_str());
    else if (!pack::isa_supported(requested))
      base::warn_bad_value(kIsa, isa, "is not supported by this CPU", fallback.c_str());
    else
      c.isa = requested;
  }
  return c;
}

}  // namespace

// Before libloom's other globals: their initialisers may consult the configuration.
__attribute__((init_priority(101))) const Config loaded_config = read_config();

std::atomic<bool> mpi_thread_multiple{false};

}  // namespace loom::runtime
