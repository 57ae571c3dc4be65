// The registry of datatype plans: a handle recorded at commit, planned once its host time pays
// for the plan (or at first use under LOOM_PLAN=eager), released at free, shared at dup.
#include "mpi/type_registry.hpp"

#include <time.h>
#include <algorithm>

#include <chrono>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <deque>
#include <mutex>
#include <shared_mutex>
#include <unordered_map>
#include <vector>

#include "exec/execute.hpp"
#include "loom/loom.h"
#include "mpi/host.hpp"
#include "mpi/type_decode.hpp"
#include "runtime/counters.hpp"

namespace loom::mpi {
using namespace loom::runtime;  // NOLINT: the layers below
namespace {

// MPI_Type_commit calls, and the committed types Loom built a plan for.
const Counter kCommitted = register_counter("types", "", "committed");
const Counter kAccelerated = register_counter("types", "", "accelerated");
// Loom's work on types: derived types decoded, compiled and checked; derived types whose plan came
// from the signature cache instead; the CPU time of both. Then the types freed before Loom planned
// them: the host served every message of theirs, and Loom did nothing with their contents.
const Counter kDecoded = register_counter("types", "planning", "decoded");
const Counter kReused = register_counter("types", "planning", "reused");
const Counter kPlanningTime = register_counter("types", "planning", "time", Unit::Nanoseconds);
const Counter kFreedUnplanned = register_counter("types", "not planned", "freed");
// Type descriptions opened (MPI_Type_get_contents) to estimate a type's planning cost: none for
// types built through Loom's constructors (mpi/type_decode.hpp).
const Counter kContentsRead = register_counter("types", "not planned", "contents read");
std::string isa_text() {
  return std::string("isa=") + pack::isa_name(config().isa);
}
const bool kTypesFormat = format_area("types", {10, isa_text});

std::atomic<bool> planning_at_first_use{false};

// This thread's CPU time: what planning costs the program, whatever else shares its core (the
// cost model learns from it, and LOOM_STATS reports it). Read once or twice per plan.
uint64_t thread_cpu_ns() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<uint64_t>(t.tv_sec) * 1000000000u + static_cast<uint64_t>(t.tv_nsec);
}

// Lazy planning's rule (docs/commit.md): a type is planned once the host time of its calls
// reaches kPaybackFactor times the predicted cost of its plan, so that planning costs at most
// 1 / kPaybackFactor of the time the program already spent in the host's calls with that type,
// however soon the type is freed afterwards; a type used for long is planned after a bounded
// number of host calls (ski rental).
constexpr double kPaybackFactor = 20;
// A call counts towards the plan at most this much: the host's own overhead and its datatype
// engine's work on the bytes (what engines spend on blocks of 8 bytes and more, out of cache) and
// on the blocks (what MPICH spends on 4-byte blocks of an indexed type, ~17 ns, rounded up; an
// entry of the type's description stands for a block: indexed types have one or two per block,
// vectors fewer), so that a blocking call's wait for a late peer, which no plan could shorten,
// does not plan a type early.
constexpr double kHostCallNsAtMost = 1000, kHostNsPerByteAtMost = 0.5, kHostNsPerEntryAtMost = 20;

// The predicted CPU time of planning a type from its outline and description. A new signature is
// built: a fixed part; a part per entry of its description (reading and hashing its signature,
// decoding, compiling); and the check against the host's packing, for a type spanning up to
// kVerifySpanBytes a part per byte of its span (the scratch copy) and per byte it packs (the host
// packs them, block by block: a per-byte bound of a per-block cost), for a larger one per byte
// its parts pack. A signature planned before is reused: a fixed part and a part per entry.
// Each model starts from figures measured on the machine Loom was tuned on (docs/commit.md),
// rounded up, and corrects them by every plan it times (a running ratio of actual to predicted,
// in log space, clamped).
struct PlanningCost {
  double fixed_ns, ns_per_entry, ns_per_span_byte, ns_per_packed_byte;
  double base_ns(int64_t entries, int64_t span_checked, int64_t packed_checked) const {
    return fixed_ns + ns_per_entry * static_cast<double>(entries) +
           ns_per_span_byte * static_cast<double>(span_checked) +
           ns_per_packed_byte * static_cast<double>(packed_checked);
  }
};
const PlanningCost kBuildCost{10000, 300, 0.1, 1.0}, kReuseCost{3000, 2, 0, 0};

class LearnedScale {
 public:
  double apply(double base) const {
    return base * std::exp(log_scale_.load(std::memory_order_relaxed));
  }
  // A plan that took `actual_ns` whose base prediction was `base`: the scale moves a quarter of
  // the way towards the ratio, each step clamped, so that one outlier moves it little.
  void learn(double base, double actual_ns) {
    if (base <= 0 || actual_ns <= 0) return;
    const double step = std::clamp(std::log(actual_ns / base), -2.0, 2.0);
    const double old = log_scale_.load(std::memory_order_relaxed);
    log_scale_.store(std::clamp(old + 0.25 * (step - old), -3.0, 3.0), std::memory_order_relaxed);
  }

