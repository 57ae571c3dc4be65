#include "transport/shared_exchange.hpp"

#include <algorithm>
#include <atomic>
#include <memory>
#include <mutex>

#include "mpi/locality.hpp"
#include "mpi/topology.hpp"
#include "runtime/runtime.hpp"

namespace loom::transport {
using namespace loom::runtime;  // NOLINT: the layers below
using namespace loom::mpi;      // NOLINT: the layers below
namespace {

// A communicator's exchange lives in an attribute, so that it goes with the communicator
// however it is freed (the delete callback runs inside the host's collective free).
int keyval = MPI_KEYVAL_INVALID;
std::once_flag keyval_once;
// Stands for "this communicator cannot have one", decided once like the exchange itself.
char unusable_marker;

// The communicator this thread last looked up, and its attribute's value: a call on the same
// communicator again skips the host's attribute lookup (plain calls, which the window leaves to
// the host, pay this lookup on every call). Every delete callback bumps `generation`, so that a
// handle the host reuses after a free is never taken for the freed communicator.
std::atomic<uint64_t> generation{0};
struct LastLookup {
  MPI_Comm comm = MPI_COMM_NULL;
  void* value = nullptr;
  uint64_t generation = ~uint64_t{0};
};
thread_local LastLookup last_lookup;

// Live exchanges in creation order, for MPI_Finalize.
std::mutex registry_mutex;
std::vector<SharedExchange*>& registry() {
  static auto* live = new std::vector<SharedExchange*>();
  return *live;
}

int delete_exchange(MPI_Comm, int, void* value, void*) {
  generation.fetch_add(1, std::memory_order_relaxed);
  if (value == &unusable_marker) return MPI_SUCCESS;
  auto* exchange = static_cast<SharedExchange*>(value);
  {
    std::lock_guard lock(registry_mutex);
    auto& live = registry();
    live.erase(std::remove(live.begin(), live.end(), exchange), live.end());
  }
  delete exchange;  // frees the window: collective, as the free that called us
  return MPI_SUCCESS;
}

// The directory at the start of each half: the block count, then (destination, offset
// from the data start, bytes) per outgoing block; the data start on a cache line.
int64_t data_start(size_t blocks) {
  const int64_t directory = static_cast<int64_t>(sizeof(int64_t) * (1 + 3 * blocks));
  return (directory + 63) / 64 * 64;
}

constexpr int64_t kMinHalfBytes = 4096;

}  // namespace

SharedExchange* shared_exchange(MPI_Comm comm, bool (*eligible)(MPI_Comm)) {
  if (config().disabled || config().shared_collectives == SharedCollectives::Never ||
      comm == MPI_COMM_NULL)
    return nullptr;
  auto known = [](void* value) {
    auto* exchange = static_cast<SharedExchange*>(value);
    return value == &unusable_marker || exchange->refused() ? nullptr : exchange;
  };
  const uint64_t now = generation.load(std::memory_order_relaxed);
  if (last_lookup.comm == comm && last_lookup.generation == now) return known(last_lookup.value);
  std::call_once(keyval_once, [] {
    PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, delete_exchange, &keyval, nullptr);
  });
  void* value = nullptr;
  int found = 0;
  if (PMPI_Comm_get_attr(comm, keyval, &value, &found) != MPI_SUCCESS) return nullptr;
  if (found) {
    last_lookup = {comm, value, now};
    return known(value);
  }

