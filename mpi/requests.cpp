// MPI request family: Wait*, Test*, Request_get_status, Request_free, Start, Startall.
// The user holds the host's request handles; Loom keeps, per handle, the operation to
// finish when that request completes. The host may hand out a freed handle again at any
// time, so an entry is claimed by the completion call that waits on it before the host
// can free it: if the handle is reused meanwhile, the claimed entry is moved aside for
// its claimant instead of being mistaken for the new request's.
#include "mpi/requests.hpp"

#include <algorithm>
#include <atomic>
#include <mutex>
#include <unordered_map>
#include <utility>
#include <vector>

#include "mpi/host.hpp"
#include "mpi/type_registry.hpp"
#include "runtime/runtime.hpp"

namespace loom::mpi {
using namespace loom::runtime;  // NOLINT: the layers below
namespace {

struct Entry {
  std::unique_ptr<PendingOp> op;  // null once finished early by Request_get_status
  uint64_t claimant = 0;          // the completion call waiting on it, 0 when none
  bool active = true;             // persistent requests are inactive between completions and starts
  bool persistent = false;
};

struct Orphan {
  uint64_t claimant;
  MPI_Request request;
  std::unique_ptr<PendingOp> op;
};

class RequestTable {
 public:
  bool empty() const { return tracked_.load(std::memory_order_acquire) == 0; }

  void add(MPI_Request request, std::unique_ptr<PendingOp> op) {
    const bool persistent = op->persistent();
    std::lock_guard<std::mutex> lock(mutex_);
    auto [it, inserted] = live_.try_emplace(request);
    if (!inserted) {
      // The handle was freed by the host inside a completion call that has not yet
      // collected its entry: keep that entry for its claimant.
      if (it->second.claimant != 0)
        orphans_.push_back({it->second.claimant, request, std::move(it->second.op)});
      else
        tracked_.fetch_sub(1, std::memory_order_relaxed);  // superseded: cannot complete any more
    }
    it->second = Entry{std::move(op), 0, !persistent, persistent};
    tracked_.fetch_add(1, std::memory_order_release);
  }

  // Marks which of `requests` are Loom's; returns how many.
  int claim(const MPI_Request* requests, int n, uint64_t claimant, std::vector<char>* mine) {
    mine->assign(static_cast<size_t>(n), 0);
    int found = 0;
    std::lock_guard<std::mutex> lock(mutex_);
    for (int i = 0; i < n; ++i) {
      if (requests[i] == MPI_REQUEST_NULL) continue;
      auto it = live_.find(requests[i]);
      if (it == live_.end()) continue;
      if (it->second.claimant != 0) {
        // Claimed by a completion call still in progress on another thread: the host
        // completed that request and already reused its handle for this untracked one.
        orphans_.push_back({it->second.claimant, requests[i], std::move(it->second.op)});
        live_.erase(it);
        continue;
      }
      it->second.claimant = claimant;
      (*mine)[static_cast<size_t>(i)] = 1;
      ++found;
    }
    return found;
  }

  // The claimed request completed in the host: hands back its operation if it was
  // active (null otherwise). Persistent entries stay, now inactive.
  std::unique_ptr<PendingOp> take_completed(MPI_Request request, uint64_t claimant,
                                            bool* persistent_kept) {
    *persistent_kept = false;
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = live_.find(request);
    if (it != live_.end() && it->second.claimant == claimant) {
      it->second.claimant = 0;
      if (it->second.persistent) {
        *persistent_kept = it->second.active && it->second.op;
        it->second.active = false;
        return nullptr;
      }
      std::unique_ptr<PendingOp> op =
          it->second.active ? std::move(it->second.op) : std::unique_ptr<PendingOp>();
      live_.erase(it);
      tracked_.fetch_sub(1, std::memory_order_relaxed);
      return op;
    }
    for (auto o = orphans_.begin(); o != orphans_.end(); ++o) {
      if (o->claimant == claimant && o->request == request) {
        std::unique_ptr<PendingOp> op = std::move(o->op);
        orphans_.erase(o);
        tracked_.fetch_sub(1, std::memory_order_relaxed);
        return op;
      }
    }
    return nullptr;
  }

