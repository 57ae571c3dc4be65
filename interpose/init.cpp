// MPI_Init/Finalize and communicator-lifetime family: Loom learns the node layout as MPI
// starts, finishes what the user left in flight and prints LOOM_STATS as MPI finalizes.
#include "exec/device_memory.hpp"
#include "mpi/communicator.hpp"
#include "mpi/host.hpp"
#include "mpi/locality.hpp"
#include "mpi/quirks.hpp"
#include "mpi/requests.hpp"
#include "ops/codec_slot.hpp"
#include "ops/method.hpp"
#include "ops/report.hpp"
#include "runtime/runtime.hpp"
#include "transport/seamed_wire.hpp"
#include "transport/self_channel.hpp"
#include "transport/shared_exchange.hpp"
#include "transport/staging.hpp"

using loom::mpi::host;
using loom::runtime::config;

namespace {

// After the host's MPI_Init: the node layout (collective) and the method model.
void start_loom() {
  if (config().disabled) return;
  loom::mpi::init_locality();
  loom::ops::preload_method_model();
  loom::ops::init_codec_slot();
  int provided = MPI_THREAD_SINGLE;
  PMPI_Query_thread(&provided);
  loom::runtime::mpi_thread_multiple.store(provided == MPI_THREAD_MULTIPLE,
                                           std::memory_order_relaxed);
  loom::transport::note_thread_level(provided);
  loom::exec::start_device_support(loom::mpi::host_reads_device_memory());
}

// Before the host frees `*comm` (or disconnects from it): what Loom keeps per communicator.
void forget(const MPI_Comm* comm) {
  if (comm) {
    loom::mpi::forget_communicator(*comm);
    loom::transport::forget_self_channel(*comm);
    loom::ops::forget_codec_slot(*comm);
  }
  loom::mpi::forget_comm_shapes();
}

}  // namespace

extern "C" int MPI_Init(int* argc, char*** argv) {
  const int rc = host().Init(argc, argv);
  if (rc == MPI_SUCCESS) start_loom();
  return rc;
}

extern "C" int MPI_Init_thread(int* argc, char*** argv, int required, int* provided) {
  const int rc = host().Init_thread(argc, argv, required, provided);
  if (rc == MPI_SUCCESS) start_loom();
  return rc;
}

extern "C" int MPI_Comm_free(MPI_Comm* comm) {
  forget(comm);
  return host().Comm_free(comm);
}

extern "C" int MPI_Comm_disconnect(MPI_Comm* comm) {
  forget(comm);
  return host().Comm_disconnect(comm);
}

// The loom_compress hint (docs/compress.md): the host keeps the info as usual; Loom reads its
// key. A bad value goes through the communicator's error handler as MPI_ERR_INFO_VALUE.
extern "C" int MPI_Comm_set_info(MPI_Comm comm, MPI_Info info) {
  const int rc = host().Comm_set_info(comm, info);
  if (rc != MPI_SUCCESS || config().disabled) return rc;
  return loom::ops::note_comm_info(comm, info);
}

extern "C" int MPI_Finalize(void) {
  if (!config().disabled) {
    // Requests the user freed while active still owe their unpacks and staging buffers.
    loom::mpi::reap_detached_requests(true);
    // Collective frees, in creation order on every rank, while the host still runs.
    loom::transport::release_shared_exchanges();
    if (config().stats) {
      int rank = 0;
      PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
      loom::ops::print_stats(rank);
    }
    loom::transport::release_seamed_wires();
  }
  const int rc = host().Finalize();
  loom::transport::release_staging_pool();
  return rc;
}
