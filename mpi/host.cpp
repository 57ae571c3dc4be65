#include "mpi/host.hpp"

#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>

namespace loom::mpi {
namespace {

template <typename Fn>
void resolve(Fn& slot, const char* name, Fn profiling_entry) {
  // RTLD_NEXT finds the definition after libloom in the lookup order: the host MPI,
  // or a PMPI tool layered between us. If Loom was linked statically into the
  // application there is no "next", and the PMPI entry is the host.
  slot = reinterpret_cast<Fn>(dlsym(RTLD_NEXT, name));
  if (!slot) slot = profiling_entry;
  if (!slot) {
    std::fprintf(stderr, "loom: cannot find host MPI function %s\n", name);
    std::abort();
  }
}

HostMpi load() {
  HostMpi h{};
#define LOOM_HOST_RESOLVE(name) resolve(h.name, "MPI_" #name, &PMPI_##name);
  LOOM_HOST_FUNCTIONS(LOOM_HOST_RESOLVE)
#undef LOOM_HOST_RESOLVE
#ifdef LOOM_PERSISTENT_COLLECTIVES
#define LOOM_HOST_RESOLVE_PERSISTENT(name) \
  resolve(h.name, LOOM_PERSISTENT_PREFIX #name, &LOOM_PERSISTENT_PROFILING(name));
  LOOM_HOST_PERSISTENT_FUNCTIONS(LOOM_HOST_RESOLVE_PERSISTENT)
#undef LOOM_HOST_RESOLVE_PERSISTENT
#endif
  return h;
}

}  // namespace

__attribute__((init_priority(101))) const HostMpi host_mpi = load();

}  // namespace loom::mpi