 private:
  std::atomic<double> log_scale_{0};
};
LearnedScale build_scale, reuse_scale;

// Types whose one element spans at most this many bytes are packed once by the host and
// once by the new plan when planned; larger types have their largest parts within this span
// checked the same way while decoding. Any difference leaves the type to the host. This
// catches host quirks no decoder can know (Open MPI 4.1 packs a descending run of bytes,
// hvector(n, 1, -1, MPI_BYTE), in ascending order).
constexpr int64_t kVerifySpanBytes = int64_t{1} << 20;

uint64_t outline_hash(const TypeOutline& o) {
  uint64_t h = static_cast<uint64_t>(o.combiner) * 0x9E3779B97F4A7C15ull;
  for (int64_t v : {o.entries[0], o.entries[1], o.entries[2], o.entries[3], o.size, o.lb, o.extent,
                    o.true_lb, o.true_extent})
    h = (h ^ static_cast<uint64_t>(v)) * 0x100000001B3ull;
  return h | 1;  // 0: no outline
}

// What earlier types of the same outline tell of a new one. A program that frees and builds
// the same type again and again is using one type: while its outline has not shown otherwise,
// the host time of an incarnation freed unplanned passes to the next (so the type's plan pays
// over its incarnations, and still at most once per kPaybackFactor of their host time), and once
// one of them was planned the next ones are predicted to find that plan by signature (cheap).
// The first type of the outline that did not find it (the same outline, other contents: a
// particle code's exchange rebuilt with new displacements) ends both for the outline, so a wrong
// guess costs at most one plan per outline. Bounded: the table starts again past kMaxOutlines.
class OutlineHistory {
 public:
  static constexpr size_t kMaxOutlines = 4096;
  // Whether a type of `outline` likely reuses a plan; adds to `*host_ticks` the host time left by
  // freed types of the outline.
  bool begin(uint64_t outline, uint64_t* host_ticks) {
    std::lock_guard lock(mutex_);
    auto it = seen_.find(outline);
    if (it == seen_.end() || it->second.missed) return false;
    *host_ticks += it->second.pooled_ticks;
    it->second.pooled_ticks = 0;
    return it->second.planned > 0;
  }
  // A type of `outline` freed before its plan, after `host_ticks` of host time.
  void freed_unplanned(uint64_t outline, uint64_t host_ticks) {
    std::lock_guard lock(mutex_);
    if (seen_.size() >= kMaxOutlines && !seen_.count(outline)) seen_.clear();
    Seen& s = seen_[outline];
    if (!s.missed) s.pooled_ticks += host_ticks;
  }
  // A type of `outline` freed after `calls` messages, `host_calls` of them served by the host
  // before its plan in `host_ticks` in all.
  void lived(uint64_t outline, uint64_t calls, uint64_t host_calls, uint64_t host_ticks) {
    if (!calls) return;
    std::lock_guard lock(mutex_);
    if (seen_.size() >= kMaxOutlines && !seen_.count(outline)) seen_.clear();
    Seen& s = seen_[outline];
    s.lives[s.lives_seen++ % kLives] = calls;
    if (host_calls)
      s.ticks_per_call = static_cast<double>(host_ticks) / static_cast<double>(host_calls);
  }
  // What the last types of `outline` say a new one will take of the host's time over its life:
  // the shortest of their last kLives lives, at the host's time per call they were seen to take;
  // 0 when they have not said yet.
  double expected_life_ticks(uint64_t outline) {
    std::lock_guard lock(mutex_);
    auto it = seen_.find(outline);
    if (it == seen_.end() || it->second.lives_seen == 0) return 0;
    const Seen& s = it->second;
    const uint64_t n = std::min<uint64_t>(s.lives_seen, kLives);
    const uint64_t shortest = *std::min_element(s.lives, s.lives + n);
    return static_cast<double>(shortest) * s.ticks_per_call;
  }
  // A type of `outline` planned: its plan found by signature (`reused`) or built.
  void planned(uint64_t outline, bool reused) {
    std::lock_guard lock(mutex_);
    if (seen_.size() >= kMaxOutlines && !seen_.count(outline)) seen_.clear();
    Seen& s = seen_[outline];
    if (s.planned > 0 && !reused) s.missed = true;
    if (s.missed) s.pooled_ticks = 0;
    ++s.planned;
  }

