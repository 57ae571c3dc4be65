// Counters registered by name. Each component declares its own counters beside the code that
// counts them; LOOM_STATS prints whatever is registered, one line per area, and
// loom_get_counter() reads any of them by its full name ("p2p.send.packed").
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>

#include "runtime/runtime.hpp"

namespace loom::runtime {

enum class Unit {
  Count,        // printed as an integer
  Nanoseconds,  // printed in seconds
};

// A registered counter: its slot in every thread's block. Obtained once, as the component's
// globals are initialised, so that counting is one relaxed add at a known offset.
class Counter {
 public:
  constexpr Counter() = default;
  int slot() const { return slot_; }
  bool valid() const { return slot_ >= 0; }

 private:
  friend Counter register_counter(const char*, const char*, const char*, Unit);
  friend Counter find_counter(const std::string&);
  explicit constexpr Counter(int slot) : slot_(slot) {}
  int slot_ = -1;
};

// Registers `area.group.key` (group may be empty: `area.key`). In the report, a line per area
// (ordered by its AreaFormat::order), groups separated by " | ", each group's name printed once
// before its keys: "[loom] rank 0 p2p: send packed=3 host=0 | recv unpacked=3 ...". Registering a
// name twice returns the first registration's counter.
Counter register_counter(const char* area, const char* group, const char* key,
                         Unit unit = Unit::Count);

// How an area's line looks beyond its counters. Every function may be null.
struct AreaFormat {
  int order = 50;                   // lines print by increasing order, then as registered
  std::string (*lead)() = nullptr;  // text before the counters ("isa=avx2")
  std::string (*tail)() = nullptr;  // text after them ("ratio=2.10")
  bool (*shown)() = nullptr;        // whether to print the line; null: always
};
// Sets an area's format; returns true so that it can initialise a namespace-scope constant.
bool format_area(const char* area, AreaFormat format);

namespace detail {
// Room in every thread's block; registering more is a build error caught as libloom loads.
constexpr int kMaxCounters = 96;
// Cache-line aligned: a block sharing a line with a heap object that another thread writes (the
// host's progress thread) would miss on every count.
struct alignas(64) ThreadCounters {
  std::atomic<uint64_t> value[kMaxCounters] = {};
};
ThreadCounters* new_thread_counters();
// Constant-initialised and in the static TLS block (libloom is loaded with the program or
// preloaded, never unloaded): one thread-pointer-relative load, no initialisation guard and no
// __tls_get_addr call, for counters bumped on every served call (MPI_Type_commit included).
[[gnu::tls_model("initial-exec")]] inline thread_local ThreadCounters* this_thread_block = nullptr;
inline ThreadCounters& this_thread_counters() {
  if (!this_thread_block) [[unlikely]]
    this_thread_block = new_thread_counters();
  return *this_thread_block;
}
}  // namespace detail

// Adds to this thread's counter; each thread owns its block, so this is one relaxed add with no
// sharing between threads. Inline: every routed message counts.
inline void count(Counter which, uint64_t amount = 1) {
  auto& slot = detail::this_thread_counters().value[which.slot()];
  slot.store(slot.load(std::memory_order_relaxed) + amount, std::memory_order_relaxed);
}
// One served call and its bytes, with a single lookup of this thread's block.
inline void count_call(Counter calls, Counter bytes, uint64_t amount) {
  detail::ThreadCounters& mine = detail::this_thread_counters();
  auto& c = mine.value[calls.slot()];
  auto& b = mine.value[bytes.slot()];
  c.store(c.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  b.store(b.load(std::memory_order_relaxed) + amount, std::memory_order_relaxed);
}
uint64_t total(Counter which);  // summed over all threads
// The counter named `area.group.key` (or `area.key`), spaces written '_'; invalid when none is.
Counter find_counter(const std::string& name);
// Sum of every counter registered under `area` (for an area shown only when something counted).
uint64_t area_total(const char* area);

// The LOOM_STATS lines of this process ("[loom] rank R area: ..."), each ending in '\n'.
std::string format_report(int rank);

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
