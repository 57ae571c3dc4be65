// The C API: an engine owns a posted-receive queue and an unexpected-message queue of the
// selected backend, applies the threading mode, keeps statistics and runs the optional
// hot-caching thread.
//
// Tail-queue mode (seed §6.2). Locks: PRQL guards the PRQ, UMQL the UMQ, TL both inboxes.
// A post holds UMQL, an arrival PRQL, so one posting and one arriving thread search their
// queues concurrently. Neither ever touches the other's main queue: a post that finds no
// message appends its receive to the PRQ inbox under TL; an arrival that finds no receive
// appends its message to the UMQ inbox under TL. Whoever takes TL second sees the other's
// inbox entry, so a racing receive and message can never both miss each other. Inbox
// entries are younger than every main-queue entry of the same queue (they are only drained
// into the main queue, in order, by the main queue's owner under TL), so "search main, then
// inbox" returns the oldest match. Lock order is PRQL < UMQL < TL and no path takes PRQL and
// UMQL together except statistics and teardown, which take all three in that order.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <new>
#include <thread>

#include "base/env.hpp"
#include "match/flat_map.hpp"
#include "match/queue.hpp"

namespace loom::match {

Key make_key(int32_t source, int32_t tag, uint32_t ctx) {
  Key k;
  k.ctx = ctx;
  if (source == LOOM_MATCH_ANY_SOURCE) {
    k.src = 0;
    k.smask = kWildMask;
  } else {
    k.src = source;
  }
  if (tag == LOOM_MATCH_ANY_TAG) {
    k.tag = 0;
    k.tmask = kWildMask;
  } else {
    k.tag = tag;
  }
  return k;
}

loom_match_envelope to_envelope(const Key& k, void* user) {
  return loom_match_envelope{any_source(k) ? LOOM_MATCH_ANY_SOURCE : k.src,
                             any_tag(k) ? LOOM_MATCH_ANY_TAG : k.tag, k.ctx, user};
}

namespace {
void* default_alloc(size_t size, void*) {
  return std::aligned_alloc(64, (size + 63) & ~size_t{63});
}
void default_free(void* p, size_t, void*) {
  std::free(p);
}
}  // namespace

Memory::Memory(const loom_match_config& cfg)
    : alloc_(cfg.alloc ? cfg.alloc : default_alloc),
      free_(cfg.alloc ? cfg.free : default_free),
      arg_(cfg.alloc_arg) {}

void* Memory::allocate(size_t bytes) {
  void* p = alloc_(bytes, arg_);
  if (p) bytes_ += bytes;
  return p;
}
void Memory::release(void* p, size_t bytes) {
  if (!p) return;
  free_(p, bytes, arg_);
  bytes_ -= bytes;
}

loom_match_isa detect_isa() {
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw"))
    return LOOM_MATCH_ISA_AVX512;
  if (__builtin_cpu_supports("avx2")) return LOOM_MATCH_ISA_AVX2;
  return LOOM_MATCH_ISA_SCALAR;
}

loom_match_isa resolve_isa(loom_match_isa requested) {
  if (requested == LOOM_MATCH_ISA_AUTO) {
    static constexpr loom::base::EnvVar kMatchIsa{"LOOM_MATCH_ISA", "best available",
                                                  "scalar, avx2 or avx512 matching search"};
    const char* env = loom::base::read(kMatchIsa);
    if (env && !std::strcmp(env, "scalar")) requested = LOOM_MATCH_ISA_SCALAR;
    if (env && !std::strcmp(env, "avx2")) requested = LOOM_MATCH_ISA_AVX2;
    if (env && !std::strcmp(env, "avx512")) requested = LOOM_MATCH_ISA_AVX512;
  }
  const loom_match_isa best = detect_isa();
  if (requested == LOOM_MATCH_ISA_AUTO || requested > best) return best;
  return requested;
}

std::unique_ptr<MatchQueue> make_queue(loom_match_backend backend, Side side, loom_match_isa isa,
                                       const loom_match_config& cfg) {
  switch (backend) {
    case LOOM_MATCH_BACKEND_LIST:
      return make_list_queue(cfg);
    case LOOM_MATCH_BACKEND_PERPEER:
      return make_perpeer_queue(cfg);
    case LOOM_MATCH_BACKEND_HASH:
      return make_hash_queue(cfg);
    case LOOM_MATCH_BACKEND_ADAPTIVE:
      return make_adaptive_queue(side, isa, cfg);
    default:
      return make_node_queue(backend, side, isa, cfg);
  }
}

namespace {

// Test-and-test-and-set lock: short critical sections on at most two contending threads,
// where parking in the kernel would cost more than the wait.
class SpinLock {
 public:
  void lock() {
    for (unsigned spins = 0;; ++spins) {
      if (!locked_.exchange(true, std::memory_order_acquire)) return;
      while (locked_.load(std::memory_order_relaxed)) {
        if (++spins > 64) {
          std::this_thread::yield();  // the holder may be descheduled (2 cores, oversubscribed)
          spins = 0;
        } else {
          __builtin_ia32_pause();
        }
      }
    }
  }
  bool try_lock() {
    return !locked_.load(std::memory_order_relaxed) &&
           !locked_.exchange(true, std::memory_order_acquire);
  }
  void unlock() { locked_.store(false, std::memory_order_release); }

