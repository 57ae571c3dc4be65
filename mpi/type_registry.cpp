// The registry of datatype plans: a handle recorded at commit, decoded and compiled on first use,
// released at free, shared at dup.
#include "mpi/type_registry.hpp"

#include <algorithm>
#include <climits>
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

// MPI_Type_commit calls, and the committed types Loom built a plan for (on first use).
const Counter kCommitted = register_counter("types", "", "committed");
const Counter kAccelerated = register_counter("types", "", "accelerated");
std::string isa_text() {
  return std::string("isa=") + pack::isa_name(config().isa);
}
const bool kTypesFormat = format_area("types", {10, isa_text});

// Handles are pointers (Open MPI) or ints (MPICH) and may be reused after a free, so
// entries are erased before the host frees the handle. Every change bumps `epoch`,
// which lets each thread keep its last lookup without taking the lock.
//
// MPI_Type_commit only records the handle: its plan is built on the type's first use (a pack,
// a send, a query), so that a commit costs about what the host's does, and a type committed
// but never used with Loom costs nothing more (docs/commit.md).
class TypeRegistry {
 public:
  // The plan for `type`, built now if `type` was committed and not used since; null when the
  // registry does not know `type` (`*known` false) or Loom has no plan for it. Remembers the
  // answer in this thread's last lookup.
  const TypePlan* find(MPI_Datatype type, bool* known) {
    uint64_t now = detail::registry_epoch.load(std::memory_order_acquire);
    const TypePlan* plan = nullptr;
    bool built = true;
    uint64_t generation = 0;
    {
      std::shared_lock lock(mutex_);
      auto it = entries_.find(type);
      *known = it != entries_.end();
      if (*known) {
        plan = it->second.plan.get();
        built = it->second.built;
        generation = it->second.generation;
      }
    }
    if (!built) {
      // Built outside the lock: a racing thread builds the same plan, the first one is kept.
      std::shared_ptr<const TypePlan> made = plan_for(type);
      std::unique_lock lock(mutex_);
      auto it = entries_.find(type);
      if (it != entries_.end() && it->second.generation == generation && !it->second.built) {
        it->second.plan = std::move(made);
        it->second.built = true;
        if (it->second.plan && it->second.committed) count(kAccelerated);
        detail::registry_epoch.fetch_add(1, std::memory_order_acq_rel);
      }
      plan = it != entries_.end() ? it->second.plan.get() : nullptr;
      now = detail::registry_epoch.load(std::memory_order_acquire);
    }
    detail::last_lookup = {type, now, plan};
    return plan;
  }

  // `type` was committed (`committed`) or otherwise became usable: its plan comes on first use.
  void add_unbuilt(MPI_Datatype type, bool committed) {
    std::unique_lock lock(mutex_);
    entries_[type] = {nullptr, false, committed, ++generation_};
    detail::registry_epoch.fetch_add(1, std::memory_order_acq_rel);
  }

  void insert(MPI_Datatype type, std::shared_ptr<const TypePlan> plan) {
    std::unique_lock lock(mutex_);
    entries_[type] = {std::move(plan), true, false, ++generation_};
    detail::registry_epoch.fetch_add(1, std::memory_order_acq_rel);
  }

  // A duplicate shares the original's plan, or, if that is not built yet, is built on its own
  // first use. False when the registry does not know `original`.
  bool add_duplicate(MPI_Datatype original, MPI_Datatype duplicate) {
    std::unique_lock lock(mutex_);
    auto it = entries_.find(original);
    if (it == entries_.end()) return false;
    Entry copy = it->second;
    copy.committed = false;
    copy.generation = ++generation_;
    entries_[duplicate] = std::move(copy);
    detail::registry_epoch.fetch_add(1, std::memory_order_acq_rel);
    return true;
  }

  std::shared_ptr<const TypePlan> get(MPI_Datatype type) {
    std::shared_lock lock(mutex_);
    auto it = entries_.find(type);
    return it == entries_.end() ? nullptr : it->second.plan;
  }

  void erase(MPI_Datatype type) {
    std::unique_lock lock(mutex_);
    if (entries_.erase(type)) detail::registry_epoch.fetch_add(1, std::memory_order_acq_rel);
  }

 private:
  struct Entry {
    std::shared_ptr<const TypePlan> plan;  // null: no plan (host), or not built yet
    bool built;
    bool committed;       // by MPI_Type_commit: counted in TypesAccelerated once built
    uint64_t generation;  // tells a rebuilt or re-committed handle from the one a build began on
  };
  static std::shared_ptr<const TypePlan> plan_for(MPI_Datatype type);
  std::shared_mutex mutex_;
  std::unordered_map<MPI_Datatype, Entry> entries_;
  uint64_t generation_ = 0;
};