  // First use: every rank of `comm` reaches the same verdict. The window itself is allocated
  // when a call first takes it (take_window).
  int inter = 0, rank = 0, size = 0;
  PMPI_Comm_test_inter(comm, &inter);
  bool usable = !inter && eligible(comm);
  if (usable) {
    PMPI_Comm_rank(comm, &rank);
    PMPI_Comm_size(comm, &size);
    for (int peer = 0; usable && peer < size; ++peer)
      usable = locality(comm, peer) == model::Locality::SameNode;
  }
  int in = 0, out = 0;
  if (!usable || !topology_degrees(comm, &in, &out)) {
    PMPI_Comm_set_attr(comm, keyval, &unusable_marker);
    last_lookup = {comm, &unusable_marker, now};
    return nullptr;
  }
  auto exchange = std::make_unique<SharedExchange>(comm, rank, size);
  exchange->in_degree = in;
  exchange->out_degree = out;
  {
    std::lock_guard lock(registry_mutex);
    registry().push_back(exchange.get());
  }
  PMPI_Comm_set_attr(comm, keyval, exchange.get());
  last_lookup = {comm, exchange.get(), now};
  return exchange.release();
}

void release_shared_exchanges() {
  std::vector<SharedExchange*> live;
  {
    std::lock_guard lock(registry_mutex);
    live = registry();
  }
  for (SharedExchange* exchange : live) PMPI_Comm_delete_attr(exchange->communicator(), keyval);
}

SharedExchange::~SharedExchange() {
  free_window();
}

void SharedExchange::free_window() {
  if (window_ == MPI_WIN_NULL) return;
  PMPI_Win_unlock_all(window_);
  PMPI_Win_free(&window_);
  segments_.clear();
  half_bytes_.clear();
}

bool SharedExchange::allocate(int64_t half_bytes) {
  free_window();
  half_bytes = std::max(kMinHalfBytes, (half_bytes + 4095) / 4096 * 4096);
  MPI_Info info;
  PMPI_Info_create(&info);
  // Each segment on its own pages, near the rank that writes it.
  PMPI_Info_set(info, "alloc_shared_noncontig", "true");
  // A refusal must not abort the job: the call goes to the host instead.
  MPI_Errhandler user_handler;
  PMPI_Comm_get_errhandler(comm_, &user_handler);
  PMPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN);
  char* base = nullptr;
  MPI_Win window = MPI_WIN_NULL;
  const int rc = PMPI_Win_allocate_shared(2 * half_bytes, 1, info, comm_, &base, &window);
  PMPI_Comm_set_errhandler(comm_, user_handler);
  PMPI_Errhandler_free(&user_handler);
  PMPI_Info_free(&info);
  int everywhere = rc == MPI_SUCCESS ? 1 : 0;
  PMPI_Allreduce(MPI_IN_PLACE, &everywhere, 1, MPI_INT, MPI_MIN, comm_);
  // Where only some ranks got the window, freeing it is a collective the others would
  // not join: it is left allocated.
  if (!everywhere) {
    refused_ = true;
    return false;
  }
  window_ = window;
  PMPI_Win_lock_all(MPI_MODE_NOCHECK, window_);
  segments_.assign(static_cast<size_t>(size_), nullptr);
  half_bytes_.assign(static_cast<size_t>(size_), 0);
  for (int r = 0; r < size_; ++r) {
    MPI_Aint bytes = 0;
    int unit = 1;
    PMPI_Win_shared_query(window_, r, &bytes, &unit, &segments_[static_cast<size_t>(r)]);
    half_bytes_[static_cast<size_t>(r)] = static_cast<int64_t>(bytes) / 2;
  }
  calls_ = 0;
  return true;
}

bool SharedExchange::take_window(bool pays) {
  if (refused_) return false;
  bool window = true;
  if (config().shared_collectives != SharedCollectives::Always) {
    if (host_call_agreed()) {
      window = false;
    } else if (agreed_ && window_next_) {
      window = true;
    } else {
      int any_pays = pays ? 1 : 0;
      PMPI_Allreduce(MPI_IN_PLACE, &any_pays, 1, MPI_INT, MPI_MAX, comm_);
      agreed_ = true;
      window = window_next_ = any_pays != 0;
      if (window) {
        host_calls_next_run_ = kHostCallsBetweenAgreements;
      } else {
        host_calls_left_ = host_calls_next_run_;
        host_calls_next_run_ = std::min(2 * host_calls_next_run_, kMostHostCallsBetweenAgreements);
      }
    }
  }
  if (window && window_ == MPI_WIN_NULL) return allocate(kMinHalfBytes);
  return window;
}