  PendingOp* persistent_op(MPI_Request request) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = live_.find(request);
    return it == live_.end() ? nullptr : it->second.op.get();
  }

  void unclaim(MPI_Request request, uint64_t claimant) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = live_.find(request);
    if (it != live_.end() && it->second.claimant == claimant) it->second.claimant = 0;
  }

  // Request_get_status saw it complete: finish now, so Wait/Test later do nothing more.
  std::unique_ptr<PendingOp> take_early(MPI_Request request, PendingOp** persistent) {
    *persistent = nullptr;
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = live_.find(request);
    if (it == live_.end() || !it->second.active || !it->second.op) return nullptr;
    it->second.active = false;
    if (it->second.persistent) {
      *persistent = it->second.op.get();
      return nullptr;
    }
    return std::move(it->second.op);
  }

  void mark_started(MPI_Request request) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = live_.find(request);
    if (it != live_.end()) it->second.active = true;
  }

  // Wraps the active operation registered for `request` in `wrap(op)`; false when none is.
  template <typename Wrap>
  bool wrap_active(MPI_Request request, Wrap wrap) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = live_.find(request);
    if (it == live_.end() || !it->second.active || !it->second.op || it->second.persistent)
      return false;
    it->second.op = wrap(std::move(it->second.op));
    return true;
  }

  // Wraps the operation of an inactive persistent request (just made by an init call).
  template <typename Wrap>
  bool wrap_persistent(MPI_Request request, Wrap wrap) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = live_.find(request);
    if (it == live_.end() || !it->second.persistent || !it->second.op) return false;
    it->second.op = wrap(std::move(it->second.op));
    return true;
  }

  bool contains(MPI_Request request) {
    std::lock_guard<std::mutex> lock(mutex_);
    return live_.count(request) != 0;
  }

  // Request_free: returns the entry if it was Loom's.
  bool remove(MPI_Request request, Entry* out) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = live_.find(request);
    if (it == live_.end()) return false;
    *out = std::move(it->second);
    live_.erase(it);
    tracked_.fetch_sub(1, std::memory_order_relaxed);
    return true;
  }

  // Active operations whose handle the user freed: Loom completes them itself.
  void detach(MPI_Request request, std::unique_ptr<PendingOp> op) {
    std::lock_guard<std::mutex> lock(mutex_);
    detached_.push_back({0, request, std::move(op)});
    has_detached_.store(true, std::memory_order_release);
  }

  void reap(bool wait_for_all) {
    if (!has_detached_.load(std::memory_order_acquire)) return;
    std::vector<Orphan> done;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      for (auto it = detached_.begin(); it != detached_.end();) {
        MPI_Status status;
        int flag = 0;
        if (wait_for_all) {
          PMPI_Wait(&it->request, &status);
          flag = 1;
        } else {
          PMPI_Test(&it->request, &flag, &status);
        }
        if (flag) {
          it->op->on_complete(&status);
          if (it->request != MPI_REQUEST_NULL) PMPI_Request_free(&it->request);  // persistent
          it = detached_.erase(it);
        } else {
          ++it;
        }
      }
      has_detached_.store(!detached_.empty(), std::memory_order_release);
    }
  }

 private:
  std::mutex mutex_;
  std::unordered_map<MPI_Request, Entry> live_;
  std::vector<Orphan> orphans_;
  std::vector<Orphan> detached_;
  std::atomic<size_t> tracked_{0};
  std::atomic<bool> has_detached_{false};
};

RequestTable& table() {
  static auto* t = new RequestTable();
  return *t;
}

std::atomic<uint64_t> next_claimant{1};

