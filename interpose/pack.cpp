// MPI_Pack family. Anything unusual (bad arguments, too small a buffer, a type without
// a plan) is forwarded to the host MPI, which then reports exactly the error it always
// would, through the communicator's error handler.
#include <climits>

#include "interpose/datatype.hpp"
#include "interpose/host.hpp"
#include "interpose/runtime.hpp"

using loom::interpose::count;
using loom::interpose::Counter;
using loom::interpose::find_plan;
using loom::interpose::host;
using loom::interpose::KernelTimer;

namespace {

// The plan to use, or null when the call must go to the host.
const loom::interpose::TypePlan* plan_for(int incount, MPI_Datatype type, const int* position,
                                          int bufsize, MPI_Comm comm, int64_t* bytes) {
  if (incount < 0 || !position || *position < 0 || comm == MPI_COMM_NULL) return nullptr;
  const auto* plan = find_plan(type);
  if (!plan) return nullptr;
  *bytes = static_cast<int64_t>(incount) * plan->plan.size();
  if (*bytes > static_cast<int64_t>(bufsize) - *position) return nullptr;
  return plan;
}

}  // namespace

extern "C" int MPI_Pack(const void* inbuf, int incount, MPI_Datatype datatype, void* outbuf,
                        int outsize, int* position, MPI_Comm comm) {
  int64_t bytes = 0;
  const auto* plan = plan_for(incount, datatype, position, outsize, comm, &bytes);
  if (!plan) {
    count(Counter::PackHost);
    return host().Pack(inbuf, incount, datatype, outbuf, outsize, position, comm);
  }
  {
    KernelTimer timer(Counter::PackNanoseconds);
    plan->plan.pack(inbuf, incount, static_cast<char*>(outbuf) + *position);
  }
  *position += static_cast<int>(bytes);
  count(Counter::PackLoom);
  count(Counter::PackBytes, static_cast<uint64_t>(bytes));
  return MPI_SUCCESS;
}

extern "C" int MPI_Unpack(const void* inbuf, int insize, int* position, void* outbuf, int outcount,
                          MPI_Datatype datatype, MPI_Comm comm) {
  int64_t bytes = 0;
  const auto* plan = plan_for(outcount, datatype, position, insize, comm, &bytes);
  if (!plan) {
    count(Counter::UnpackHost);
    return host().Unpack(inbuf, insize, position, outbuf, outcount, datatype, comm);
  }
  {
    KernelTimer timer(Counter::UnpackNanoseconds);
    plan->plan.unpack(static_cast<const char*>(inbuf) + *position, outcount, outbuf);
  }
  *position += static_cast<int>(bytes);
  count(Counter::UnpackLoom);
  count(Counter::UnpackBytes, static_cast<uint64_t>(bytes));
  return MPI_SUCCESS;
}

// The host's answer is the contract users size their buffers by; Loom packs exactly
// size * count bytes, which never exceeds it.
extern "C" int MPI_Pack_size(int incount, MPI_Datatype datatype, MPI_Comm comm, int* size) {
  return host().Pack_size(incount, datatype, comm, size);
}