 private:
  std::atomic<bool> locked_{false};
};

// Locks when given a lock, does nothing otherwise (threading mode NONE).
class MaybeLock {
 public:
  explicit MaybeLock(SpinLock* l) : l_(l) {
    if (l_) l_->lock();
  }
  ~MaybeLock() {
    if (l_) l_->unlock();
  }
  MaybeLock(const MaybeLock&) = delete;
  MaybeLock& operator=(const MaybeLock&) = delete;

 private:
  SpinLock* l_;
};

// FIFO of entries waiting to join a main queue (tail-queue mode). Every access happens under
// TL, including the node pool, so nodes are recycled without touching the allocator.
class Inbox {
 public:
  explicit Inbox(Memory& mem) : pool_(mem) {}
  ~Inbox() {
    while (head_) pop();
  }
  bool push(const Entry& e) {
    Node* n = pool_.get();
    if (!n) return false;
    *n = Node{e, nullptr};
    (tail_ ? tail_->next : head_) = n;
    tail_ = n;
    ++size_;
    return true;
  }
  // Oldest entry matching probe, removed when remove is set.
  bool find(const Key& probe, bool remove, Entry* out, uint32_t* depth) {
    Node* prev = nullptr;
    for (Node* n = head_; n; prev = n, n = n->next) {
      ++*depth;
      if (!key_matches(n->e.key, probe)) continue;
      *out = n->e;
      if (remove) unlink(prev, n);
      return true;
    }
    return false;
  }
  bool cancel(const Key& key, void* user) {
    Node* prev = nullptr;
    for (Node* n = head_; n; prev = n, n = n->next)
      if (n->e.user == user && key_equal(n->e.key, key)) {
        unlink(prev, n);
        return true;
      }
    return false;
  }
  // Moves entries, oldest first, to the end of q; stops early if q cannot allocate (the
  // rest stays here, still younger than everything in q, so order is kept).
  void drain_into(MatchQueue& q) {
    while (head_ && q.append(head_->e)) pop();
  }
  bool visit(VisitFn fn, void* arg) const {
    for (const Node* n = head_; n; n = n->next)
      if (!fn(n->e, arg)) return false;
    return true;
  }
  size_t size() const { return size_; }