// One completion call over `n` requests of which some may be Loom's. Statuses are
// always collected (the user's may be MPI_STATUS(ES)_IGNORE) because finishing an
// operation needs the received byte count.
class Completion {
 public:
  Completion(MPI_Request* requests, int n) : n_(n), claimant_(next_claimant.fetch_add(1)) {
    table().reap(false);
    if (n > 0 && requests) {
      original_.assign(requests, requests + n);
      finished_.assign(static_cast<size_t>(n), 0);
      ours_ = table().claim(requests, n, claimant_, &mine_);
    }
  }
  ~Completion() {
    for (int i = 0; i < n_ && ours_; ++i)
      if (mine_[static_cast<size_t>(i)] && !finished_[static_cast<size_t>(i)])
        table().unclaim(original_[static_cast<size_t>(i)], claimant_);
  }
  Completion(const Completion&) = delete;
  Completion& operator=(const Completion&) = delete;

  bool any_ours() const { return ours_ > 0; }
  // The statuses the host call fills: the user's own when given (so fields the host
  // leaves alone stay alone), else scratch, since finishing needs the byte count.
  MPI_Status* statuses(int n, MPI_Status* user) {
    if (user != MPI_STATUS_IGNORE && user != MPI_STATUSES_IGNORE) return user;
    statuses_.resize(static_cast<size_t>(n > 0 ? n : 1));
    return statuses_.data();
  }
  // Request i completed in the host with `status` and return code `host_rc`; finishes
  // Loom's operation and returns its error code. The operation sees the request's own
  // error in status->MPI_ERROR, which is restored afterwards: single-completion calls
  // must leave that field as the user had it.
  int finish(int i, MPI_Status* status, int host_rc) {
    if (i < 0 || i >= n_ || !mine_[static_cast<size_t>(i)]) return MPI_SUCCESS;
    finished_[static_cast<size_t>(i)] = 1;
    bool persistent_kept = false;
    const MPI_Request handle = original_[static_cast<size_t>(i)];
    std::unique_ptr<PendingOp> owned = table().take_completed(handle, claimant_, &persistent_kept);
    PendingOp* op = owned ? owned.get() : persistent_kept ? table().persistent_op(handle) : nullptr;
    if (!op) return MPI_SUCCESS;
    const int saved_error = status->MPI_ERROR;
    if (host_rc != MPI_ERR_IN_STATUS) status->MPI_ERROR = host_rc;
    const int rc = op->on_complete(status);
    status->MPI_ERROR = saved_error;
    return rc;
  }

 private:
  int n_;
  uint64_t claimant_;
  int ours_ = 0;
  std::vector<MPI_Request> original_;
  std::vector<char> mine_, finished_;
  std::vector<MPI_Status> statuses_;
};

// Error of a completed entry in a multi-request call: the op's own error wins over success.
void merge_error(int op_rc, MPI_Status* status, int* rc) {
  if (op_rc == MPI_SUCCESS) return;
  status->MPI_ERROR = op_rc;
  *rc = MPI_ERR_IN_STATUS;
}

// An operation (or none) with something to keep alive until it completes.
class Retaining final : public PendingOp {
 public:
  Retaining(std::unique_ptr<PendingOp> inner, std::shared_ptr<const void> payload,
            bool persistent = false)
      : inner_(std::move(inner)), payload_(std::move(payload)), persistent_(persistent) {}
  int on_complete(MPI_Status* status) override {
    return inner_ ? inner_->on_complete(status) : MPI_SUCCESS;
  }
  int on_start() override { return inner_ ? inner_->on_start() : MPI_SUCCESS; }
  void on_started(MPI_Request request) override {
    if (inner_) inner_->on_started(request);
  }
  bool persistent() const override { return persistent_; }

 private:
  std::unique_ptr<PendingOp> inner_;
  std::shared_ptr<const void> payload_;
  bool persistent_;
};

}  // namespace

void keep_until_complete(MPI_Request request, std::shared_ptr<const void> payload) {
  if (request == MPI_REQUEST_NULL) return;
  const bool wrapped = table().wrap_active(request, [&](std::unique_ptr<PendingOp> op) {
    return std::make_unique<Retaining>(std::move(op), payload);
  });
  if (!wrapped) table().add(request, std::make_unique<Retaining>(nullptr, std::move(payload)));
}

