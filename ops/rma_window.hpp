// What Loom knows of each one-sided window it saw created: its kind, the segments of a
// shared-memory window as MPI_Win_shared_query gives them, which targets this process may access
// now (the epochs its synchronisation calls opened), and the staging its operations hold until
// the completion the synchronisation mode defines (ops/rma.hpp). Windows created through the
// host's own entry points (PMPI_*, or bindings that bypass the C ones) are not known, and their
// calls go to the host as written.
#pragma once

#include <mpi.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "mpi/type_registry.hpp"
#include "transport/staging.hpp"

namespace loom::ops::rma {

enum class WindowKind : uint8_t { Created, Allocated, Shared, Dynamic };

// One process's memory in a shared-memory window, mapped into this process.
struct Segment {
  char* base = nullptr;
  int64_t size = 0;
  int disp_unit = 1;
};

// An operation's buffers that must outlive the call: the origin bytes Loom packed (released when
// the operation completes) and the landing of a get or a get-accumulate's result (unpacked into
// the user's buffer then).
struct Held {
  int target = MPI_PROC_NULL;
  transport::StagingBuffer packed;
  transport::StagingBuffer landing;
  std::shared_ptr<const mpi::TypePlan> landing_type;  // null: nothing to unpack
  void* user = nullptr;
  int count = 0;
};

// Which completion a synchronisation call is: the operations to one target, or all of them.
constexpr int kAllTargets = -1;

class Window {
 public:
  Window(MPI_Win handle, WindowKind kind, int rank, int size, std::vector<Segment> segments);

  MPI_Win handle() const { return handle_; }
  WindowKind kind() const { return kind_; }
  int rank() const { return rank_; }
  int size() const { return size_; }
  // The target's segment of a shared-memory window; null for other windows.
  const Segment* segment(int target) const {
    return segments_.empty() || target < 0 || target >= size_ ? nullptr : &segments_[target];
  }

  // Whether an epoch this process opened gives it access to `target` now: a fence without
  // MPI_MODE_NOSUCCEED, a start whose group holds it, a lock on it, or a lock on all. Loom copies
  // into a shared window only then; every other call goes to the host, which judges it.
  bool may_access(int target) const {
    if (target < 0 || target >= size_) return false;
    return fence_open_.load(std::memory_order_acquire) ||
           lock_all_.load(std::memory_order_acquire) ||
           access_[target].load(std::memory_order_acquire) != 0;
  }
  // After the host's synchronisation call succeeded.
  void fenced(int assert_flags);
  void started(const std::vector<int>& targets);
  void completed();
  void locked(int target);
  void unlocked(int target);
  void locked_all();
  void unlocked_all();

  // Keeps `held` until a completion that covers its target.
  void hold(Held held);
  // Runs `host_completion` (the host's flush, unlock, complete or fence) and, when it succeeds,
  // finishes what this process held for `target` (or kAllTargets): gets unpacked, staging
  // released. A completion that starts after another took its share waits for that one to end,
  // so that whatever was issued before it is finished when it returns.
  template <class HostCompletion>
  int complete(int target, HostCompletion&& host_completion) {
    if (outstanding_.load(std::memory_order_acquire) == 0) return host_completion();
    std::lock_guard<std::mutex> completing(completion_mutex_);
    std::vector<Held> taken = take(target);
    const int rc = host_completion();
    if (rc != MPI_SUCCESS) {
      give_back(std::move(taken));
      return rc;
    }
    finish(taken);
    return rc;
  }
  // Drops whatever is still held (MPI_Win_free after the host freed the window).
  void drop_held();

 private:
  std::vector<Held> take(int target);
  void give_back(std::vector<Held> taken);
  void finish(std::vector<Held>& taken);

  const MPI_Win handle_;
  const WindowKind kind_;
  const int rank_, size_;
  const std::vector<Segment> segments_;

  std::atomic<bool> fence_open_{false};
  std::atomic<bool> lock_all_{false};
  // Per target: kStarted while a start's group holds it, kLocked while this process locks it.
  static constexpr uint8_t kStarted = 1, kLocked = 2;
  std::unique_ptr<std::atomic<uint8_t>[]> access_;

  std::mutex held_mutex_;
  std::vector<Held> held_;
  // Held operations not finished yet, including those a completion has taken and works on.
  std::atomic<int64_t> outstanding_{0};
  std::mutex completion_mutex_;
};

// The window `handle` names, or null when Loom did not see it created (or Loom is disabled).
Window* find_window(MPI_Win handle);
// After the host created `handle` on `comm`: records it. A shared window's segments are
// queried from the host here.
void add_window(MPI_Win handle, WindowKind kind, MPI_Comm comm);
// Before the host frees `handle`: the record, taken out of the registry (null if none); put back
// with restore_window when the host refuses to free it.
std::unique_ptr<Window> remove_window(MPI_Win handle);
void restore_window(std::unique_ptr<Window> window);

}  // namespace loom::ops::rma