 private:
  static constexpr uint64_t kLives = 4;
  struct Seen {
    uint64_t planned = 0;
    uint64_t pooled_ticks = 0;
    bool missed = false;
    uint64_t lives[kLives] = {};  // messages of the last types freed, the latest at lives_seen - 1
    uint64_t lives_seen = 0;
    double ticks_per_call = 0;  // the host's, before a plan, of the last type that said
  };
  std::mutex mutex_;
  std::unordered_map<uint64_t, Seen> seen_;
};

OutlineHistory& outline_history() {
  static auto* history = new OutlineHistory();  // outlives static destructors of user code
  return *history;
}

// Reads what the rule needs of an unplanned type, once per handle: a few envelope queries,
// nothing proportional to the type (type_outline, description_size).
void estimate(MPI_Datatype type, UnplannedType& record) {
  const TypeOutline outline = type_outline(type);
  const uint64_t hash = outline_hash(outline);
  int opened = 0;
  const int64_t entries = description_size(type, &opened);
  count(kContentsRead, static_cast<uint64_t>(opened));
  // Hosts answer anything for an empty type's true extent (MPICH: negative, Open MPI: true_lb
  // INT64_MAX); an empty type's check packs nothing.
  const int64_t size = std::max<int64_t>(outline.size, 0);
  const int64_t true_extent = size > 0 ? std::max<int64_t>(outline.true_extent, 0) : 0;
  const bool whole = true_extent <= kVerifySpanBytes;
  const int64_t span_checked = whole ? true_extent : 0;
  const int64_t packed_checked = whole ? size : std::min(size, kVerifySpanBytes);
  const uint64_t own_ticks = record.host_ticks.load(std::memory_order_relaxed);
  uint64_t host_ticks = own_ticks;
  const bool reuse = outline_history().begin(hash, &host_ticks);
  record.carried_ticks.store(host_ticks - own_ticks, std::memory_order_relaxed);
  const double base = (reuse ? kReuseCost : kBuildCost)
                          .base_ns(std::max<int64_t>(entries, 0), span_checked, packed_checked);
  const double predicted = (reuse ? reuse_scale : build_scale).apply(base);
  record.host_ticks.store(host_ticks, std::memory_order_relaxed);
  record.element_bytes.store(static_cast<uint64_t>(size), std::memory_order_relaxed);
  record.element_entries.store(static_cast<uint64_t>(std::max<int64_t>(entries, 0)),
                               std::memory_order_relaxed);
  record.predicted_ns.store(static_cast<uint64_t>(base), std::memory_order_relaxed);
  record.predicted_reuse.store(reuse, std::memory_order_relaxed);
  record.outline.store(hash, std::memory_order_relaxed);
  if (config().debug)
    std::fprintf(stderr,
                 "loom: type not planned yet: %lld description entries, %lld bytes checked, "
                 "%s predicted at %.1f us (%.1f us before correction), budget %.1f us, "
                 "%.1f us of host time from earlier types of its outline\n",
                 static_cast<long long>(entries), static_cast<long long>(packed_checked),
                 reuse ? "a plan made before for its outline" : "its plan", 1e-3 * predicted,
                 1e-3 * base, 1e-3 * kPaybackFactor * predicted,
                 1e-3 * static_cast<double>(host_ticks) / clock_ticks_per_ns());
  const double budget = kPaybackFactor * predicted * clock_ticks_per_ns();
  // Earlier types of the outline lived long enough that the plan pays within this one's expected
  // life, as the rule asks of the time already spent: planned at its first call.
  const double expected = outline_history().expected_life_ticks(hash);
  const bool pays_in_life = expected >= budget;
  if (pays_in_life && config().debug)
    std::fprintf(stderr,
                 "loom: types of its outline lived %.1f us of host time: planned at its first "
                 "call\n",
                 1e-3 * expected / clock_ticks_per_ns());
  record.budget_ticks.store(pays_in_life ? 1 : std::max<uint64_t>(1, static_cast<uint64_t>(budget)),
                            std::memory_order_relaxed);
}

void reset(UnplannedType& record) {
  record.host_ticks.store(0, std::memory_order_relaxed);
  record.budget_ticks.store(0, std::memory_order_relaxed);
  record.element_bytes.store(0, std::memory_order_relaxed);
  record.element_entries.store(0, std::memory_order_relaxed);
  record.predicted_ns.store(0, std::memory_order_relaxed);
  record.predicted_reuse.store(0, std::memory_order_relaxed);
  record.outline.store(0, std::memory_order_relaxed);
  record.carried_ticks.store(0, std::memory_order_relaxed);
  record.uses.store(0, std::memory_order_relaxed);
}

std::shared_ptr<const TypePlan> build_plan(MPI_Datatype type);

// Handles are pointers (Open MPI) or ints (MPICH) and may be reused after a free, so
// entries are erased before the host frees the handle. Every change bumps `epoch`,
// which lets each thread keep its recent lookups without taking the lock.
//
// What a freed type's life showed of its outline (OutlineHistory): its host calls before any plan
// and their time (its own: host_ticks less what it carried), and all its messages.
struct FreedLife {
  uint64_t outline = 0, host_ticks = 0, host_calls = 0, messages = 0;
  uint64_t pooled_ticks = 0;  // unplanned: all its host time, carried included, for the next
  static uint64_t own_ticks(const UnplannedType& r) {
    const uint64_t all = r.host_ticks.load(std::memory_order_relaxed);
    const uint64_t carried = r.carried_ticks.load(std::memory_order_relaxed);
    return all > carried ? all - carried : 0;
  }
  static FreedLife of(const UnplannedType& r) {
    const uint64_t uses = r.uses.load(std::memory_order_relaxed);
    return {r.outline.load(std::memory_order_relaxed), own_ticks(r), uses, uses,
            r.host_ticks.load(std::memory_order_relaxed)};
  }
};

// MPI_Type_commit only records the handle, in CommittedHandles below; the registry holds the
// handles Loom planned (and named types, planned at their first use), and the few committed
// handles that found no room there, each with its record from a pool.
class TypeRegistry {
 public:
  // What the registry knows of `type` (`*known` false: nothing). A waiting entry is planned now
  // when `plan_waiting`, else answered with its record (lazy planning). Remembers the answer in
  // this thread's lookups.
  TypeUse find(MPI_Datatype type, bool* known, bool plan_waiting) {
    uint64_t now = detail::registry_epoch.load(std::memory_order_acquire);
    TypeUse use;
    bool built = true;
    uint64_t generation = 0;
    {
      std::shared_lock lock(mutex_);
      auto it = entries_.find(type);
      *known = it != entries_.end();
      if (*known) {
        use.plan = it->second.plan.get();
        built = it->second.built;
        generation = it->second.generation;
        if (!built && !plan_waiting) use.unplanned = it->second.record;
      }
    }
    // Waiting without a record (recorded while types were planned at first use): planned now.
    if (*known && !built && !use.unplanned) plan_waiting = true;
    if (!*known) return use;
    if (!built && plan_waiting) {
      // Built outside the lock: a racing thread builds the same plan, the first one is kept.
      const uint64_t start = thread_cpu_ns();
      bool reused = false;
      std::shared_ptr<const TypePlan> made = plan_for(type, &reused);
      const uint64_t took = thread_cpu_ns() - start;
      count(kPlanningTime, took);
      std::unique_lock lock(mutex_);
      auto it = entries_.find(type);
      if (it != entries_.end() && it->second.generation == generation && !it->second.built) {
        Entry& e = it->second;
        if (e.record) {
          const UnplannedType& r = *e.record;
          const uint64_t base = r.predicted_ns.load(std::memory_order_relaxed);
          const bool predicted_reuse = r.predicted_reuse.load(std::memory_order_relaxed) != 0;
          if (base && predicted_reuse == reused)
            (reused ? reuse_scale : build_scale)
                .learn(static_cast<double>(base), static_cast<double>(took));
          if (config().debug)
            std::fprintf(stderr,
                         "loom: planned after %llu host calls of %.1f us in all: %s in %.1f us "
                         "of CPU time (predicted %.1f us before correction, budget %.1f us)\n",
                         static_cast<unsigned long long>(r.uses.load(std::memory_order_relaxed)),
                         1e-3 * static_cast<double>(r.host_ticks.load(std::memory_order_relaxed)) /
                             clock_ticks_per_ns(),
                         reused ? "reused" : "built", 1e-3 * static_cast<double>(took),
                         1e-3 * static_cast<double>(base),
                         1e-3 *
                             static_cast<double>(r.budget_ticks.load(std::memory_order_relaxed)) /
                             clock_ticks_per_ns());
          e.outline = r.outline.load(std::memory_order_relaxed);
          e.calls_before_plan = r.uses.load(std::memory_order_relaxed);
          e.host_ticks_before_plan = FreedLife::own_ticks(r);
          e.messages_at_plan = made ? made->messages.load(std::memory_order_relaxed) : 0;
          release_record(e.record);
          e.record = nullptr;
        }
        e.plan = std::move(made);
        e.built = true;
        if (e.plan && e.committed) count(kAccelerated);
        detail::registry_epoch.fetch_add(1, std::memory_order_acq_rel);
      }
      use = {};
      if (it != entries_.end()) {
        use.plan = it->second.built ? it->second.plan.get() : nullptr;
        use.unplanned = it->second.built ? nullptr : it->second.record;
      }
      now = detail::registry_epoch.load(std::memory_order_acquire);
    }
    detail::lookup_slot(type) = {type, now, use};
    return use;
  }