void keep_until_freed(MPI_Request persistent_request, std::shared_ptr<const void> payload) {
  if (persistent_request == MPI_REQUEST_NULL) return;
  const bool wrapped =
      table().wrap_persistent(persistent_request, [&](std::unique_ptr<PendingOp> op) {
        return std::make_unique<Retaining>(std::move(op), payload, true);
      });
  if (!wrapped)
    table().add(persistent_request, std::make_unique<Retaining>(nullptr, std::move(payload), true));
}

bool is_tracked(MPI_Request request) {
  return !table().empty() && table().contains(request);
}

void track_request(MPI_Request request, std::unique_ptr<PendingOp> op) {
  table().add(request, std::move(op));
}

void reap_detached_requests(bool wait_for_all) {
  table().reap(wait_for_all);
}

void detach_request(MPI_Request request, std::unique_ptr<PendingOp> op) {
  table().detach(request, std::move(op));
}

namespace {
std::atomic<uint64_t> waits{0};
void count_wait() {
  waits.fetch_add(1, std::memory_order_relaxed);
}

// The host's completion call over `count` requests, `host_call(statuses)`: as the user made it
// where none of the requests carries Loom's work, else into the statuses Loom collects
// (Completion::statuses, `status_count` of them), and then `finish(completion, collected, rc)`
// finishes Loom's part of what completed.
template <typename HostCall, typename Finish>
int complete_untimed(MPI_Request requests[], int count, MPI_Status* statuses, int status_count,
                     HostCall& host_call, Finish& finish) {
  if (table().empty()) return host_call(statuses);
  Completion c(requests, count);
  if (!c.any_ours()) return host_call(statuses);
  MPI_Status* mine = c.statuses(status_count, statuses);
  return finish(c, mine, host_call(mine));
}

// Which of a completion call's requests it completed (for credit_completed): the `count`
// requests at `indices`, or the first `count` when `indices` is null.
struct Completed {
  const int* indices = nullptr;
  int count = 0;
};

// The same, where this thread has non-blocking messages of unplanned types in flight
// (host_messages_pending): the call is timed, and `completed(rc)` says which requests its
// duration is shared among. The handles are copied first (the host nulls them), up to
// kCreditedRequests of them; later ones go uncredited.
constexpr int kCreditedRequests = 256;
template <typename HostCall, typename Finish, typename Done>
int complete(MPI_Request requests[], int count, MPI_Status* statuses, int status_count,
             HostCall host_call, Finish finish, Done completed) {
  if (!host_messages_pending() || count <= 0 || !requests)
    return complete_untimed(requests, count, statuses, status_count, host_call, finish);
  MPI_Request handles[kCreditedRequests];
  const int copied = std::min(count, kCreditedRequests);
  std::copy(requests, requests + copied, handles);
  const uint64_t start = host_clock();
  const int rc = complete_untimed(requests, count, statuses, status_count, host_call, finish);
  const uint64_t end = host_clock();
  const Completed done = completed(rc);
  credit_completed(handles, copied, done.indices, done.count, end > start ? end - start : 0);
  return rc;
}

}  // namespace

uint64_t wait_calls() {
  return waits.load(std::memory_order_relaxed);
}

int wait(MPI_Request* request, MPI_Status* status) {
  count_wait();
  return complete(
      request, 1, status, 1, [&](MPI_Status* into) { return host().Wait(request, into); },
      [](Completion& c, MPI_Status* mine, int rc) {
        const int op_rc = c.finish(0, mine, rc);
        return rc != MPI_SUCCESS ? rc : op_rc;
      },
      [](int rc) {
        return Completed{nullptr, rc == MPI_SUCCESS ? 1 : 0};
      });
}

