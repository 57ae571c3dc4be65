// MPI_Pack and MPI_Unpack with Loom's plans. Unusual calls (bad arguments, null buffers, a type
// without a plan) go to the host MPI, which reports exactly the error it always would, through the
// communicator's error handler. Too small a buffer goes to the host only if the host
// detects it: MPICH 4.0 instead packs past `outsize`, so there Loom raises
// MPI_ERR_TRUNCATE itself and writes nothing.
#include <cstring>

#include "exec/execute.hpp"
#include "mpi/host.hpp"
#include "mpi/type_registry.hpp"
#include "ops/pack.hpp"
#include "runtime/runtime.hpp"

namespace loom::ops {
using namespace loom::runtime;  // NOLINT: the layers below
using namespace loom::exec;     // NOLINT: the layers below
using namespace loom::mpi;      // NOLINT: the layers below

using namespace runtime;  // NOLINT: counters
using namespace mpi;      // NOLINT: host table, plans

namespace {

// Probed once, on the first call that does not fit: does the host report a too small
// buffer as an error, leaving the buffer and *position alone?
struct HostTruncation {
  bool pack_reports = false;
  bool unpack_reports = false;
};

const HostTruncation& host_truncation() {
  static const HostTruncation probed = [] {
    HostTruncation h;
    MPI_Comm comm;
    PMPI_Comm_dup(MPI_COMM_SELF, &comm);
    PMPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
    const int values[4] = {1, 2, 3, 4};
    unsigned char out[64];
    std::memset(out, 0xEE, sizeof out);
    int position = 0;
    const int pack_rc = PMPI_Pack(values, 4, MPI_INT, out, 5, &position, comm);
    bool untouched = true;
    for (unsigned char c : out) untouched = untouched && c == 0xEE;
    h.pack_reports = pack_rc != MPI_SUCCESS && untouched && position == 0;
    int unpacked[4] = {0, 0, 0, 0};
    position = 0;  // one whole int of input for four: MPICH unpacks it and says success
    const int unpack_rc = PMPI_Unpack(values, 4, &position, unpacked, 4, MPI_INT, comm);
    h.unpack_reports = unpack_rc != MPI_SUCCESS && unpacked[0] == 0 && position == 0;
    PMPI_Comm_free(&comm);
    return h;
  }();
  return probed;
}

enum class Route { Loom, Host, Truncate };

// How to serve a pack or unpack of `incount` elements between a user buffer and a
// packed buffer of `bufsize` bytes.
Route route(int incount, MPI_Datatype type, const void* user, const void* packed,
            const int* position, int bufsize, MPI_Comm comm, bool unpack, const TypePlan** plan,
            int64_t* bytes) {
  if (incount < 0 || !position || *position < 0 || comm == MPI_COMM_NULL || !user || !packed)
    return Route::Host;
  *plan = find_plan(type);
  if (!*plan) return Route::Host;
  *bytes = static_cast<int64_t>(incount) * (*plan)->plan.size();
  if (*bytes <= static_cast<int64_t>(bufsize) - *position) return Route::Loom;
  int initialized = 0;
  PMPI_Initialized(&initialized);
  if (!initialized) return Route::Host;
  const HostTruncation& h = host_truncation();
  return (unpack ? h.unpack_reports : h.pack_reports) ? Route::Host : Route::Truncate;
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
  switch (route(incount, datatype, inbuf, outbuf, position, outsize, comm, false, &plan, &bytes)) {
    case Route::Host:
      count(Counter::PackHost);
      return host().Pack(inbuf, incount, datatype, outbuf, outsize, position, comm);
    case Route::Truncate:
      return raise_truncate(comm);
    case Route::Loom:
      break;
  }
  {
    KernelTimer timer(Counter::PackNanoseconds);
    char* out = static_cast<char*>(outbuf) + *position;
    exec::pack(plan->plan, inbuf, incount, out, exec::memory_kind(inbuf, outbuf));
  }
  *position += static_cast<int>(bytes);
  count_call(Counter::PackLoom, Counter::PackBytes, static_cast<uint64_t>(bytes));
  return MPI_SUCCESS;
}

int unpack(const void* inbuf, int insize, int* position, void* outbuf, int outcount,
           MPI_Datatype datatype, MPI_Comm comm) {
  const TypePlan* plan = nullptr;
  int64_t bytes = 0;
  switch (route(outcount, datatype, outbuf, inbuf, position, insize, comm, true, &plan, &bytes)) {
    case Route::Host:
      count(Counter::UnpackHost);
      return host().Unpack(inbuf, insize, position, outbuf, outcount, datatype, comm);
    case Route::Truncate:
      return raise_truncate(comm);
    case Route::Loom:
      break;
  }
  {
    KernelTimer timer(Counter::UnpackNanoseconds);
    const char* in = static_cast<const char*>(inbuf) + *position;
    exec::unpack(plan->plan, in, outcount, outbuf, exec::memory_kind(inbuf, outbuf));
  }
  *position += static_cast<int>(bytes);
  count_call(Counter::UnpackLoom, Counter::UnpackBytes, static_cast<uint64_t>(bytes));
  return MPI_SUCCESS;
}

// The host's answer is the contract users size their buffers by; Loom packs exactly
// size * count bytes, which never exceeds it.
int pack_size(int incount, MPI_Datatype datatype, MPI_Comm comm, int* size) {
  return host().Pack_size(incount, datatype, comm, size);
}

}  // namespace loom::ops
