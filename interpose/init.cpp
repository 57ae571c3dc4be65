// MPI_Init/Finalize and communicator-lifetime family: Loom learns the node layout as MPI
// starts, finishes what the user left in flight and prints LOOM_STATS as MPI finalizes.
#include "interpose/device_memory.hpp"
#include "interpose/host.hpp"
#include "interpose/locality.hpp"
#include "interpose/method.hpp"
#include "interpose/requests.hpp"
#include "interpose/runtime.hpp"
#include "interpose/self_channel.hpp"
#include "interpose/shared_exchange.hpp"
#include "interpose/staging.hpp"

using loom::interpose::config;
using loom::interpose::host;

namespace {

// After the host's MPI_Init: the node layout (collective) and the method model.
void start_loom() {
  if (config().disabled) return;
  loom::interpose::init_locality();
  loom::interpose::preload_method_model();
  int provided = MPI_THREAD_SINGLE;
  PMPI_Query_thread(&provided);
  loom::interpose::mpi_thread_multiple.store(provided == MPI_THREAD_MULTIPLE,
                                             std::memory_order_relaxed);
  loom::interpose::note_thread_level(provided);
  loom::interpose::start_device_support();
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
  if (comm) loom::interpose::forget_communicator(*comm);
  if (comm) loom::interpose::forget_self_channel(*comm);
  return host().Comm_free(comm);
}

extern "C" int MPI_Comm_disconnect(MPI_Comm* comm) {
  if (comm) loom::interpose::forget_communicator(*comm);
  if (comm) loom::interpose::forget_self_channel(*comm);
  return host().Comm_disconnect(comm);
}

extern "C" int MPI_Finalize(void) {
  if (!config().disabled) {
    // Requests the user freed while active still owe their unpacks and staging buffers.
    loom::interpose::reap_detached_requests(true);
    // Collective frees, in creation order on every rank, while the host still runs.
    loom::interpose::release_shared_exchanges();
    if (config().stats) {
      int rank = 0;
      PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
      loom::interpose::print_stats(rank);
    }
  }
  const int rc = host().Finalize();
  loom::interpose::release_staging_pool();
  return rc;
}