int test(MPI_Request* request, int* flag, MPI_Status* status) {
  return complete(
      request, 1, status, 1, [&](MPI_Status* into) { return host().Test(request, flag, into); },
      [&](Completion& c, MPI_Status* mine, int rc) {
        const int op_rc = *flag ? c.finish(0, mine, rc) : MPI_SUCCESS;
        return rc != MPI_SUCCESS ? rc : op_rc;
      },
      [&](int rc) {
        return Completed{nullptr, rc == MPI_SUCCESS && *flag ? 1 : 0};
      });
}

namespace {

// Waitall/Testall: after MPI_ERR_IN_STATUS the requests still pending say MPI_ERR_PENDING.
int finish_all(Completion& c, int count, MPI_Status* mine, int rc) {
  const int host_rc = rc;
  for (int i = 0; i < count; ++i) {
    if (host_rc == MPI_ERR_IN_STATUS && mine[i].MPI_ERROR == MPI_ERR_PENDING) continue;
    merge_error(c.finish(i, &mine[i], host_rc == MPI_SUCCESS ? MPI_SUCCESS : MPI_ERR_IN_STATUS),
                &mine[i], &rc);
  }
  return rc;
}

int finish_some(Completion& c, int outcount, const int* indices, MPI_Status* mine, int rc) {
  if (outcount == MPI_UNDEFINED) return rc;
  const int host_rc = rc == MPI_SUCCESS ? MPI_SUCCESS : MPI_ERR_IN_STATUS;
  for (int k = 0; k < outcount; ++k)
    merge_error(c.finish(indices[k], &mine[k], host_rc), &mine[k], &rc);
  return rc;
}

Completed completed_any(int rc, const int* index, int flag) {
  return rc == MPI_SUCCESS && flag && *index != MPI_UNDEFINED ? Completed{index, 1} : Completed{};
}

Completed completed_some(int rc, const int* indices, int outcount) {
  return rc == MPI_SUCCESS && outcount != MPI_UNDEFINED ? Completed{indices, outcount}
                                                        : Completed{};
}

// Waitany/Testany: `index` is MPI_UNDEFINED when nothing (active) completed.
int finish_any(Completion& c, const int* index, MPI_Status* mine, int rc) {
  const int op_rc = *index != MPI_UNDEFINED ? c.finish(*index, mine, rc) : MPI_SUCCESS;
  return rc != MPI_SUCCESS ? rc : op_rc;
}

}  // namespace

int waitall(int count, MPI_Request requests[], MPI_Status statuses[]) {
  count_wait();
  return complete(
      requests, count, statuses, count,
      [&](MPI_Status* into) { return host().Waitall(count, requests, into); },
      [&](Completion& c, MPI_Status* mine, int rc) { return finish_all(c, count, mine, rc); },
      [&](int rc) {
        return Completed{nullptr, rc == MPI_SUCCESS ? count : 0};
      });
}

int testall(int count, MPI_Request requests[], int* flag, MPI_Status statuses[]) {
  return complete(
      requests, count, statuses, count,
      [&](MPI_Status* into) { return host().Testall(count, requests, flag, into); },
      [&](Completion& c, MPI_Status* mine, int rc) {
        if (!*flag && rc == MPI_SUCCESS) return rc;
        return finish_all(c, count, mine, rc);
      },
      [&](int rc) {
        return Completed{nullptr, rc == MPI_SUCCESS && *flag ? count : 0};
      });
}

int waitany(int count, MPI_Request requests[], int* index, MPI_Status* status) {
  count_wait();
  return complete(
      requests, count, status, 1,
      [&](MPI_Status* into) { return host().Waitany(count, requests, index, into); },
      [&](Completion& c, MPI_Status* mine, int rc) { return finish_any(c, index, mine, rc); },
      [&](int rc) { return completed_any(rc, index, 1); });
}

int testany(int count, MPI_Request requests[], int* index, int* flag, MPI_Status* status) {
  return complete(
      requests, count, status, 1,
      [&](MPI_Status* into) { return host().Testany(count, requests, index, flag, into); },
      [&](Completion& c, MPI_Status* mine, int rc) {
        if (!*flag) return rc;
        return finish_any(c, index, mine, rc);
      },
      [&](int rc) { return completed_any(rc, index, *flag); });
}

