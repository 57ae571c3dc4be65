// MPI_Pack and MPI_Unpack with Loom's plans. Unusual calls (bad arguments, null buffers, a type
// without a plan or not planned yet) go to the host MPI, which reports exactly the error it always
// would, through the communicator's error handler. Too small a buffer goes to the host only if the
// host detects it: MPICH 4.0 instead packs past `outsize`, so there Loom raises MPI_ERR_TRUNCATE
// itself and writes nothing.
#include <cstring>

#include "exec/execute.hpp"
#include "mpi/host.hpp"
#include "mpi/quirks.hpp"
#include "mpi/type_registry.hpp"
#include "ops/pack.hpp"
#include "runtime/counters.hpp"

namespace loom::ops {
using namespace loom::runtime;  // NOLINT: the layers below
using namespace loom::exec;     // NOLINT: the layers below
using namespace loom::mpi;      // NOLINT: the layers below

namespace {

// MPI_Pack and MPI_Unpack calls served by Loom, forwarded to the host, forwarded to the host
// because Loom has not planned their committed type yet (lazy planning, docs/commit.md), and
// Loom's bytes.
const Counter kPackLoom = register_counter("pack", "MPI_Pack", "loom");
const Counter kPackHost = register_counter("pack", "MPI_Pack", "host");
const Counter kPackUnplanned = register_counter("pack", "MPI_Pack", "host (not planned yet)");
const Counter kPackBytes = register_counter("pack", "MPI_Pack", "bytes");
const Counter kUnpackLoom = register_counter("pack", "MPI_Unpack", "loom");
const Counter kUnpackHost = register_counter("pack", "MPI_Unpack", "host");
const Counter kUnpackUnplanned = register_counter("pack", "MPI_Unpack", "host (not planned yet)");
const Counter kUnpackBytes = register_counter("pack", "MPI_Unpack", "bytes");

enum class Route { Loom, Host, Unplanned, Truncate };

// How to serve a pack or unpack of `incount` elements between a user buffer and a
// packed buffer of `bufsize` bytes. Route::Unplanned: the host's, timed for `*unplanned`.
Route route(int incount, MPI_Datatype type, const void* user, const void* packed,
            const int* position, int bufsize, MPI_Comm comm, bool unpack, const TypePlan** plan,
            int64_t* bytes, UnplannedType** unplanned) {
  if (incount < 0 || !position || *position < 0 || comm == MPI_COMM_NULL || !user || !packed)
    return Route::Host;
  const TypeUse use = use_type(type);
  *plan = use.plan;
  if (use.unplanned) {
    // Device memory only Loom's plan can reach; a large call pays for the plan alone.
    if (exec::device_memory(user) || exec::device_memory(packed) ||
        worth_planning_before(*use.unplanned, incount))
      *plan = plan_now(type);
    else
      *unplanned = use.unplanned;
  }
  if (!*unplanned && !*plan) return Route::Host;
  // Not planned yet: the host packs, but the truncation check below must not depend on it. The
  // type's size is in its record once estimated (MPI_Type_size), else asked of the host.
  int64_t element_bytes = 0;
  if (*plan) {
    element_bytes = (*plan)->plan.size();
  } else if ((*unplanned)->budget_ticks.load(std::memory_order_relaxed) > 0) {
    element_bytes =
        static_cast<int64_t>((*unplanned)->element_bytes.load(std::memory_order_relaxed));
  } else {
    MPI_Count type_size = 0;
    if (PMPI_Type_size_x(type, &type_size) != MPI_SUCCESS) return Route::Host;
    element_bytes = static_cast<int64_t>(type_size);
  }
  *bytes = static_cast<int64_t>(incount) * element_bytes;
  // Where it fits, or the host reports the truncation itself: Loom's plan, or the host's call.
  const Route served = *unplanned ? Route::Unplanned : Route::Loom;
  const Route host = *unplanned ? Route::Unplanned : Route::Host;
  if (*bytes <= static_cast<int64_t>(bufsize) - *position) return served;
  int initialized = 0;
  PMPI_Initialized(&initialized);
  if (!initialized) return host;
  const HostTruncation& h = mpi::host_truncation();
  return (unpack ? h.unpack_reports : h.pack_reports) ? host : Route::Truncate;
}

// The host's call for a type Loom has not planned yet: timed for the type's plan.
template <typename Call>
int host_call(MPI_Datatype type, UnplannedType* unplanned, int elements, Call&& call) {
  UnplannedCall timed;
  timed.add(type, unplanned, elements);
  return timed.run(call);
}

int raise_truncate(MPI_Comm comm) {
  PMPI_Comm_call_errhandler(comm, MPI_ERR_TRUNCATE);
  return MPI_ERR_TRUNCATE;
}

}  // namespace

int pack(const void* inbuf, int incount, MPI_Datatype datatype, void* outbuf, int outsize,
         int* position, MPI_Comm comm) {
  const TypePlan* plan = nullptr;
  int64_t bytes = 0;
  UnplannedType* unplanned = nullptr;
  switch (route(incount, datatype, inbuf, outbuf, position, outsize, comm, false, &plan, &bytes,
                &unplanned)) {
    case Route::Host:
      count(kPackHost);
      return host().Pack(inbuf, incount, datatype, outbuf, outsize, position, comm);
    case Route::Unplanned:
      count(kPackUnplanned);
      return host_call(datatype, unplanned, incount, [&] {
        return host().Pack(inbuf, incount, datatype, outbuf, outsize, position, comm);
      });
    case Route::Truncate:
      return raise_truncate(comm);
    case Route::Loom:
      break;
  }
  {
    KernelTimer timer(kPackTime);
    char* out = static_cast<char*>(outbuf) + *position;
    exec::pack(plan->plan, inbuf, incount, out, exec::memory_kind(inbuf, outbuf));
  }
  *position += static_cast<int>(bytes);
  count_call(kPackLoom, kPackBytes, static_cast<uint64_t>(bytes));
  return MPI_SUCCESS;
}

int unpack(const void* inbuf, int insize, int* position, void* outbuf, int outcount,
           MPI_Datatype datatype, MPI_Comm comm) {
  const TypePlan* plan = nullptr;
  int64_t bytes = 0;
  UnplannedType* unplanned = nullptr;
  switch (route(outcount, datatype, outbuf, inbuf, position, insize, comm, true, &plan, &bytes,
                &unplanned)) {
    case Route::Host:
      count(kUnpackHost);
      return host().Unpack(inbuf, insize, position, outbuf, outcount, datatype, comm);
    case Route::Unplanned:
      count(kUnpackUnplanned);
      return host_call(datatype, unplanned, outcount, [&] {
        return host().Unpack(inbuf, insize, position, outbuf, outcount, datatype, comm);
      });
    case Route::Truncate:
      return raise_truncate(comm);
    case Route::Loom:
      break;
  }
  {
    KernelTimer timer(kUnpackTime);
    const char* in = static_cast<const char*>(inbuf) + *position;
    exec::unpack(plan->plan, in, outcount, outbuf, exec::memory_kind(inbuf, outbuf));
  }
  *position += static_cast<int>(bytes);
  count_call(kUnpackLoom, kUnpackBytes, static_cast<uint64_t>(bytes));
  return MPI_SUCCESS;
}

// The host's answer is the contract users size their buffers by; Loom packs exactly
// size * count bytes, which never exceeds it.
int pack_size(int incount, MPI_Datatype datatype, MPI_Comm comm, int* size) {
  return host().Pack_size(incount, datatype, comm, size);
}

}  // namespace loom::ops
