// MPI_Type_* family: decode and compile at commit, release at free, share at dup.
#include "interpose/datatype.hpp"

#include <algorithm>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <shared_mutex>
#include <unordered_map>
#include <vector>

#include "interpose/host.hpp"
#include "interpose/runtime.hpp"
#include "interpose/type_decode.hpp"
#include "loom/loom.h"

namespace loom::interpose {
namespace {

// Handles are pointers (Open MPI) or ints (MPICH) and may be reused after a free, so
// entries are erased before the host frees the handle. Every change bumps `epoch`,
// which lets each thread keep its last lookup without taking the lock.
class TypeRegistry {
 public:
  // Looks `type` up under the lock and remembers the answer in this thread's last lookup.
  const TypePlan* find(MPI_Datatype type) {
    const uint64_t now = detail::registry_epoch.load(std::memory_order_acquire);
    const TypePlan* plan = nullptr;
    {
      std::shared_lock lock(mutex_);
      auto it = plans_.find(type);
      if (it != plans_.end()) plan = it->second.get();
    }
    detail::last_lookup = {type, now, plan};
    return plan;
  }

  void insert(MPI_Datatype type, std::shared_ptr<const TypePlan> plan) {
    std::unique_lock lock(mutex_);
    plans_[type] = std::move(plan);
    detail::registry_epoch.fetch_add(1, std::memory_order_acq_rel);
  }

  std::shared_ptr<const TypePlan> get(MPI_Datatype type) {
    std::shared_lock lock(mutex_);
    auto it = plans_.find(type);
    return it == plans_.end() ? nullptr : it->second;
  }

  void erase(MPI_Datatype type) {
    std::unique_lock lock(mutex_);
    if (plans_.erase(type)) detail::registry_epoch.fetch_add(1, std::memory_order_acq_rel);
  }

 private:
  std::shared_mutex mutex_;
  std::unordered_map<MPI_Datatype, std::shared_ptr<const TypePlan>> plans_;
};

TypeRegistry& registry() {
  static auto* r = new TypeRegistry();  // outlives static destructors of user code
  return *r;
}

// Types whose one element spans at most this many bytes are packed once by the host and
// once by the new plan at commit; any difference leaves the type to the host. This
// catches host quirks no decoder can know (Open MPI 4.1 packs a descending run of bytes,
// hvector(n, 1, -1, MPI_BYTE), in ascending order).
constexpr int64_t kVerifySpanBytes = int64_t{1} << 20;

// False when the host's packed bytes differ from the plan's.
bool host_packs_like(MPI_Datatype type, const pack::Plan& plan, int64_t true_lb,
                     int64_t true_extent) {
  const int size = static_cast<int>(plan.size());
  std::vector<unsigned char> user(static_cast<size_t>(true_extent));
  for (size_t i = 0; i < user.size(); ++i)
    user[i] = static_cast<unsigned char>((i * 2654435761u) >> 13);
  // The scratch copy stands where the type's bytes start. A type of absolute addresses
  // (sent from MPI_BOTTOM, which goes to the host anyway) would need an origin below
  // address 0, which no pointer can express: such a type is not compared.
  intptr_t origin = 0;
  if (__builtin_sub_overflow(reinterpret_cast<intptr_t>(user.data()), true_lb, &origin) ||
      origin < 0)
    return true;
  const auto* base = reinterpret_cast<const unsigned char*>(origin);
  std::vector<unsigned char> host_bytes(static_cast<size_t>(size), 0xA5), loom_bytes(host_bytes);
  int position = 0;
  if (PMPI_Pack(base, 1, type, host_bytes.data(), size, &position, MPI_COMM_SELF) != MPI_SUCCESS ||
      position != size)
    return false;
  plan.pack(base, 1, loom_bytes.data());
  return host_bytes == loom_bytes;
}

// Builds a plan and checks it against the host's own view of the type (size, extent,
// true bounds, and for small types the packed bytes themselves). Any disagreement means Loom
// misunderstood the type: no plan, so the host packs it. Never a wrong answer.
std::shared_ptr<const TypePlan> build_plan(MPI_Datatype type) {
  std::string why;
  bool mixed_basic_types = false;
  auto layout = decode_datatype(type, &why, &mixed_basic_types);
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
      auto plan = std::make_shared<TypePlan>(pack::Plan(canonical, extent, config().isa),
                                             std::string(), shape, mixed_basic_types);
      if (size > 0 && size <= INT_MAX && true_extent <= kVerifySpanBytes &&
          !host_packs_like(type, plan->plan, true_lb, true_extent)) {
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

bool is_named(MPI_Datatype type) {
  int ni, na, nt, combiner;
  return PMPI_Type_get_envelope(type, &ni, &na, &nt, &combiner) == MPI_SUCCESS &&
         combiner == MPI_COMBINER_NAMED;
}

}  // namespace

std::atomic<uint64_t> detail::registry_epoch{0};

const TypePlan* detail::find_plan_slow(MPI_Datatype type) {
  if (config().disabled || type == MPI_DATATYPE_NULL) return nullptr;
  if (const TypePlan* plan = registry().find(type)) return plan;
  // Named types are never committed or freed: plan them on first use. A derived type
  // that is not in the registry was never committed (or is not handled): host.
  if (!is_named(type)) return nullptr;
  auto plan = build_plan(type);
  if (!plan) return nullptr;
  registry().insert(type, plan);
  return registry().find(type);
}

std::shared_ptr<const TypePlan> share_plan(MPI_Datatype type) {
  if (!find_plan(type)) return nullptr;
  return registry().get(type);
}

}  // namespace loom::interpose

using loom::interpose::config;
using loom::interpose::Counter;
using loom::interpose::host;
using loom::interpose::registry;

extern "C" int MPI_Type_commit(MPI_Datatype* type) {
  const int rc = host().Type_commit(type);
  if (rc != MPI_SUCCESS || config().disabled) return rc;
  loom::interpose::count(Counter::TypesCommitted);
  if (auto plan = loom::interpose::build_plan(*type)) {
    registry().insert(*type, std::move(plan));
    loom::interpose::count(Counter::TypesAccelerated);
  }
  return rc;
}

extern "C" int MPI_Type_free(MPI_Datatype* type) {
  if (type && !config().disabled) registry().erase(*type);
  return host().Type_free(type);
}

// A duplicate of a committed type is committed without MPI_Type_commit: share the plan.
extern "C" int MPI_Type_dup(MPI_Datatype oldtype, MPI_Datatype* newtype) {
  const int rc = host().Type_dup(oldtype, newtype);
  if (rc != MPI_SUCCESS || config().disabled) return rc;
  if (auto plan = registry().get(oldtype))
    registry().insert(*newtype, std::move(plan));
  else if (loom::interpose::is_named(oldtype))  // named types count as committed
    if (auto built = loom::interpose::build_plan(*newtype))
      registry().insert(*newtype, std::move(built));
  return rc;
}

extern "C" int loom_type_is_accelerated(MPI_Datatype type) {
  return loom::interpose::find_plan(type) ? 1 : 0;
}

extern "C" int loom_type_describe(MPI_Datatype type, char* buf, int buflen) {
  const auto* plan = loom::interpose::find_plan(type);
  const std::string text = plan ? plan->describe : std::string("host (no Loom plan)");
  if (buf && buflen > 0) {
    const size_t n = std::min(text.size(), static_cast<size_t>(buflen - 1));
    std::memcpy(buf, text.data(), n);
    buf[n] = '\0';
  }
  return static_cast<int>(text.size());
}