  // `type` was committed (`committed`) or otherwise became usable: planned later. With
  // `record`, its uses are counted towards its plan in a record of its own (lazy planning);
  // `carried`, when given, is what an earlier record of the same handle had counted.
  void add_waiting(MPI_Datatype type, bool committed, bool record,
                   const UnplannedType* carried = nullptr) {
    std::unique_lock lock(mutex_);
    Entry& e = entries_[type];
    if (e.record) release_record(e.record);
    e = {nullptr, false, committed, ++generation_, record ? acquire_record(type) : nullptr};
    if (e.record && carried)
      for (auto field :
           {&UnplannedType::host_ticks, &UnplannedType::budget_ticks, &UnplannedType::element_bytes,
            &UnplannedType::predicted_ns, &UnplannedType::predicted_reuse, &UnplannedType::outline,
            &UnplannedType::carried_ticks, &UnplannedType::uses})
        (e.record->*field)
            .store((carried->*field).load(std::memory_order_relaxed), std::memory_order_relaxed);
    detail::registry_epoch.fetch_add(1, std::memory_order_acq_rel);
  }

  void insert(MPI_Datatype type, std::shared_ptr<const TypePlan> plan) {
    std::unique_lock lock(mutex_);
    Entry& e = entries_[type];
    if (e.record) release_record(e.record);
    e = {std::move(plan), true, false, ++generation_, nullptr};
    detail::registry_epoch.fetch_add(1, std::memory_order_acq_rel);
  }

  // A duplicate shares the original's plan, or, if that is not built yet, waits for its own.
  // False when the registry does not know `original`.
  bool add_duplicate(MPI_Datatype original, MPI_Datatype duplicate) {
    std::unique_lock lock(mutex_);
    auto it = entries_.find(original);
    if (it == entries_.end()) return false;
    Entry copy = it->second;
    copy.committed = false;
    copy.generation = ++generation_;
    copy.record = copy.built || !it->second.record ? nullptr : acquire_record(duplicate);
    Entry& e = entries_[duplicate];
    if (e.record) release_record(e.record);
    e = std::move(copy);
    detail::registry_epoch.fetch_add(1, std::memory_order_acq_rel);
    return true;
  }

