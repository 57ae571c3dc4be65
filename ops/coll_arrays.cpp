#include "ops/coll_arrays.hpp"

#include <memory>
#include <utility>

#include "base/bytes.hpp"
#include "mpi/requests.hpp"
#include "mpi/topology.hpp"
#include "runtime/runtime.hpp"

namespace loom::ops {
namespace {

// The size of an intra-communicator, and this rank in it.
bool intra_size(MPI_Comm comm, int* size, int* rank) {
  int inter = 0;
  if (comm == MPI_COMM_NULL || PMPI_Comm_test_inter(comm, &inter) != MPI_SUCCESS || inter)
    return false;
  return PMPI_Comm_size(comm, size) == MPI_SUCCESS && PMPI_Comm_rank(comm, rank) == MPI_SUCCESS;
}

ArrayLengths rooted_lengths(MPI_Comm comm, int root, bool gather) {
  int size = 0, rank = 0;
  if (!intra_size(comm, &size, &rank) || root < 0 || root >= size) return {};
  const int at_root = rank == root ? size : 0;
  return gather ? ArrayLengths{true, 0, at_root} : ArrayLengths{true, at_root, 0};
}

// An inter-communicator's arrays (raise_null_array only: its large-count forms go to the host
// as written): the remote group's size wherever the call reads them on this rank; the rooted
// calls' root passes MPI_ROOT.
ArrayLengths inter_lengths(ArrayCall call, MPI_Comm comm, int root) {
  int inter = 0, remote = 0;
  if (comm == MPI_COMM_NULL || PMPI_Comm_test_inter(comm, &inter) != MPI_SUCCESS || !inter ||
      PMPI_Comm_remote_size(comm, &remote) != MPI_SUCCESS)
    return {};
  switch (call) {
    case ArrayCall::AllToAllV:
    case ArrayCall::AllToAllW:
      return {true, remote, remote};
    case ArrayCall::AllGatherV:
      return {true, 0, remote};
    case ArrayCall::GatherV:
      return {true, 0, root == MPI_ROOT ? remote : 0};
    case ArrayCall::ScatterV:
      return {true, root == MPI_ROOT ? remote : 0, 0};
    default:
      return {};  // the neighbourhood collectives need a topology, which these lack
  }
}

}  // namespace

ArrayLengths all_to_all_lengths(MPI_Comm comm, const void* sendbuf) {
  int size = 0, rank = 0;
  if (!intra_size(comm, &size, &rank)) return {};
  return {true, sendbuf == MPI_IN_PLACE ? 0 : size, size};
}

ArrayLengths neighbourhood_lengths(MPI_Comm comm, bool send_arrays) {
  ArrayLengths lengths;
  lengths.known = mpi::topology_degrees(comm, &lengths.recv, &lengths.send);
  if (!send_arrays) lengths.send = 0;
  return lengths;
}

ArrayLengths all_gather_lengths(MPI_Comm comm) {
  int size = 0, rank = 0;
  if (!intra_size(comm, &size, &rank)) return {};
  return {true, 0, size};
}

ArrayLengths gather_lengths(MPI_Comm comm, int root) {
  return rooted_lengths(comm, root, true);
}

ArrayLengths scatter_lengths(MPI_Comm comm, int root) {
  return rooted_lengths(comm, root, false);
}

int raise_null_array(ArrayCall call, MPI_Comm comm, const void* sendbuf, int root,
                     std::initializer_list<const void*> arrays) {
  struct Entry {
    bool send;  // a send-side array, else a receive-side one
    int error_class;
  };
  static constexpr Entry kV[] = {
      {true, MPI_ERR_ARG}, {true, MPI_ERR_ARG}, {false, MPI_ERR_ARG}, {false, MPI_ERR_ARG}};
  static constexpr Entry kW[] = {{true, MPI_ERR_ARG},  {true, MPI_ERR_ARG},  {true, MPI_ERR_ARG},
                                 {false, MPI_ERR_ARG}, {false, MPI_ERR_ARG}, {false, MPI_ERR_ARG}};
  // Open MPI reads an all-gather's null recvcounts; its gathers report MPI_ERR_COUNT.
  static constexpr Entry kAllGatherV[] = {{false, MPI_ERR_COUNT}, {false, MPI_ERR_BUFFER}};
  static constexpr Entry kGatherV[] = {{false, MPI_ERR_COUNT}, {false, MPI_ERR_ARG}};
  static constexpr Entry kScatterV[] = {{true, MPI_ERR_COUNT}, {true, MPI_ERR_ARG}};
  if (runtime::config().disabled) return MPI_SUCCESS;  // a pure pass-through
  const Entry* entries = kV;
  ArrayLengths lengths;
  switch (call) {
    case ArrayCall::AllToAllV:
    case ArrayCall::AllToAllW:
      entries = call == ArrayCall::AllToAllV ? kV : kW;
      lengths = all_to_all_lengths(comm, sendbuf);
      break;
    case ArrayCall::NeighbourAllToAllV:
    case ArrayCall::NeighbourAllToAllW:
      entries = call == ArrayCall::NeighbourAllToAllV ? kV : kW;
      lengths = neighbourhood_lengths(comm);
      break;
    case ArrayCall::AllGatherV:
      entries = kAllGatherV;
      lengths = all_gather_lengths(comm);
      break;
    case ArrayCall::NeighbourAllGatherV:
      entries = kAllGatherV;
      lengths = neighbourhood_lengths(comm, false);
      break;
    case ArrayCall::GatherV:
      entries = kGatherV;
      lengths = gather_lengths(comm, root);
      break;
    case ArrayCall::ScatterV:
      entries = kScatterV;
      lengths = scatter_lengths(comm, root);
      break;
  }
  if (!lengths.known) lengths = inter_lengths(call, comm, root);
  if (!lengths.known) return MPI_SUCCESS;
  const Entry* entry = entries;
  for (const void* array : arrays) {
    if (!array && (entry->send ? lengths.send : lengths.recv) > 0) {
      PMPI_Comm_call_errhandler(comm, entry->error_class);
      return entry->error_class;
    }
    ++entry;
  }
  return MPI_SUCCESS;
}

NarrowedArrays::NarrowedArrays(ArrayLengths lengths, const MPI_Count* send_counts,
                               const MPI_Aint* send_displs, const MPI_Count* recv_counts,
                               const MPI_Aint* recv_displs, bool keep_displs)
    : ok_(lengths.known) {
  if (!ok_) return;
  narrow(0, send_counts, lengths.send);
  narrow(2, recv_counts, lengths.recv);
  if (keep_displs) return;
  narrow(1, send_displs, lengths.send);
  narrow(3, recv_displs, lengths.recv);
}

template <typename T>
void NarrowedArrays::narrow(size_t slot, const T* values, int n) {
  if (!values || n <= 0) {
    // An array the call reads must be there (the host reports a null one); a zero-length one
    // stays as given, so that an empty neighbourhood passes what the user passed.
    if (!values && n > 0) ok_ = false;
    static const int kNoEntries = 0;
    if (values) pointers_[slot] = &kNoEntries;
    return;
  }
  std::vector<int>& copy = copies_[slot];
  copy.resize(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) {
    if (!base::fits_int(values[i])) {
      ok_ = false;
      return;
    }
    copy[static_cast<size_t>(i)] = static_cast<int>(values[i]);
  }
  pointers_[slot] = copy.data();
}

std::shared_ptr<const void> NarrowedArrays::take_copies() {
  bool any = false;
  for (const std::vector<int>& copy : copies_) any = any || !copy.empty();
  if (!any) return nullptr;
  // Moving the vectors keeps their storage, where the pointers handed to the call point.
  return std::make_shared<std::array<std::vector<int>, 4>>(std::move(copies_));
}

void NarrowedArrays::keep_until_complete(MPI_Request request) {
  if (auto copies = take_copies()) mpi::keep_until_complete(request, std::move(copies));
}

void NarrowedArrays::keep_until_freed(MPI_Request request) {
  if (auto copies = take_copies()) mpi::keep_until_freed(request, std::move(copies));
}

}  // namespace loom::ops