int SharedExchange::write(const std::vector<int>& destinations, const std::vector<int64_t>& bytes,
                          const Fill& fill, int half) {
  char* segment =
      segments_[static_cast<size_t>(rank_)] + half * half_bytes_[static_cast<size_t>(rank_)];
  auto* directory = reinterpret_cast<int64_t*>(segment);
  directory[0] = static_cast<int64_t>(destinations.size());
  int64_t offset = 0;
  for (size_t k = 0; k < destinations.size(); ++k) {
    directory[1 + 3 * k] = destinations[k];
    directory[2 + 3 * k] = offset;
    directory[3 + 3 * k] = bytes[k];
    offset += bytes[k];
  }
  return fill(segment + data_start(destinations.size()));
}

int SharedExchange::exchange(const std::vector<int>& destinations,
                             const std::vector<int64_t>& bytes, const Fill& fill,
                             const std::vector<int>& sources, const Drain& drain, bool pays_next) {
  int64_t total = 0;
  for (int64_t b : bytes) total += b;
  const int64_t need = data_start(destinations.size()) + total;
  int half = static_cast<int>(calls_++ & 1);
  int rc = MPI_SUCCESS;
  // A rank whose half is too small says how much it needs; then every rank reallocates.
  // The same reduction tells every rank that all outgoing blocks are written, and whether the
  // window pays for the next call on some rank (take_window).
  int64_t grow_and_pays[2] = {0, pays_next ? 1 : 0};
  int64_t& grow = grow_and_pays[0];
  if (need <= half_bytes_[static_cast<size_t>(rank_)])
    rc = write(destinations, bytes, fill, half);
  else
    grow = need;
  PMPI_Win_sync(window_);
  PMPI_Allreduce(MPI_IN_PLACE, grow_and_pays, 2, MPI_INT64_T, MPI_MAX, comm_);
  window_next_ = grow_and_pays[1] != 0;
  host_calls_left_ = kHostCallsBetweenAgreements;
  host_calls_next_run_ = 2 * kHostCallsBetweenAgreements;
  if (grow > 0) {
    const int64_t own = half_bytes_[static_cast<size_t>(rank_)];
    if (!allocate(std::max(own, need + need / 4))) return kNotExchanged;
    half = 0;
    calls_ = 1;
    rc = write(destinations, bytes, fill, half);
    PMPI_Win_sync(window_);
    PMPI_Barrier(comm_);
  }
  PMPI_Win_sync(window_);

  for (size_t j = 0; j < sources.size(); ++j) {
    const int source = sources[j];
    if (source == MPI_PROC_NULL) continue;
    // This is the m-th block from `source`; it is the m-th that `source` addressed to us.
    int64_t occurrence = 0;
    for (size_t i = 0; i < j; ++i) occurrence += sources[i] == source;
    const char* segment =
        segments_[static_cast<size_t>(source)] + half * half_bytes_[static_cast<size_t>(source)];
    const auto* directory = reinterpret_cast<const int64_t*>(segment);
    const int64_t blocks = directory[0];
    int64_t k = 0;
    for (; k < blocks; ++k)
      if (directory[1 + 3 * k] == rank_ && occurrence-- == 0) break;
    if (k == blocks) {
      // The topology's lists disagree between the two ranks (an erroneous program).
      if (rc == MPI_SUCCESS) rc = MPI_ERR_TOPOLOGY;
      continue;
    }
    const int drained =
        drain(static_cast<int>(j),
              segment + data_start(static_cast<size_t>(blocks)) + directory[2 + 3 * k],
              directory[3 + 3 * k]);
    if (rc == MPI_SUCCESS) rc = drained;
  }
  return rc;
}

}  // namespace loom::transport