 private:
  struct Node {
    Entry e;
    Node* next;
  };
  void pop() { unlink(nullptr, head_); }
  void unlink(Node* prev, Node* n) {
    (prev ? prev->next : head_) = n->next;
    if (tail_ == n) tail_ = prev;
    pool_.put(n);
    --size_;
  }
  Pool<Node> pool_;
  Node* head_ = nullptr;
  Node* tail_ = nullptr;
  size_t size_ = 0;
};

unsigned hist_bucket(uint32_t depth) {
  const unsigned b = depth ? 32u - static_cast<unsigned>(__builtin_clz(depth)) : 0u;
  return b < LOOM_MATCH_HIST_BUCKETS ? b : LOOM_MATCH_HIST_BUCKETS - 1;
}

// Single-writer counter readable from other threads (statistics).
class Counter {
 public:
  void add(uint64_t n = 1) {
    v_.store(v_.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
  }
  uint64_t get() const { return v_.load(std::memory_order_relaxed); }
  void raise_to(uint64_t x) {
    if (x > get()) v_.store(x, std::memory_order_relaxed);
  }

 private:
  std::atomic<uint64_t> v_{0};
};

// Statistics of one side (posting: posts and probes, under UMQL; arrival: arrivals and
// cancels, under PRQL).
struct SideStats {
  Counter ops, probes, mprobes, cancels, matched, peak;
  uint64_t hist[LOOM_MATCH_HIST_BUCKETS] = {};
};

// Entries that ever entered / left one queue. `in` is written by the side that queues into
// it (under TL in tail-queue mode, before the entry becomes visible to the other side, so
// in >= out always holds), `out` by the side that searches it.
struct QueueCounts {
  Counter in, out;
  uint64_t length() const {
    const uint64_t o = out.get();
    const uint64_t i = in.get();
    return i > o ? i - o : 0;
  }
};

}  // namespace
}  // namespace loom::match

using namespace loom::match;

struct loom_match_engine {
  loom_match_config cfg{};
  loom_match_backend backend = LOOM_MATCH_BACKEND_ADAPTIVE;
  loom_match_isa isa = LOOM_MATCH_ISA_SCALAR;
  loom_match_threading threading = LOOM_MATCH_THREAD_NONE;
  std::unique_ptr<MatchQueue> prq, umq;
  Memory inbox_mem;
  Inbox prq_inbox{inbox_mem}, umq_inbox{inbox_mem};
  SpinLock global_lock, prq_lock, umq_lock, tail_lock;
  // Posting side: posts/probes search the UMQ and feed the PRQ. Arrival side: the reverse.
  SideStats post_side, arrive_side;
  QueueCounts prq_count, umq_count;
  // Hot caching.
  std::thread heater;
  std::mutex heater_mutex;
  std::condition_variable heater_wake;
  bool heater_stop = false;
  std::atomic<uint64_t> heater_passes{0};
  std::atomic<uint64_t> heater_sink{0};

  explicit loom_match_engine(const loom_match_config& c) : cfg(c), inbox_mem(c) {}

  // The lock guarding each queue's searches in the current mode (nullptr: none).
  SpinLock* prq_guard() {
    return threading == LOOM_MATCH_THREAD_GLOBAL_LOCK   ? &global_lock
           : threading == LOOM_MATCH_THREAD_TAIL_QUEUES ? &prq_lock
                                                        : nullptr;
  }
  SpinLock* umq_guard() {
    return threading == LOOM_MATCH_THREAD_GLOBAL_LOCK   ? &global_lock
           : threading == LOOM_MATCH_THREAD_TAIL_QUEUES ? &umq_lock
                                                        : nullptr;
  }
  bool tail_queues() const { return threading == LOOM_MATCH_THREAD_TAIL_QUEUES; }

  // Searches `q` (main, then inbox in tail-queue mode) without queueing anything (probes).
  // Caller holds q's guard.
  bool search(MatchQueue& q, Inbox& inbox, const Key& probe, bool remove, Entry* out,
              uint32_t* depth) {
    if (q.find(probe, remove, out, depth)) return true;
    if (!tail_queues()) return false;
    MaybeLock tl(&tail_lock);
    const bool found = inbox.find(probe, remove, out, depth);
    inbox.drain_into(q);
    return found;
  }

