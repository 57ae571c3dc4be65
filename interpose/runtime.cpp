#include "interpose/runtime.hpp"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <vector>

#include "interpose/device_memory.hpp"
#include "loom/loom.h"

namespace loom::interpose {
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

void print_stats(int rank) {
  loom_stats s;
  loom_get_stats(&s);
  using ull = unsigned long long;
  // One line per rank, grep-friendly: "[loom] rank R <area>: key=value ...".
  std::fprintf(stderr,
               "[loom] rank %d types: isa=%s committed=%llu accelerated=%llu\n"
               "[loom] rank %d pack: MPI_Pack loom=%llu host=%llu bytes=%llu | MPI_Unpack "
               "loom=%llu host=%llu bytes=%llu | kernel time pack=%.6fs unpack=%.6fs\n"
               "[loom] rank %d p2p: send packed=%llu host=%llu bytes=%llu | recv unpacked=%llu "
               "host=%llu bytes=%llu | online trials kept=%llu switched=%llu | to itself "
               "delivered=%llu bytes=%llu demoted=%llu\n"
               "[loom] rank %d collectives: packed=%llu host=%llu bytes=%llu shared=%llu\n",
               rank, pack::isa_name(config().isa), (ull)s.types_committed, (ull)s.types_accelerated,
               rank, (ull)s.pack_calls_loom, (ull)s.pack_calls_host, (ull)s.pack_bytes_loom,
               (ull)s.unpack_calls_loom, (ull)s.unpack_calls_host, (ull)s.unpack_bytes_loom,
               s.pack_seconds, s.unpack_seconds, rank, (ull)s.send_packed, (ull)s.send_host,
               (ull)s.send_packed_bytes, (ull)s.recv_unpacked, (ull)s.recv_host,
               (ull)s.recv_unpacked_bytes, (ull)s.trials_kept, (ull)s.trials_switched,
               (ull)s.self_delivered, (ull)s.self_delivered_bytes, (ull)s.self_demoted, rank,
               (ull)s.collective_packed, (ull)s.collective_host, (ull)s.collective_packed_bytes,
               (ull)s.collective_shared);
  if (std::strcmp(device_support_name(), "off") != 0)
    std::fprintf(stderr, "[loom] rank %d device: executor=%s staged=%llu bytes=%llu\n", rank,
                 device_support_name(), (ull)s.device_staged, (ull)s.device_staged_bytes);
}

}  // namespace loom::interpose

using loom::interpose::Counter;
using loom::interpose::total;

extern "C" int loom_is_active(void) {
  return loom::interpose::config().disabled ? 0 : 1;
}

extern "C" void loom_get_stats(loom_stats* out) {
  if (!out) return;
  out->pack_calls_loom = total(Counter::PackLoom);
  out->pack_calls_host = total(Counter::PackHost);
  out->unpack_calls_loom = total(Counter::UnpackLoom);
  out->unpack_calls_host = total(Counter::UnpackHost);
  out->pack_bytes_loom = total(Counter::PackBytes);
  out->unpack_bytes_loom = total(Counter::UnpackBytes);
  out->types_committed = total(Counter::TypesCommitted);
  out->types_accelerated = total(Counter::TypesAccelerated);
  out->pack_seconds = static_cast<double>(total(Counter::PackNanoseconds)) * 1e-9;
  out->unpack_seconds = static_cast<double>(total(Counter::UnpackNanoseconds)) * 1e-9;
  out->send_packed = total(Counter::SendPacked);
  out->send_host = total(Counter::SendHost);
  out->send_packed_bytes = total(Counter::SendPackedBytes);
  out->recv_unpacked = total(Counter::RecvUnpacked);
  out->recv_host = total(Counter::RecvHost);
  out->recv_unpacked_bytes = total(Counter::RecvUnpackedBytes);
  out->collective_packed = total(Counter::CollectivePacked);
  out->collective_host = total(Counter::CollectiveHost);
  out->collective_packed_bytes = total(Counter::CollectivePackedBytes);
  out->collective_shared = total(Counter::CollectiveShared);
  out->trials_kept = total(Counter::TrialsKept);
  out->trials_switched = total(Counter::TrialsSwitched);
  out->self_delivered = total(Counter::SelfDelivered);
  out->self_delivered_bytes = total(Counter::SelfDeliveredBytes);
  out->self_demoted = total(Counter::SelfDemoted);
  out->device_staged = total(Counter::DeviceStaged);
  out->device_staged_bytes = total(Counter::DeviceStagedBytes);
}