  std::shared_ptr<const TypePlan> get(MPI_Datatype type) {
    std::shared_lock lock(mutex_);
    auto it = entries_.find(type);
    return it == entries_.end() ? nullptr : it->second.plan;
  }

  // False when the registry did not know `type`; `*waiting`: it had not been planned, and then
  // `*left` is what its record had counted (its outline and host time), if it had one.
  // Forgets `type`; `*left` gets its life: what its record had counted, or, for a type planned
  // after waiting, that and its messages since.
  bool erase(MPI_Datatype type, bool* waiting, FreedLife* left) {
    std::unique_lock lock(mutex_);
    auto it = entries_.find(type);
    if (it == entries_.end()) return false;
    const Entry& e = it->second;
    *waiting = !e.built;
    if (UnplannedType* r = e.record) {
      *left = FreedLife::of(*r);
      release_record(r);
    } else if (e.built && e.outline) {
      const uint64_t planned = e.plan ? e.plan->messages.load(std::memory_order_relaxed) : 0;
      *left = {
          e.outline, e.host_ticks_before_plan, e.calls_before_plan,
          e.calls_before_plan + (planned > e.messages_at_plan ? planned - e.messages_at_plan : 0)};
    }
    entries_.erase(it);
    detail::registry_epoch.fetch_add(1, std::memory_order_acq_rel);
    return true;
  }

 private:
  struct Entry {
    std::shared_ptr<const TypePlan> plan;  // null: no plan (host), or not built yet
    bool built;
    bool committed;         // by MPI_Type_commit: counted in TypesAccelerated once built
    uint64_t generation;    // tells a rebuilt or re-committed handle from the one a build began on
    UnplannedType* record;  // not built yet, under lazy planning: its uses so far
    // Planned after waiting: its outline, the host's calls and time before the plan, and the
    // plan's message count then (TypePlan::messages), for OutlineHistory::lived.
    uint64_t outline = 0, calls_before_plan = 0, host_ticks_before_plan = 0, messages_at_plan = 0;
  };
  // Records live in a pool and are never freed: a thread's cached lookup may still read one after
  // its entry is gone (it then no longer names the handle, and the lookup misses).
  UnplannedType* acquire_record(MPI_Datatype type) {
    UnplannedType* r = nullptr;
    if (!free_records_.empty()) {
      r = free_records_.back();
      free_records_.pop_back();
    } else {
      r = &records_.emplace_back();
    }
    reset(*r);
    r->key.store(handle_key(type), std::memory_order_release);
    return r;
  }
  void release_record(UnplannedType* r) {
    r->key.store(UnplannedType::kFreed, std::memory_order_release);
    free_records_.push_back(r);
  }
  static std::shared_ptr<const TypePlan> plan_for(MPI_Datatype type, bool* reused);
  std::shared_mutex mutex_;
  std::unordered_map<MPI_Datatype, Entry> entries_;
  std::deque<UnplannedType> records_;
  std::vector<UnplannedType*> free_records_;
  uint64_t generation_ = 0;
};

// Handles committed and not planned since, kept apart from the registry so that MPI_Type_commit
// costs a few loads and one compare-and-swap, not the registry's lock and an allocation: some
// applications commit types on their critical path (docs/commit.md). Each slot is the handle's
// record of its host time (UnplannedType); planning moves the handle to the registry. Open
// addressing over a fixed table; a handle that finds no free slot among its first kProbes goes to
// the registry at once. Keys 0 and 1 mark empty and freed slots (no host's handle takes those
// values; one that did would go to the registry).
class CommittedHandles {
 public:
  // Records `type` with a fresh record; false when there is no room for it.
  bool add(MPI_Datatype type) {
    const uintptr_t k = handle_key(type);
    if (k <= UnplannedType::kFreed) return false;
    const size_t home = slot_of(k);
    UnplannedType* free_slot = nullptr;
    for (size_t i = 0; i < kProbes; ++i) {
      UnplannedType& slot = slots_[(home + i) & (kSlots - 1)];
      const uintptr_t value = slot.key.load(std::memory_order_acquire);
      if (value == k) return true;  // committed again: the same type, its record kept
      if (value <= UnplannedType::kFreed && !free_slot) free_slot = &slot;
      if (value == UnplannedType::kEmpty) break;  // the handle is not further along
    }
    if (!free_slot) return false;
    reset(*free_slot);
    if (!concurrent_calls()) {  // the application orders its MPI calls: a plain store
      free_slot->key.store(k, std::memory_order_release);
      return true;
    }
    uintptr_t expected = free_slot->key.load(std::memory_order_relaxed);
    return expected <= UnplannedType::kFreed &&
           free_slot->key.compare_exchange_strong(expected, k, std::memory_order_acq_rel);
  }

  // The record of `type`, or null when it is not recorded.
  UnplannedType* find(MPI_Datatype type) {
    const uintptr_t k = handle_key(type);
    if (k <= UnplannedType::kFreed) return nullptr;
    const size_t home = slot_of(k);
    for (size_t i = 0; i < kProbes; ++i) {
      UnplannedType& slot = slots_[(home + i) & (kSlots - 1)];
      const uintptr_t value = slot.key.load(std::memory_order_acquire);
      if (value == UnplannedType::kEmpty) break;
      if (value == k) return &slot;
    }
    return nullptr;
  }

