// Same-node transport for the blocking neighbourhood all-to-all collectives: each rank
// packs its outgoing blocks straight into its segment of one MPI shared-memory window
// per communicator (MPI_Win_allocate_shared), and each receiver unpacks straight from
// the sender's segment. The host's transfer (two copies through its own shared memory)
// disappears; what is left is one pack, one unpack and one MPI_Allreduce per call. Which
// calls take it is agreed by all ranks of the communicator (SharedExchange::take_window).
// See docs/collectives.md ("Same-node transport").
#pragma once

#include <mpi.h>

#include <cstdint>
#include <functional>
#include <vector>

namespace loom::transport {

class SharedExchange;

// The exchange of `comm`, created on its first use; null when `comm` cannot have one:
// ranks on more than one node (LOOM_RANKS_PER_NODE counts), LOOM_SHARED_COLLECTIVES=0, an
// intercommunicator, `eligible(comm)` false (asked once), or a window the host would not create.
// Every rank of `comm` gets the same answer, so all of them take the same path.
SharedExchange* shared_exchange(MPI_Comm comm, bool (*eligible)(MPI_Comm));

// Frees every window still held, in the order they were created (the same on every rank):
// called from MPI_Finalize, before the host finalizes.
void release_shared_exchanges();

class SharedExchange {
 public:
  // Writes this rank's outgoing blocks back to back into `data` (block k at the sum of
  // the sizes before it); returns an MPI error code.
  using Fill = std::function<int(char* data)>;
  // Consumes what the sender of receive block `block` sent for it: `bytes` at `data`.
  using Drain = std::function<int(int block, const char* data, int64_t bytes)>;

  // exchange() returns this when the window could not grow (the host refused on some
  // rank, and so every rank gets it): nothing was exchanged, the host must run the call.
  static constexpr int kNotExchanged = -1;
  // Calls the host's exchange carries before the ranks agree again whether the window pays:
  // 64 after an agreement or a window call that paid, twice as many after each agreement in a
  // row that found no rank paying, up to 1024 (each agreement is one MPI_Allreduce, which small
  // calls would notice if it came more often; docs/collectives.md, "Which calls it carries").
  static constexpr uint32_t kHostCallsBetweenAgreements = 64;
  static constexpr uint32_t kMostHostCallsBetweenAgreements = 1024;

  // Whether this call goes through the window, the same answer on every rank; collective, every
  // rank asks once per call. `pays`: whether this rank's part of the call would go faster through
  // it (transport::window_pays). The window carries a call when some rank's part pays: agreed
  // with one MPI_Allreduce on the communicator's first call and after each run of host calls
  // (kHostCallsBetweenAgreements above), and for the call after one the window carried by that
  // call's own reduction (exchange's `pays_next`). LOOM_SHARED_COLLECTIVES=1:
  // always. The window is allocated on the first call it carries; false for good if the host
  // refuses it.
  bool take_window(bool pays);
  // take_window's answer, without its arguments, where an agreement already sends this call to
  // the host: true, and the call counts as one of those; false where take_window must decide.
  bool host_call_agreed() {
    if (!agreed_ || window_next_ || host_calls_left_ == 0) return false;
    --host_calls_left_;
    return true;
  }

  // One collective exchange. `destinations[k]` (a rank of the communicator, or
  // MPI_PROC_NULL) gets outgoing block k of `bytes[k]` bytes; receive block j comes from
  // `sources[j]`. As the host does, the m-th block a rank sends to a peer is the m-th block
  // that peer receives from it. Blocks from MPI_PROC_NULL are not drained. `pays_next`: whether
  // a call like this one would pay on this rank (take_window's `pays`).
  int exchange(const std::vector<int>& destinations, const std::vector<int64_t>& bytes,
               const Fill& fill, const std::vector<int>& sources, const Drain& drain,
               bool pays_next);

  SharedExchange(MPI_Comm comm, int rank, int size) : comm_(comm), rank_(rank), size_(size) {}
  ~SharedExchange();
  SharedExchange(const SharedExchange&) = delete;
  SharedExchange& operator=(const SharedExchange&) = delete;

  bool allocate(int64_t half_bytes);  // collective; false when the host refused
  MPI_Comm communicator() const { return comm_; }
  // The communicator's in- and out-degree (mpi::topology_degrees), which never change.
  int in_degree = 0, out_degree = 0;
  bool refused() const { return refused_; }

  // Whether some rank's neighbour lists name one peer twice: -1 until a caller that needs
  // to know decides it (collectively, once: a communicator's topology never changes).
  int repeated_neighbours = -1;
  // The neighbour lists in block order and which of them are MPI_PROC_NULL (1: absent), once a
  // caller that needs them has filled them in (ops/coll_neighbour.cpp).
  bool lists_known = false;
  std::vector<int> neighbour_sources, neighbour_destinations;
  std::vector<uint8_t> absent_sources, absent_destinations;

 private:
  void free_window();  // collective
  int write(const std::vector<int>& destinations, const std::vector<int64_t>& bytes,
            const Fill& fill, int half);

  MPI_Comm comm_;
  int rank_, size_;
  MPI_Win window_ = MPI_WIN_NULL;
  std::vector<char*> segments_;      // each rank's segment, mapped into this process
  std::vector<int64_t> half_bytes_;  // each rank's segment is two halves of this many bytes
  uint64_t calls_ = 0;               // the half a call writes alternates, so that one
                                     // synchronisation per call suffices
  bool refused_ = false;             // the host would not allocate (or grow) the window
  // take_window's agreement: whether one was reached, its verdict for the next call, and the
  // host calls left before the next.
  bool agreed_ = false;
  bool window_next_ = false;
  uint32_t host_calls_left_ = 0;
  uint32_t host_calls_next_run_ = kHostCallsBetweenAgreements;  // after the next host verdict
};

}  // namespace loom::transport