  // One matching step: search `mine` for self; on a miss queue self into `theirs`. In
  // tail-queue mode the inbox search and the append to the other inbox happen in one TL
  // critical section: that is what stops a racing receive and message from both missing.
  int match_or_queue(MatchQueue& mine, Inbox& mine_inbox, QueueCounts& mine_count,
                     MatchQueue& theirs, Inbox& theirs_inbox, QueueCounts& theirs_count,
                     SpinLock* guard, SideStats& me, const Entry& self,
                     loom_match_envelope* matched) {
    MaybeLock lock(guard);
    me.ops.add();
    uint32_t depth = 0;
    Entry found;
    bool hit = mine.find(self.key, true, &found, &depth);
    bool queued = false;
    if (!hit) {
      MaybeLock tl(tail_queues() ? &tail_lock : nullptr);
      if (tail_queues()) {
        hit = mine_inbox.find(self.key, true, &found, &depth);
        mine_inbox.drain_into(mine);
      }
      if (!hit) {
        queued = tail_queues() ? theirs_inbox.push(self) : theirs.append(self);
        if (queued) theirs_count.in.add();  // before TL is released: in >= out always
      }
    }
    ++me.hist[hist_bucket(depth)];
    if (hit) {
      me.matched.add();
      mine_count.out.add();
      if (matched) *matched = to_envelope(found.key, found.user);
      return LOOM_MATCH_MATCHED;
    }
    if (!queued) return LOOM_MATCH_ERR_NOMEM;
    me.peak.raise_to(theirs_count.length());
    return LOOM_MATCH_QUEUED;
  }

  void start_heater() {
    uint64_t period = cfg.hot_cache_period_ns ? cfg.hot_cache_period_ns : 20000;
    heater = std::thread([this, period] {
      std::unique_lock<std::mutex> lk(heater_mutex);
      while (!heater_stop) {
        uint64_t sum = 0;
        // try_lock: never make the matching threads wait for the heater.
        if (prq_guard()->try_lock()) {
          sum += prq->touch();
          prq_guard()->unlock();
        }
        if (umq_guard()->try_lock()) {
          sum += umq->touch();
          umq_guard()->unlock();
        }
        heater_sink.fetch_add(sum, std::memory_order_relaxed);
        heater_passes.fetch_add(1, std::memory_order_relaxed);
        heater_wake.wait_for(lk, std::chrono::nanoseconds(period), [this] { return heater_stop; });
      }
    });
  }
  void stop_heater() {
    if (!heater.joinable()) return;
    {
      std::lock_guard<std::mutex> lk(heater_mutex);
      heater_stop = true;
    }
    heater_wake.notify_all();
    heater.join();
  }
};

namespace {
// Stats/foreach take every lock in the global order.
class LockAll {
 public:
  explicit LockAll(loom_match_engine* e) : e_(e) {
    if (e_->threading == LOOM_MATCH_THREAD_GLOBAL_LOCK) e_->global_lock.lock();
    if (e_->tail_queues()) {
      e_->prq_lock.lock();
      e_->umq_lock.lock();
      e_->tail_lock.lock();
    }
  }
  ~LockAll() {
    if (e_->threading == LOOM_MATCH_THREAD_GLOBAL_LOCK) e_->global_lock.unlock();
    if (e_->tail_queues()) {
      e_->tail_lock.unlock();
      e_->umq_lock.unlock();
      e_->prq_lock.unlock();
    }
  }
  LockAll(const LockAll&) = delete;
  LockAll& operator=(const LockAll&) = delete;

