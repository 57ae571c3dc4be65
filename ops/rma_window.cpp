#include "ops/rma_window.hpp"

#include <shared_mutex>
#include <unordered_map>
#include <utility>

#include "exec/execute.hpp"
#include "runtime/counters.hpp"
#include "runtime/runtime.hpp"

namespace loom::ops::rma {
namespace {

// Window handles are pointers (Open MPI) or ints (MPICH) and may be reused after a free: every
// change bumps the epoch, which lets each thread keep its last lookup without the lock.
class WindowRegistry {
 public:
  Window* find(MPI_Win handle) {
    std::shared_lock lock(mutex_);
    auto it = windows_.find(handle);
    return it == windows_.end() ? nullptr : it->second.get();
  }
  void add(std::unique_ptr<Window> window) {
    std::unique_lock lock(mutex_);
    const MPI_Win handle = window->handle();
    windows_[handle] = std::move(window);
    epoch.fetch_add(1, std::memory_order_acq_rel);
  }
  std::unique_ptr<Window> remove(MPI_Win handle) {
    std::unique_lock lock(mutex_);
    auto it = windows_.find(handle);
    if (it == windows_.end()) return nullptr;
    std::unique_ptr<Window> window = std::move(it->second);
    windows_.erase(it);
    epoch.fetch_add(1, std::memory_order_acq_rel);
    return window;
  }
  std::atomic<uint64_t> epoch{1};

 private:
  std::shared_mutex mutex_;
  std::unordered_map<MPI_Win, std::unique_ptr<Window>> windows_;
};

WindowRegistry& registry() {
  static auto* r = new WindowRegistry();  // outlives static destructors of user code
  return *r;
}

struct LastWindow {
  MPI_Win handle;
  uint64_t epoch;
  Window* window;
};
thread_local LastWindow last_window{MPI_WIN_NULL, 0, nullptr};

}  // namespace

Window::Window(MPI_Win handle, WindowKind kind, int rank, int size, std::vector<Segment> segments)
    : handle_(handle),
      kind_(kind),
      rank_(rank),
      size_(size),
      segments_(std::move(segments)),
      access_(new std::atomic<uint8_t>[static_cast<size_t>(size > 0 ? size : 1)]) {
  for (int t = 0; t < size_; ++t) access_[t].store(0, std::memory_order_relaxed);
}

// A fence opens the next epoch unless MPI_MODE_NOSUCCEED says none follows; lock and start
// epochs end a fence epoch (the hosts then refuse an operation outside them).
void Window::fenced(int assert_flags) {
  fence_open_.store((assert_flags & MPI_MODE_NOSUCCEED) == 0, std::memory_order_release);
}
void Window::started(const std::vector<int>& targets) {
  fence_open_.store(false, std::memory_order_release);
  for (int t : targets)
    if (t >= 0 && t < size_) access_[t].fetch_or(kStarted, std::memory_order_acq_rel);
}
void Window::completed() {
  for (int t = 0; t < size_; ++t)
    access_[t].fetch_and(static_cast<uint8_t>(~kStarted), std::memory_order_acq_rel);
}
void Window::locked(int target) {
  fence_open_.store(false, std::memory_order_release);
  if (target >= 0 && target < size_) access_[target].fetch_or(kLocked, std::memory_order_acq_rel);
}
void Window::unlocked(int target) {
  if (target >= 0 && target < size_)
    access_[target].fetch_and(static_cast<uint8_t>(~kLocked), std::memory_order_acq_rel);
}
void Window::locked_all() {
  fence_open_.store(false, std::memory_order_release);
  lock_all_.store(true, std::memory_order_release);
}
void Window::unlocked_all() {
  lock_all_.store(false, std::memory_order_release);
}

void Window::hold(Held held) {
  std::lock_guard<std::mutex> lock(held_mutex_);
  held_.push_back(std::move(held));
  outstanding_.fetch_add(1, std::memory_order_acq_rel);
}

std::vector<Held> Window::take(int target) {
  std::vector<Held> taken;
  std::lock_guard<std::mutex> lock(held_mutex_);
  if (target == kAllTargets) {
    taken.swap(held_);
    return taken;
  }
  size_t kept = 0;
  for (size_t i = 0; i < held_.size(); ++i) {
    if (held_[i].target == target)
      taken.push_back(std::move(held_[i]));
    else
      held_[kept++] = std::move(held_[i]);
  }
  held_.resize(kept);
  return taken;
}

void Window::give_back(std::vector<Held> taken) {
  std::lock_guard<std::mutex> lock(held_mutex_);
  for (Held& h : taken) held_.push_back(std::move(h));
}

void Window::finish(std::vector<Held>& taken) {
  for (Held& h : taken) {
    if (!h.landing_type) continue;
    runtime::KernelTimer timer(exec::kUnpackTime);
    exec::unpack(h.landing_type->plan, h.landing.data(), h.count, h.user, exec::MemoryKind::Host);
  }
  const auto finished = static_cast<int64_t>(taken.size());
  taken.clear();  // staging back to the pool before the count says it is done
  outstanding_.fetch_sub(finished, std::memory_order_acq_rel);
}

void Window::drop_held() {
  std::vector<Held> taken = take(kAllTargets);
  outstanding_.fetch_sub(static_cast<int64_t>(taken.size()), std::memory_order_acq_rel);
}

Window* find_window(MPI_Win handle) {
  if (runtime::config().disabled || handle == MPI_WIN_NULL) return nullptr;
  LastWindow& last = last_window;
  const uint64_t epoch = registry().epoch.load(std::memory_order_acquire);
  if (last.handle == handle && last.epoch == epoch) return last.window;
  Window* window = registry().find(handle);
  last = {handle, epoch, window};
  return window;
}

void add_window(MPI_Win handle, WindowKind kind, MPI_Comm comm) {
  if (runtime::config().disabled || handle == MPI_WIN_NULL) return;
  int rank = 0, size = 0;
  PMPI_Comm_rank(comm, &rank);
  PMPI_Comm_size(comm, &size);
  std::vector<Segment> segments;
  if (kind == WindowKind::Shared) {
    segments.resize(static_cast<size_t>(size));
    for (int t = 0; t < size; ++t) {
      MPI_Aint bytes = 0;
      int disp_unit = 1;
      void* base = nullptr;
      if (PMPI_Win_shared_query(handle, t, &bytes, &disp_unit, &base) != MPI_SUCCESS) {
        segments.clear();  // Loom cannot address the targets: every call goes to the host
        kind = WindowKind::Allocated;
        break;
      }
      segments[static_cast<size_t>(t)] = {static_cast<char*>(base), static_cast<int64_t>(bytes),
                                          disp_unit};
    }
  }
  registry().add(std::make_unique<Window>(handle, kind, rank, size, std::move(segments)));
}

std::unique_ptr<Window> remove_window(MPI_Win handle) {
  if (handle == MPI_WIN_NULL) return nullptr;
  return registry().remove(handle);
}

void restore_window(std::unique_ptr<Window> window) {
  if (window) registry().add(std::move(window));
}

}  // namespace loom::ops::rma