  // Whether `type` was recorded; it no longer is.
  bool remove(MPI_Datatype type) {
    UnplannedType* slot = find(type);
    if (!slot) return false;
    uintptr_t expected = handle_key(type);
    slot->key.compare_exchange_strong(expected, UnplannedType::kFreed, std::memory_order_acq_rel);
    return true;
  }

 private:
  static constexpr size_t kSlots = 4096, kProbes = 16;
  static size_t slot_of(uintptr_t k) {
    return static_cast<size_t>((k * 0x9E3779B97F4A7C15ull) >> 52);  // top 12 bits: 4096 slots
  }
  UnplannedType slots_[kSlots];
};

// Zero-initialised before any code runs and trivially destructible: usable at any time, with
// no initialisation guard on the commit path.
constinit CommittedHandles committed_handle_table;
CommittedHandles& committed_handles() {
  return committed_handle_table;
}

// Plans by type signature (type_signature), kept across MPI_Type_free: applications that build,
// commit and free the same type again and again (per exchange, or every few messages) decode,
// compile and check it once, and its method decisions and online trials carry over. Bounded:
// past kMaxPlans plans or kMaxSignatureBytes of signatures the oldest are dropped (a live handle
// keeps its own reference to its plan).
class PlanCache {
 public:
  static constexpr size_t kMaxPlans = 1024;
  static constexpr size_t kMaxSignatureBytes = size_t{64} << 20;

  bool find(const std::string& signature, std::shared_ptr<const TypePlan>* plan) {
    std::lock_guard lock(mutex_);
    auto it = plans_.find(signature);
    if (it == plans_.end()) return false;
    *plan = it->second;
    return true;
  }

  void insert(std::string signature, std::shared_ptr<const TypePlan> plan) {
    if (signature.size() > kMaxSignatureBytes / 4) return;
    std::lock_guard lock(mutex_);
    const size_t bytes = signature.size();
    auto [it, added] = plans_.try_emplace(std::move(signature), std::move(plan));
    if (!added) return;
    order_.push_back(&it->first);
    bytes_ += bytes;
    while (plans_.size() > kMaxPlans || bytes_ > kMaxSignatureBytes) {
      auto oldest = plans_.find(*order_.front());
      order_.pop_front();
      bytes_ -= oldest->first.size();
      plans_.erase(oldest);
    }
  }

 private:
  std::mutex mutex_;
  std::unordered_map<std::string, std::shared_ptr<const TypePlan>> plans_;
  std::deque<const std::string*> order_;  // keys in insertion order (nodes never move)
  size_t bytes_ = 0;
};

PlanCache& plan_cache() {
  static auto* cache = new PlanCache();  // outlives static destructors of user code
  return *cache;
}

TypeRegistry& registry() {
  static auto* r = new TypeRegistry();  // outlives static destructors of user code
  return *r;
}

// Builds a plan and checks it against the host's own view of the type (size, extent,
// true bounds, and for small types the packed bytes themselves). Any disagreement means Loom
// misunderstood the type: no plan, so the host packs it. Never a wrong answer.
std::shared_ptr<const TypePlan> build_plan(MPI_Datatype type) {
  std::string why;
  bool mixed_basic_types = false;
  MPI_Datatype basic_type = MPI_DATATYPE_NULL;
  auto layout = decode_datatype(type, &why, &mixed_basic_types, kVerifySpanBytes, &basic_type);
  MPI_Count host_size = 0, lb = 0, extent = 0, true_lb = 0, true_extent = 0;
  PMPI_Type_size_x(type, &host_size);
  PMPI_Type_get_extent_x(type, &lb, &extent);
  PMPI_Type_get_true_extent_x(type, &true_lb, &true_extent);
  if (layout) {
    types::Layout canonical = types::canonicalize(*layout);
    const types::Bounds b = types::bounds(canonical);
    const int64_t size = types::packed_size(canonical);
    if (size != host_size)
      why = "size " + std::to_string(size) + " != host " + std::to_string(host_size);
    else if (size > 0 && (b.lo != true_lb || b.hi - b.lo != true_extent))
      why = "true bounds differ from the host's";
    else {
      const int64_t blocks = types::dense_runs(canonical);
      const double span = static_cast<double>(std::max<MPI_Count>(extent, true_extent));
      model::TypeShape shape;
      shape.mean_block = blocks ? static_cast<double>(size) / static_cast<double>(blocks) : 0.0;
      shape.spread = size > 0 ? std::max(1.0, span / static_cast<double>(size)) : 1.0;
      shape.nested = types::strided_levels(*layout) >= 2;  // as built, not as canonicalised
      auto plan = std::make_shared<TypePlan>(
          pack::Plan(canonical, extent, config().isa), std::string(), shape, mixed_basic_types,
          basic_type, TrueBounds{static_cast<int64_t>(true_lb), static_cast<int64_t>(true_extent)});
      const auto loom_pack = [&plan](const void* base, void* packed) {
        exec::pack(plan->plan, base, 1, packed, exec::MemoryKind::Host);
      };
      if (true_extent <= kVerifySpanBytes &&
          !host_packs_same(type, size, true_lb, true_extent, loom_pack)) {
        if (config().debug)
          std::fprintf(stderr, "loom: type left to the host MPI: it packs %s differently\n",
                       types::describe(canonical).c_str());
        return nullptr;
      }
      plan->describe = plan->plan.describe() + " | " + types::describe(canonical);
      if (config().debug)
        std::fprintf(stderr, "loom: plan %s (model: mean block %.1f B, spread %.2f, %s)\n",
                     plan->describe.c_str(), shape.mean_block, shape.spread,
                     shape.nested ? "nested" : "flat");
      return plan;
    }
  }
  if (config().debug) std::fprintf(stderr, "loom: type left to the host MPI: %s\n", why.c_str());
  return nullptr;
}

std::shared_ptr<const TypePlan> TypeRegistry::plan_for(MPI_Datatype type, bool* reused) {
  std::string signature;
  const bool has_signature = type_signature(type, &signature);
  std::shared_ptr<const TypePlan> plan;
  *reused = has_signature && plan_cache().find(signature, &plan);
  outline_history().planned(outline_hash(type_outline(type)), *reused);
  if (*reused) {
    count(kReused);
    if (config().debug)
      std::fprintf(stderr, "loom: plan %s (the same type as one built before)\n",
                   plan ? plan->describe.c_str() : "none: host");
    return plan;
  }
  count(kDecoded);
  plan = build_plan(type);
  if (has_signature) plan_cache().insert(std::move(signature), plan);
  return plan;
}

// Plans `type`, which waits in the committed table: moves it into the registry, with what its
// record counted (for the debug line and the cost model's correction), and builds it there.
TypeUse plan_from_table(MPI_Datatype type, UnplannedType& record) {
  registry().add_waiting(type, true, true, &record);
  committed_handles().remove(type);
  bool known = false;
  return registry().find(type, &known, true);
}

}  // namespace