 private:
  loom_match_engine* e_;
};

const char* const kBackendNames[LOOM_MATCH_BACKEND_COUNT] = {
    "default", "list",    "perpeer", "lla",  "simd",
    "fuzzy8",  "fuzzy16", "fuzzy32", "hash", "adaptive"};

bool valid_receive(int32_t source) {
  return source >= 0 || source == LOOM_MATCH_ANY_SOURCE;
}
}  // namespace

extern "C" {

void loom_match_config_init(loom_match_config* config) {
  *config = loom_match_config{};
}

loom_match_engine* loom_match_create(const loom_match_config* config) {
  loom_match_config cfg{};
  if (config) cfg = *config;
  if (cfg.alloc && !cfg.free) return nullptr;
  try {
    auto e = std::make_unique<loom_match_engine>(cfg);
    e->backend = cfg.backend;
    if (e->backend <= LOOM_MATCH_BACKEND_DEFAULT || e->backend >= LOOM_MATCH_BACKEND_COUNT) {
      static constexpr loom::base::EnvVar kMatchBackend{
          "LOOM_MATCH_BACKEND", "adaptive", "the backend of engines created with the default"};
      const char* env = loom::base::read(kMatchBackend);
      e->backend = env ? loom_match_backend_from_name(env) : LOOM_MATCH_BACKEND_DEFAULT;
      if (e->backend == LOOM_MATCH_BACKEND_DEFAULT) e->backend = LOOM_MATCH_BACKEND_ADAPTIVE;
    }
    e->isa = resolve_isa(cfg.isa);
    e->threading = cfg.threading;
    // The heater walks queues under their locks, so it needs a locking mode.
    if (cfg.hot_cache && e->threading == LOOM_MATCH_THREAD_NONE)
      e->threading = LOOM_MATCH_THREAD_GLOBAL_LOCK;
    e->prq = make_queue(e->backend, Side::kPosted, e->isa, cfg);
    e->umq = make_queue(e->backend, Side::kUnexpected, e->isa, cfg);
    if (!e->prq || !e->umq) return nullptr;
    if (cfg.hot_cache) e->start_heater();
    return e.release();
  } catch (const std::exception&) {
    return nullptr;
  }
}

void loom_match_destroy(loom_match_engine* engine) {
  if (!engine) return;
  engine->stop_heater();
  delete engine;
}

int loom_match_post(loom_match_engine* e, int32_t source, int32_t tag, uint32_t context,
                    void* recv_user, loom_match_envelope* matched) {
  if (!valid_receive(source)) return LOOM_MATCH_ERR_ARG;
  const Entry self{make_key(source, tag, context), recv_user};
  return e->match_or_queue(*e->umq, e->umq_inbox, e->umq_count, *e->prq, e->prq_inbox, e->prq_count,
                           e->umq_guard(), e->post_side, self, matched);
}

int loom_match_arrive(loom_match_engine* e, int32_t source, int32_t tag, uint32_t context,
                      void* msg_user, loom_match_envelope* matched) {
  if (source < 0 || tag == LOOM_MATCH_ANY_TAG) return LOOM_MATCH_ERR_ARG;
  const Entry self{make_key(source, tag, context), msg_user};
  return e->match_or_queue(*e->prq, e->prq_inbox, e->prq_count, *e->umq, e->umq_inbox, e->umq_count,
                           e->prq_guard(), e->arrive_side, self, matched);
}

int loom_match_cancel(loom_match_engine* e, int32_t source, int32_t tag, uint32_t context,
                      void* recv_user) {
  if (!valid_receive(source)) return LOOM_MATCH_ERR_ARG;
  const Key key = make_key(source, tag, context);
  MaybeLock lock(e->prq_guard());
  e->arrive_side.cancels.add();
  bool removed = e->prq->cancel(key, recv_user);
  if (!removed && e->tail_queues()) {
    MaybeLock tl(&e->tail_lock);
    removed = e->prq_inbox.cancel(key, recv_user);
  }
  if (removed) e->prq_count.out.add();
  return removed ? LOOM_MATCH_MATCHED : LOOM_MATCH_NOT_FOUND;
}

static int probe_impl(loom_match_engine* e, int32_t source, int32_t tag, uint32_t context,
                      loom_match_envelope* found, bool remove) {
  if (!valid_receive(source)) return LOOM_MATCH_ERR_ARG;
  const Key probe = make_key(source, tag, context);
  MaybeLock lock(e->umq_guard());
  (remove ? e->post_side.mprobes : e->post_side.probes).add();
  uint32_t depth = 0;
  Entry hit;
  const bool ok = e->search(*e->umq, e->umq_inbox, probe, remove, &hit, &depth);
  ++e->post_side.hist[hist_bucket(depth)];
  if (!ok) return LOOM_MATCH_NOT_FOUND;
  if (remove) e->umq_count.out.add();
  if (found) *found = to_envelope(hit.key, hit.user);
  return LOOM_MATCH_MATCHED;
}

int loom_match_probe(loom_match_engine* e, int32_t source, int32_t tag, uint32_t context,
                     loom_match_envelope* found) {
  return probe_impl(e, source, tag, context, found, false);
}
int loom_match_mprobe(loom_match_engine* e, int32_t source, int32_t tag, uint32_t context,
                      loom_match_envelope* found) {
  return probe_impl(e, source, tag, context, found, true);
}

void loom_match_get_stats(loom_match_engine* e, loom_match_stats* out) {
  LockAll all(e);
  *out = loom_match_stats{};
  out->posted_length = e->prq->size() + e->prq_inbox.size();
  out->unexpected_length = e->umq->size() + e->umq_inbox.size();
  out->posted_peak = e->post_side.peak.get();
  out->unexpected_peak = e->arrive_side.peak.get();
  out->posts = e->post_side.ops.get();
  out->arrivals = e->arrive_side.ops.get();
  out->cancels = e->arrive_side.cancels.get();
  out->probes = e->post_side.probes.get();
  out->mprobes = e->post_side.mprobes.get();
  out->matched_on_post = e->post_side.matched.get();
  out->matched_on_arrival = e->arrive_side.matched.get();
  for (unsigned b = 0; b < LOOM_MATCH_HIST_BUCKETS; ++b) {
    out->posted_search_hist[b] = e->arrive_side.hist[b];
    out->unexpected_search_hist[b] = e->post_side.hist[b];
  }
  out->memory_bytes = e->prq->memory_bytes() + e->umq->memory_bytes() + e->inbox_mem.bytes();
  out->backend_switches = e->prq->switches() + e->umq->switches();
  out->hot_cache_passes = e->heater_passes.load(std::memory_order_relaxed);
}

size_t loom_match_foreach(loom_match_engine* e, loom_match_queue queue,
                          int (*visit)(const loom_match_envelope*, void*), void* arg) {
  LockAll all(e);
  struct Walk {
    int (*visit)(const loom_match_envelope*, void*);
    void* arg;
    size_t count;
  } walk{visit, arg, 0};
  auto fn = [](const Entry& en, void* w) {
    auto* walk_state = static_cast<Walk*>(w);
    const loom_match_envelope env = to_envelope(en.key, en.user);
    ++walk_state->count;
    return walk_state->visit(&env, walk_state->arg) == 0;
  };
  const bool posted = queue == LOOM_MATCH_POSTED;
  if ((posted ? e->prq : e->umq)->visit(fn, &walk))
    (posted ? e->prq_inbox : e->umq_inbox).visit(fn, &walk);
  return walk.count;
}

const char* loom_match_backend_name(loom_match_backend backend) {
  return backend >= 0 && backend < LOOM_MATCH_BACKEND_COUNT ? kBackendNames[backend] : "unknown";
}

loom_match_backend loom_match_backend_from_name(const char* name) {
  for (int b = LOOM_MATCH_BACKEND_LIST; b < LOOM_MATCH_BACKEND_COUNT; ++b)
    if (name && !std::strcmp(name, kBackendNames[b])) return static_cast<loom_match_backend>(b);
  return LOOM_MATCH_BACKEND_DEFAULT;
}

loom_match_backend loom_match_engine_backend(const loom_match_engine* e) {
  return e->backend;
}
loom_match_isa loom_match_engine_isa(const loom_match_engine* e) {
  return e->isa;
}

const char* loom_match_isa_name(loom_match_isa isa) {
  switch (isa) {
    case LOOM_MATCH_ISA_SCALAR:
      return "scalar";
    case LOOM_MATCH_ISA_AVX2:
      return "avx2";
    case LOOM_MATCH_ISA_AVX512:
      return "avx512";
    default:
      return "auto";
  }
}

}  // extern "C"
