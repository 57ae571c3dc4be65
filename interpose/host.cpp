#include "interpose/host.hpp"

#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>

namespace loom::interpose {
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
  resolve(h.Type_commit, "MPI_Type_commit", &PMPI_Type_commit);
  resolve(h.Type_free, "MPI_Type_free", &PMPI_Type_free);
  resolve(h.Type_dup, "MPI_Type_dup", &PMPI_Type_dup);
  resolve(h.Pack, "MPI_Pack", &PMPI_Pack);
  resolve(h.Unpack, "MPI_Unpack", &PMPI_Unpack);
  resolve(h.Pack_size, "MPI_Pack_size", &PMPI_Pack_size);
  resolve(h.Finalize, "MPI_Finalize", &PMPI_Finalize);
  return h;
}

}  // namespace

const HostMpi& host() {
  static const HostMpi table = load();
  return table;
}

}  // namespace loom::interpose