int waitsome(int incount, MPI_Request requests[], int* outcount, int indices[],
             MPI_Status statuses[]) {
  count_wait();
  return complete(
      requests, incount, statuses, incount,
      [&](MPI_Status* into) { return host().Waitsome(incount, requests, outcount, indices, into); },
      [&](Completion& c, MPI_Status* mine, int rc) {
        return finish_some(c, *outcount, indices, mine, rc);
      },
      [&](int rc) { return completed_some(rc, indices, *outcount); });
}

int testsome(int incount, MPI_Request requests[], int* outcount, int indices[],
             MPI_Status statuses[]) {
  return complete(
      requests, incount, statuses, incount,
      [&](MPI_Status* into) { return host().Testsome(incount, requests, outcount, indices, into); },
      [&](Completion& c, MPI_Status* mine, int rc) {
        return finish_some(c, *outcount, indices, mine, rc);
      },
      [&](int rc) { return completed_some(rc, indices, *outcount); });
}

// Completion without freeing: Loom finishes its part now (the user may read the buffer
// as soon as this says complete), and the later Wait/Test only frees.
int request_get_status(MPI_Request request, int* flag, MPI_Status* status) {
  if (table().empty() || request == MPI_REQUEST_NULL)
    return host().Request_get_status(request, flag, status);
  MPI_Status scratch;
  MPI_Status* mine = status != MPI_STATUS_IGNORE ? status : &scratch;
  const int rc = host().Request_get_status(request, flag, mine);
  int op_rc = MPI_SUCCESS;
  if (rc == MPI_SUCCESS && *flag) {
    PendingOp* persistent = nullptr;
    std::unique_ptr<PendingOp> op = table().take_early(request, &persistent);
    if (PendingOp* finishing = op ? op.get() : persistent) {
      const int saved_error = mine->MPI_ERROR;
      mine->MPI_ERROR = MPI_SUCCESS;
      op_rc = finishing->on_complete(mine);
      mine->MPI_ERROR = saved_error;
    }
  }
  return rc != MPI_SUCCESS ? rc : op_rc;
}

int request_free(MPI_Request* request) {
  // A freed request completes with no completion call: its noted message would otherwise keep
  // every later completion call on this thread timed.
  if (request && host_messages_pending()) forget_pending_host_message(*request);
  Entry entry;
  if (!request || table().empty() || !table().remove(*request, &entry))
    return host().Request_free(request);
  if (entry.active && entry.op) {
    // Still in flight: Loom keeps the host request and finishes it later itself.
    table().detach(*request, std::move(entry.op));
    *request = MPI_REQUEST_NULL;
    return MPI_SUCCESS;
  }
  return host().Request_free(request);
}

int start(MPI_Request* request) {
  PendingOp* op = nullptr;
  if (request && !table().empty())
    if ((op = table().persistent_op(*request))) {
      if (const int rc = op->on_start(); rc != MPI_SUCCESS) return rc;
      table().mark_started(*request);
    }
  const int rc = host().Start(request);
  if (op && rc == MPI_SUCCESS) op->on_started(*request);
  return rc;
}

int startall(int count, MPI_Request requests[]) {
  if (!requests || table().empty()) return host().Startall(count, requests);
  std::vector<PendingOp*> ops(static_cast<size_t>(std::max(count, 0)), nullptr);
  for (int i = 0; i < count; ++i)
    if (PendingOp* op = table().persistent_op(requests[i])) {
      if (const int rc = op->on_start(); rc != MPI_SUCCESS) return rc;
      table().mark_started(requests[i]);
      ops[static_cast<size_t>(i)] = op;
    }
  const int rc = host().Startall(count, requests);
  if (rc == MPI_SUCCESS)
    for (int i = 0; i < count; ++i)
      if (PendingOp* op = ops[static_cast<size_t>(i)]) op->on_started(requests[i]);
  return rc;
}

}  // namespace loom::mpi
