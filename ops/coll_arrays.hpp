// The array arguments of the v and w collectives: how many entries a call reads on this rank,
// the error for a null one it reads, and MPI-4's large-count forms (MPI_Alltoallv_c,
// MPI_Gatherv_c, ...): when every entry the call reads fits an int, interpose/coll.cpp makes the
// classic call on int copies of the arrays; otherwise the host runs the call as written.
#pragma once

#include <mpi.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <vector>

namespace loom::ops {

// How many entries a collective reads from its send and its receive arrays on this rank (0 for
// arrays it ignores there). `known` is false where Loom leaves the call to the host: a null or
// inter-communicator, a neighbourhood call without a topology, a root out of range.
struct ArrayLengths {
  bool known = false;
  int send = 0;
  int recv = 0;
};

// All-to-all (v, w): the communicator's size on both sides; no send arrays when in place.
ArrayLengths all_to_all_lengths(MPI_Comm comm, const void* sendbuf);
// Neighbourhood: out-degree on the send side (v, w; none for allgatherv), in-degree on the
// receive side.
ArrayLengths neighbourhood_lengths(MPI_Comm comm, bool send_arrays = true);
// Allgatherv: the communicator's size on the receive side.
ArrayLengths all_gather_lengths(MPI_Comm comm);
// Gatherv (receive arrays at the root) and Scatterv (send arrays at the root).
ArrayLengths gather_lengths(MPI_Comm comm, int root);
ArrayLengths scatter_lengths(MPI_Comm comm, int root);

// The collectives with array arguments, each with its arrays in the order of its signature.
enum class ArrayCall : uint8_t {
  AllToAllV,            // sendcounts, sdispls, recvcounts, rdispls
  AllToAllW,            // sendcounts, sdispls, sendtypes, recvcounts, rdispls, recvtypes
  NeighbourAllToAllV,   // as AllToAllV
  NeighbourAllToAllW,   // as AllToAllW
  AllGatherV,           // recvcounts, displs
  NeighbourAllGatherV,  // recvcounts, displs
  GatherV,              // recvcounts, displs (the root's)
  ScatterV,             // sendcounts, displs (the root's)
};

// Where an array that `call` reads on this rank is null: the error class Open MPI reports for
// it, raised through `comm`'s error handler; else MPI_SUCCESS. MPICH 4.0 reads through every
// such null array, and Open MPI 4.1 through MPI_Allgatherv's recvcounts (a segmentation fault
// either way); Loom reports them all, the same on both hosts, wherever it knows the lengths
// (ArrayLengths::known, and on inter-communicators the remote group's size; elsewhere, and under
// LOOM_DISABLE=1, the host gets the call as written). `root` is ignored by the calls without one.
int raise_null_array(ArrayCall call, MPI_Comm comm, const void* sendbuf, int root,
                     std::initializer_list<const void*> arrays);
// The same, without a look at the communicator while no array is null.
template <typename... Entry>
[[gnu::always_inline]] inline int null_array_error(ArrayCall call, MPI_Comm comm,
                                                   const void* sendbuf, int root,
                                                   const Entry*... arrays) {
  if ((arrays && ...)) return MPI_SUCCESS;
  return raise_null_array(call, comm, sendbuf, root, {static_cast<const void*>(arrays)...});
}

// Int copies of a large-count call's count and displacement arrays. A null source array stays
// null, and so does any array the call ignores on this rank. ok() is false when an entry does
// not fit an int, an array the call reads is null, or the lengths are not known.
class NarrowedArrays {
 public:
  // `keep_displs`: the classic call takes MPI_Aint displacements too (MPI_Neighbor_alltoallw),
  // so only the counts are copied and the displacement arguments are ignored.
  NarrowedArrays(ArrayLengths lengths, const MPI_Count* send_counts, const MPI_Aint* send_displs,
                 const MPI_Count* recv_counts, const MPI_Aint* recv_displs,
                 bool keep_displs = false);

  bool ok() const { return ok_; }
  const int* send_counts() const { return pointers_[0]; }
  const int* send_displs() const { return pointers_[1]; }
  const int* recv_counts() const { return pointers_[2]; }
  const int* recv_displs() const { return pointers_[3]; }

  // A non-blocking call made on these copies may read them until it completes.
  void keep_until_complete(MPI_Request request);
  // A persistent call made on them (MPI_Alltoallv_init_c, ...) may read them until it is freed.
  void keep_until_freed(MPI_Request request);

 private:
  std::shared_ptr<const void> take_copies();  // null when nothing was copied
  template <typename T>
  void narrow(size_t slot, const T* values, int n);

  bool ok_ = true;
  std::array<std::vector<int>, 4> copies_;
  std::array<const int*, 4> pointers_{};
};

}  // namespace loom::ops
