#include "mpi/quirks.hpp"

#include <dlfcn.h>
#include <mpi.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "base/env.hpp"
#include "mpi/host_identity.hpp"

namespace loom::mpi {

bool host_delivers_truncated_bytes() {
  return !host_is_mpich();
}

int host_typed_warmup_messages() {
  return host_is_mpich() ? 16 : 0;
}

bool host_moves_one_run_elements_as_bytes() {
  static const bool moves = !host_is_mpich();
  return moves;
}

bool host_receives_packed_into_mixed_types() {
  return !host_is_mpich();
}

namespace {

// Open MPI's same-node transport as this run's settings choose it.
bool ompi_single_copy_off() {
  const char* mechanism = std::getenv("OMPI_MCA_btl_vader_single_copy_mechanism");
  return mechanism && std::string(mechanism) == "none";
}
// The UCX pml has its own shared-memory protocols.
bool ompi_ucx_pml() {
  const char* pml = std::getenv("OMPI_MCA_pml");
  return pml && std::string(pml).find("ucx") != std::string::npos && pml[0] != '^';
}

}  // namespace

bool host_sends_contiguous_by_single_copy() {
  return !host_is_mpich() && !ompi_single_copy_off() && !ompi_ucx_pml();
}

bool host_copies_contiguous_through_its_queue() {
  static const bool copies = !host_is_mpich() && ompi_single_copy_off() && !ompi_ucx_pml();
  return copies;
}

bool host_isendrecv_releases_derived_types() {
  static const bool affected = [] {
    if (!host_is_mpich()) return false;
    // "MPICH 4.0.2"; an MPICH derivative that names itself otherwise counts as affected.
    int major = 0, minor = 0;
    if (std::sscanf(host_mpi_version().c_str(), "MPICH %d.%d", &major, &minor) != 2) return true;
    return major < 4 || (major == 4 && minor < 3);
  }();
  return affected;
}

bool host_persistent_uniform_collectives_misdeliver() {
  return host_is_mpich();
}

model::BuiltInRule builtin_rule_for_host() {
  model::BuiltInRule rule;
  if (host_is_mpich()) {
    rule.host_from_message_bytes = 16384;
    rule.host_above_block_bytes = 128;
    rule.weak_from_message_bytes = 4096;
  }
  return rule;
}

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

bool host_reads_device_memory() {
  static constexpr base::EnvVar kCudaAware{
      "LOOM_CUDA_AWARE", "the host's MPIX_Query_cuda_support",
      "1: the host MPI reads device memory itself; 0: Loom stages every device buffer"};
  if (const char* value = base::read(kCudaAware)) {
    if (!std::strcmp(value, "1")) return true;
    if (!std::strcmp(value, "0")) return false;
    base::warn_bad_value(kCudaAware, value, "is not 0 or 1", "asking the host MPI");
  }
  // Looked up rather than called: hosts built without their CUDA extension lack the symbol.
  using Query = int (*)();
  if (auto query = reinterpret_cast<Query>(dlsym(RTLD_DEFAULT, "MPIX_Query_cuda_support")))
    return query() == 1;
  return false;
}

}  // namespace loom::mpi
