#include "runtime/runtime.hpp"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <vector>

namespace loom::runtime {
namespace {

bool env_flag(const char* name) {
  const char* v = std::getenv(name);
  return v && *v && std::strcmp(v, "0") != 0;
}

Config read_config() {
  Config c;
  c.disabled = env_flag("LOOM_DISABLE");
  c.stats = env_flag("LOOM_STATS");
  c.debug = env_flag("LOOM_DEBUG");
  c.verbose = c.debug || env_flag("LOOM_VERBOSE");
  if (const char* v = std::getenv("LOOM_SHARED_COLLECTIVES"); v && *v)
    c.shared_collectives = std::strcmp(v, "0") != 0;
  if (const char* v = std::getenv("LOOM_ONLINE"); v && *v) c.online = std::strcmp(v, "0") != 0;
  if (const char* v = std::getenv("LOOM_SELF"); v && *v) c.self_channel = std::strcmp(v, "0") != 0;
  c.isa = pack::best_isa();
  if (const char* isa = std::getenv("LOOM_ISA"); isa && *isa) {
    pack::Isa requested;
    if (!pack::parse_isa(isa, &requested))
      std::fprintf(stderr, "loom: LOOM_ISA=%s is not one of scalar, avx2, avx512; using %s\n", isa,
                   pack::isa_name(c.isa));
    else if (!pack::isa_supported(requested))
      std::fprintf(stderr, "loom: LOOM_ISA=%s is not supported by this CPU; using %s\n", isa,
                   pack::isa_name(c.isa));
    else
      c.isa = requested;
  }
  return c;
}

constexpr int kCounters = static_cast<int>(Counter::kCount);

struct ThreadCounters {
  std::atomic<uint64_t> value[kCounters] = {};
};

// Blocks live until exit so counts of finished threads still add up.
std::mutex registry_mutex;
std::vector<std::unique_ptr<ThreadCounters>>& registry() {
  static auto* blocks = new std::vector<std::unique_ptr<ThreadCounters>>();
  return *blocks;
}

ThreadCounters* new_thread_counters() {
  auto block = std::make_unique<ThreadCounters>();
  ThreadCounters* raw = block.get();
  std::lock_guard<std::mutex> lock(registry_mutex);
  registry().push_back(std::move(block));
  return raw;
}

// Constant-initialised and in the static TLS block (libloom is loaded with the program or
// preloaded, never unloaded): one thread-pointer-relative load, no initialisation guard and no
// __tls_get_addr call, for counters bumped on every served call (MPI_Type_commit included).
[[gnu::tls_model("initial-exec")]] thread_local ThreadCounters* this_thread_block = nullptr;

ThreadCounters& this_thread_counters() {
  if (!this_thread_block) [[unlikely]]
    this_thread_block = new_thread_counters();
  return *this_thread_block;
}

}  // namespace

// Before libloom's other globals: their initialisers may consult the configuration.
__attribute__((init_priority(101))) const Config loaded_config = read_config();

std::atomic<bool> mpi_thread_multiple{false};

void count(Counter which, uint64_t amount) {
  auto& slot = this_thread_counters().value[static_cast<int>(which)];
  slot.store(slot.load(std::memory_order_relaxed) + amount, std::memory_order_relaxed);
}

void count_call(Counter calls, Counter bytes, uint64_t amount) {
  ThreadCounters& mine = this_thread_counters();
  auto& c = mine.value[static_cast<int>(calls)];
  auto& b = mine.value[static_cast<int>(bytes)];
  c.store(c.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  b.store(b.load(std::memory_order_relaxed) + amount, std::memory_order_relaxed);
}

uint64_t total(Counter which) {
  std::lock_guard<std::mutex> lock(registry_mutex);
  uint64_t sum = 0;
  for (const auto& block : registry())
    sum += block->value[static_cast<int>(which)].load(std::memory_order_relaxed);
  return sum;
}

}  // namespace loom::runtime