std::atomic<uint64_t> detail::registry_epoch{0};

namespace {
// Both clocks read as libloom loads: host_clock's rate is their ratio over the time since.
struct ClockOrigin {
  uint64_t ticks;
  std::chrono::steady_clock::time_point at;
};
const ClockOrigin clock_origin{host_clock(), std::chrono::steady_clock::now()};
}  // namespace

std::atomic<double> detail::clock_rate{0};

double detail::measure_clock_rate() {
#if defined(__x86_64__) || defined(__i386__)
  const uint64_t ticks = host_clock() - clock_origin.ticks;
  const double ns =
      std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - clock_origin.at)
          .count();
  if (ns <= 0 || ticks == 0) return 1;
  const double rate = static_cast<double>(ticks) / ns;
  // Kept once the interval makes the two reads' gap negligible (10 ms: well below 0.01%).
  if (ns >= 1e7) clock_rate.store(rate, std::memory_order_relaxed);
  return rate;
#else
  clock_rate.store(1, std::memory_order_relaxed);
  return 1;
#endif
}

TypeUse detail::use_slow(MPI_Datatype type) {
  if (config().disabled || type == MPI_DATATYPE_NULL) return {};
  const bool eager = plans_at_first_use();
  bool known = false;
  // The registry first: a type planned and then committed again is in both.
  if (TypeUse use = registry().find(type, &known, eager); known) {
    if (use.unplanned && use.unplanned->budget_ticks.load(std::memory_order_relaxed) == 0)
      estimate(type, *use.unplanned);
    return use;
  }
  if (UnplannedType* record = committed_handles().find(type)) {
    if (eager) return plan_from_table(type, *record);
    if (record->budget_ticks.load(std::memory_order_relaxed) == 0) estimate(type, *record);
    const TypeUse use{nullptr, record};
    lookup_slot(type) = {type, 0, use};  // valid while the record names the handle
    return use;
  }
  // Named types are never committed or freed: planned on first use. Any other derived type was
  // never committed: host.
  if (!is_named(type)) return {};
  registry().insert(type, build_plan(type));
  return registry().find(type, &known, true);
}

const TypePlan* plan_now(MPI_Datatype type) {
  const TypeUse use = use_type(type);
  if (!use.unplanned) return use.plan;
  if (UnplannedType* record = committed_handles().find(type))
    return plan_from_table(type, *record).plan;
  bool known = false;
  return registry().find(type, &known, true).plan;
}

