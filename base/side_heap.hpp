// Work whose memory must not reshape the application's heap: run on a short-lived thread.
#pragma once

#include <optional>
#include <system_error>
#include <thread>
#include <utility>

namespace loom::base {

// Runs `work` on a thread of its own and returns its result. With glibc each thread allocates
// from an arena of its own, so what `work` allocates and frees (a parsed file, say) leaves no
// holes in the main thread's heap: under Loom the application's own allocations land where they
// would without it, and glibc's mmap threshold, which rises when a large block is freed, stays
// where the application left it. What `work` returns stays valid: other arenas' memory may be
// freed from any thread.
// Where no thread can be started (a process at its thread limit), `work` runs on the caller's.
template <typename Work>
auto on_side_heap(Work&& work) {
  std::optional<decltype(work())> result;
  try {
    std::thread([&] { result.emplace(work()); }).join();
  } catch (const std::system_error&) {
    if (!result) result.emplace(work());
  }
  return std::move(*result);
}

}  // namespace loom::base