// Handles committed and not used since, kept apart from the registry so that MPI_Type_commit
// costs a few loads and one compare-and-swap, not the registry's lock and an allocation: some
// applications commit types on their critical path (docs/commit.md). A handle's first use moves
// it to the registry. Open addressing over a fixed table; a handle that finds no free slot among
// its first kProbes goes to the registry at once. Keys 0 and 1 mark empty and freed slots (no
// host's handle takes those values; one that did would go to the registry).
class CommittedHandles {
 public:
  // Records `type`; false when there is no room for it.
  bool add(MPI_Datatype type) {
    const uintptr_t k = key(type);
    if (k <= kFreed) return false;
    const size_t home = slot_of(k);
    std::atomic<uintptr_t>* free_slot = nullptr;
    for (size_t i = 0; i < kProbes; ++i) {
      std::atomic<uintptr_t>& slot = slots_[(home + i) & (kSlots - 1)];
      const uintptr_t value = slot.load(std::memory_order_acquire);
      if (value == k) return true;  // committed again
      if (value <= kFreed && !free_slot) free_slot = &slot;
      if (value == kEmpty) break;  // the handle is not further along
    }
    if (!free_slot) return false;
    if (!concurrent_calls()) {  // the application orders its MPI calls: a plain store
      free_slot->store(k, std::memory_order_release);
      return true;
    }
    uintptr_t expected = free_slot->load(std::memory_order_relaxed);
    return expected <= kFreed &&
           free_slot->compare_exchange_strong(expected, k, std::memory_order_acq_rel);
  }

  // Whether `type` is recorded; with `remove`, it no longer is.
  bool find(MPI_Datatype type, bool remove) {
    const uintptr_t k = key(type);
    if (k <= kFreed) return false;
    const size_t home = slot_of(k);
    bool found = false;
    for (size_t i = 0; i < kProbes; ++i) {
      std::atomic<uintptr_t>& slot = slots_[(home + i) & (kSlots - 1)];
      uintptr_t value = slot.load(std::memory_order_acquire);
      if (value == kEmpty) break;
      if (value != k) continue;
      found = true;
      if (!remove) break;
      slot.compare_exchange_strong(value, kFreed, std::memory_order_acq_rel);
    }
    return found;
  }

 private:
  static constexpr uintptr_t kEmpty = 0, kFreed = 1;
  static constexpr size_t kSlots = 4096, kProbes = 16;
  static uintptr_t key(MPI_Datatype type) {
    static_assert(sizeof(MPI_Datatype) <= sizeof(uintptr_t));
    uintptr_t k = 0;
    std::memcpy(&k, &type, sizeof type);
    return k;
  }
  static size_t slot_of(uintptr_t k) {
    return static_cast<size_t>((k * 0x9E3779B97F4A7C15ull) >> 52);  // top 12 bits: 4096 slots
  }
  std::atomic<uintptr_t> slots_[kSlots] = {};
};

// Zero-initialised before any code runs and trivially destructible: usable at any time, with
// no initialisation guard on the commit path.
CommittedHandles committed_handle_table;
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

// Types whose one element spans at most this many bytes are packed once by the host and
// once by the new plan at commit; larger types have their largest parts within this span
// checked the same way while decoding. Any difference leaves the type to the host. This
// catches host quirks no decoder can know (Open MPI 4.1 packs a descending run of bytes,
// hvector(n, 1, -1, MPI_BYTE), in ascending order).
constexpr int64_t kVerifySpanBytes = int64_t{1} << 20;

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

std::shared_ptr<const TypePlan> TypeRegistry::plan_for(MPI_Datatype type) {
  std::string signature;
  const bool has_signature = type_signature(type, &signature);
  std::shared_ptr<const TypePlan> plan;
  if (has_signature && plan_cache().find(signature, &plan)) {
    if (config().debug)
      std::fprintf(stderr, "loom: plan %s (the same type as one built before)\n",
                   plan ? plan->describe.c_str() : "none: host");
    return plan;
  }
  plan = build_plan(type);
  if (has_signature) plan_cache().insert(std::move(signature), plan);
  return plan;
}

}  // namespace

std::atomic<uint64_t> detail::registry_epoch{0};

const TypePlan* detail::find_plan_slow(MPI_Datatype type) {
  if (config().disabled || type == MPI_DATATYPE_NULL) return nullptr;
  bool known = false;
  if (const TypePlan* plan = registry().find(type, &known); known) return plan;
  // A type committed and not used since joins the registry, which builds its plan.
  // Named types are never committed or freed: plan them on first use. Any other derived type
  // was never committed: host.
  if (committed_handles().find(type, true))
    registry().add_unbuilt(type, true);
  else if (is_named(type))
    registry().insert(type, build_plan(type));
  else
    return nullptr;
  return registry().find(type, &known);
}

std::shared_ptr<const TypePlan> share_plan(MPI_Datatype type) {
  if (!find_plan(type)) return nullptr;
  return registry().get(type);
}

void record_commit(MPI_Datatype type) {
  count(kCommitted);
  if (!committed_handles().add(type)) registry().add_unbuilt(type, true);
}

void forget_type(MPI_Datatype type) {
  // Both: a type used and then committed again is in each.
  committed_handles().find(type, true);
  registry().erase(type);
}

void record_duplicate(MPI_Datatype oldtype, MPI_Datatype newtype) {
  if (registry().add_duplicate(oldtype, newtype)) return;
  // Committed and not used yet, or named (named types count as committed): planned on first use.
  if (committed_handles().find(oldtype, false) || is_named(oldtype))
    registry().add_unbuilt(newtype, false);
}

}  // namespace loom::mpi