namespace {

// The most host time (ticks) a call of `elements` elements of `record`'s type counts
// (note_host_time); no limit for elements < 0.
uint64_t host_time_cap(const UnplannedType& record, int64_t elements) {
  if (elements < 0) return ~uint64_t{0};
  const double n = static_cast<double>(elements);
  const double bytes =
      n * static_cast<double>(record.element_bytes.load(std::memory_order_relaxed));
  const double entries =
      n * static_cast<double>(record.element_entries.load(std::memory_order_relaxed));
  return static_cast<uint64_t>(
      (kHostCallNsAtMost + bytes * kHostNsPerByteAtMost + entries * kHostNsPerEntryAtMost) *
      clock_ticks_per_ns());
}

// Adds `credit` ticks to the record of `type`, planning it once they reach its budget.
void add_host_time(MPI_Datatype type, UnplannedType& record, uint64_t credit) {
  const uint64_t host = record.host_ticks.load(std::memory_order_relaxed) + credit;
  record.host_ticks.store(host, std::memory_order_relaxed);
  uint64_t budget = record.budget_ticks.load(std::memory_order_relaxed);
  if (budget == 0) {  // recommitted under this thread's cached lookup
    estimate(type, record);
    budget = record.budget_ticks.load(std::memory_order_relaxed);
  }
  if (host >= budget) plan_now(type);
}

// The thread's non-blocking messages of unplanned types (type_registry.hpp,
// host_messages_pending): direct-mapped by request handle, a newer request taking its slot.
struct PendingHostMessage {
  MPI_Request request;
  MPI_Datatype type;
  UnplannedType* record;
  uint64_t outline;  // the record's outline when noted: a handle freed and reused is not credited
  uint64_t room;     // ticks the message may still count
};
constexpr int kPendingSlotBits = 7;
struct PendingHostMessages {
  PendingHostMessage slots[1 << kPendingSlotBits] = {};
  static size_t slot_of(MPI_Request request) {
    uint64_t k = 0;
    std::memcpy(&k, &request, std::min(sizeof k, sizeof request));
    return static_cast<size_t>((k * 0x9E3779B97F4A7C15ull) >> (64 - kPendingSlotBits));
  }
};
thread_local std::unique_ptr<PendingHostMessages> pending_table;

// The message noted for `request`, taken out of the table (its record null when none was).
PendingHostMessage take_pending_host_message(MPI_Request request) {
  if (!pending_table || request == MPI_REQUEST_NULL) return {};
  PendingHostMessage& slot = pending_table->slots[PendingHostMessages::slot_of(request)];
  if (!slot.record || slot.request != request) return {};
  const PendingHostMessage m = slot;
  slot = {};
  --detail::pending_host_messages;
  return m;
}

}  // namespace

void detail::note_pending_host_message(MPI_Request request, MPI_Datatype type,
                                       UnplannedType& record, int64_t elements, uint64_t counted) {
  if (record.key.load(std::memory_order_relaxed) != handle_key(type)) return;  // planned meanwhile
  const uint64_t cap = host_time_cap(record, elements);
  if (cap <= counted) return;
  if (!pending_table) pending_table = std::make_unique<PendingHostMessages>();
  PendingHostMessage& slot = pending_table->slots[PendingHostMessages::slot_of(request)];
  if (!slot.record) ++detail::pending_host_messages;
  slot = {request, type, &record, record.outline.load(std::memory_order_relaxed), cap - counted};
}

void credit_completed(const MPI_Request* handles, int n, const int* indices, int completed,
                      uint64_t took) {
  if (!pending_table || completed <= 0) return;
  const uint64_t share = took / static_cast<uint64_t>(completed);
  for (int k = 0; k < completed && detail::pending_host_messages > 0; ++k) {
    const int i = indices ? indices[k] : k;
    if (i < 0 || i >= n) continue;
    const PendingHostMessage m = take_pending_host_message(handles[i]);
    if (m.record && m.record->key.load(std::memory_order_relaxed) == handle_key(m.type) &&
        m.record->outline.load(std::memory_order_relaxed) == m.outline)
      add_host_time(m.type, *m.record, std::min(share, m.room));
  }
}

void forget_pending_host_message(MPI_Request request) {
  take_pending_host_message(request);
}

uint64_t note_host_time(MPI_Datatype type, UnplannedType& record, uint64_t took, int64_t elements) {
  if (record.key.load(std::memory_order_relaxed) != handle_key(type)) return 0;  // gone meanwhile
  const uint64_t credit = std::min(took, host_time_cap(record, elements));
  record.uses.store(record.uses.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  add_host_time(type, record, credit);
  return credit;
}

void plan_at_first_use(bool on) {
  planning_at_first_use.store(on, std::memory_order_relaxed);
}

bool plans_at_first_use() {
  return config().plan_eagerly || planning_at_first_use.load(std::memory_order_relaxed);
}

std::shared_ptr<const TypePlan> share_plan(MPI_Datatype type) {
  if (!plan_now(type)) return nullptr;
  return registry().get(type);
}

void record_commit(MPI_Datatype type) {
  count(kCommitted);
  if (!committed_handles().add(type)) registry().add_waiting(type, true, !plans_at_first_use());
}

void forget_type(MPI_Datatype type) {
  forget_constructed(type);
  // Both: a type planned and then committed again is in each.
  FreedLife left;
  if (const UnplannedType* slot = committed_handles().find(type)) left = FreedLife::of(*slot);
  const bool in_table = committed_handles().remove(type);
  bool waiting = false;
  const bool in_registry = registry().erase(type, &waiting, &left);
  if ((in_table && !in_registry) || (in_registry && waiting)) {
    count(kFreedUnplanned);
    if (left.outline && left.pooled_ticks)
      outline_history().freed_unplanned(left.outline, left.pooled_ticks);
  }
  if (left.outline)
    outline_history().lived(left.outline, left.messages, left.host_calls, left.host_ticks);
}

void record_duplicate(MPI_Datatype oldtype, MPI_Datatype newtype) {
  if (registry().add_duplicate(oldtype, newtype)) return;
  // Committed and not planned yet, or named (named types count as committed): the duplicate
  // waits for its own plan.
  if (committed_handles().find(oldtype) || is_named(oldtype))
    registry().add_waiting(newtype, false, !plans_at_first_use());
}

}  // namespace loom::mpi
