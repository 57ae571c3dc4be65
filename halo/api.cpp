// The halo library's C API (include/loom/halo.h) for setting a domain up, querying and
// destroying it: arguments checked alike on every rank, then the work handed to placement,
// node_window and plan. Exchanges are in exchange.cpp, errors in errors.cpp. See docs/halo.md.
#include "loom/halo.h"

#include <algorithm>
#include <array>
#include <exception>
#include <new>
#include <string>
#include <utility>
#include <vector>

#include "base/env.hpp"
#include "halo/domain.hpp"
#include "halo/node_window.hpp"
#include "halo/placement.hpp"
#include "halo/plan.hpp"
#include "mpi/locality.hpp"
#include "mpi/type_decode.hpp"

namespace loom::halo {
namespace {

constexpr base::EnvVar kHaloMethods{
    "LOOM_HALO_METHODS", "self,shared,mpi",
    "transports the halo library may use, comma-separated: self (a rank's periodic wrap onto "
    "itself copied directly), shared (same-node neighbours read from node-shared memory; "
    "attached fields through node-shared pack areas), mpi "
    "(one packed message per pair: the fallback, always included). Set it alike on every rank"};

// LOOM_HALO_METHODS as a method mask; 0 when it names something else.
unsigned methods_from_env() {
  const char* text = base::read(kHaloMethods);
  if (!text) return LOOM_HALO_METHODS_ALL;
  unsigned methods = LOOM_HALO_METHOD_MPI;
  const std::string list(text);
  for (size_t at = 0; at <= list.size();) {
    size_t end = list.find(',', at);
    if (end == std::string::npos) end = list.size();
    const std::string name = list.substr(at, end - at);
    if (name == "self")
      methods |= LOOM_HALO_METHOD_SELF;
    else if (name == "shared")
      methods |= LOOM_HALO_METHOD_SHARED;
    else if (name != "mpi")
      return 0;
    at = end + 1;
  }
  return methods;
}

// Every rank passes `values`; true when they are equal on all ranks.
bool same_on_all_ranks(MPI_Comm comm, const std::vector<int64_t>& values, int* rc) {
  // One reduction finds both the minimum and the maximum (as the minimum of the negations).
  std::vector<int64_t> both(values.size() * 2);
  for (size_t i = 0; i < values.size(); ++i) {
    both[i] = values[i];
    both[values.size() + i] = -values[i];
  }
  *rc = MPI_Allreduce(MPI_IN_PLACE, both.data(), static_cast<int>(both.size()), MPI_INT64_T,
                      MPI_MIN, comm);
  if (*rc != MPI_SUCCESS) return false;
  for (size_t i = 0; i < values.size(); ++i)
    if (both[i] != -both[values.size() + i]) return false;
  return true;
}

// loom_halo_create's checks, before anything can make ranks part ways: an intracommunicator,
// the same arguments on every rank, and arguments that describe a domain.
int check_create_arguments(MPI_Comm comm, const int64_t extent[3], const int radius[6],
                           const int periodic[3], int stencil, uint32_t mask) {
  int inter = 0;
  if (MPI_Comm_test_inter(comm, &inter) != MPI_SUCCESS || inter)
    return fail(LOOM_HALO_ERR_ARG, "loom_halo_create needs an intracommunicator");
  std::vector<int64_t> arguments{extent[0], extent[1], extent[2], stencil,
                                 stencil == LOOM_HALO_EXPLICIT ? static_cast<int64_t>(mask) : 0};
  for (int i = 0; i < 6; ++i) arguments.push_back(radius[i]);
  for (int i = 0; i < 3; ++i) arguments.push_back(periodic[i] != 0);
  int rc = MPI_SUCCESS;
  if (!same_on_all_ranks(comm, arguments, &rc))
    return rc != MPI_SUCCESS
               ? mpi_fail(rc, "loom_halo_create")
               : fail(LOOM_HALO_ERR_MISMATCH, "loom_halo_create: ranks passed different arguments");
  if (stencil != LOOM_HALO_BOX && stencil != LOOM_HALO_STAR && stencil != LOOM_HALO_EXPLICIT)
    return fail(LOOM_HALO_ERR_ARG, "unknown stencil " + std::to_string(stencil));
  if (stencil == LOOM_HALO_EXPLICIT && (mask >> kDirections) != 0)
    return fail(LOOM_HALO_ERR_ARG, "explicit mask has bits above direction 26");
  for (int i = 0; i < 3; ++i)
    if (extent[i] < 1)
      return fail(LOOM_HALO_ERR_EXTENT, "global extent " + std::to_string(extent[i]) +
                                            " along dimension " + std::to_string(i) +
                                            " (must be at least 1)");
  for (int i = 0; i < 6; ++i)
    if (radius[i] < 0)
      return fail(LOOM_HALO_ERR_RADIUS, "negative radius " + std::to_string(radius[i]));
  return LOOM_HALO_SUCCESS;
}

// Every subdomain has cells, and is at least as wide as the radius towards any neighbour.
// Every rank computes the same partition, so these errors are the same on every rank.
int check_subdomains(const Domain& domain) {
  const auto grid = domain.partition.grid();
  for (const auto& subdomain : domain.partition.subdomains())
    for (size_t i = 0; i < 3; ++i) {
      const bool has_neighbour = grid[i] > 1 || domain.periodic[i];
      const int widest = std::max(domain.radius.minus[i], domain.radius.plus[i]);
      if (subdomain.size[i] < 1)
        return fail(LOOM_HALO_ERR_EXTENT, "more ranks than cells: a subdomain would be empty");
      if (has_neighbour && widest > subdomain.size[i])
        return fail(LOOM_HALO_ERR_RADIUS, "radius " + std::to_string(widest) +
                                              " larger than a subdomain of " +
                                              std::to_string(subdomain.size[i]) +
                                              " cells along dimension " + std::to_string(i));
    }
  return LOOM_HALO_SUCCESS;
}

// The domain's partition over its ranks' nodes, and this rank's subdomain in it.
int lay_out(Domain* domain, const int64_t extent[3], const int radius[6], const int periodic[3],
            int stencil, uint32_t mask) {
  NodeLayout nodes;
  const int rc = node_layout(domain->comm, &nodes);
  if (rc != MPI_SUCCESS) return mpi_fail(rc, "node layout");
  domain->rank_of_slot = std::move(nodes.rank_of_slot);
  domain->node_leader = nodes.leader;
  for (size_t slot = 0; slot < domain->rank_of_slot.size(); ++slot)
    if (domain->rank_of_slot[slot] == domain->rank) domain->slot = static_cast<int>(slot);
  for (size_t i = 0; i < 3; ++i) {
    domain->radius.minus[i] = radius[2 * i];
    domain->radius.plus[i] = radius[2 * i + 1];
    domain->periodic[i] = periodic[i] != 0;
  }
  domain->mask = stencil_mask(stencil, mask);
  try {
    domain->partition = place::partition({extent[0], extent[1], extent[2]}, domain->radius,
                                         nodes.nodes, nodes.ranks_per_node);
  } catch (const std::exception& e) {
    return fail(LOOM_HALO_ERR_EXTENT, std::string("partition: ") + e.what());
  }
  if (const int code = check_subdomains(*domain); code != LOOM_HALO_SUCCESS) return code;
  if (nodes.real_nodes && nodes.ranks_per_node > 1 && placement_wanted())
    if (const int placed = place_on_node(domain, nodes.ranks_per_node); placed != MPI_SUCCESS)
      return mpi_fail(placed, "placement");
  const auto& mine = domain->partition.subdomain(domain->slot);
  for (size_t i = 0; i < 3; ++i) domain->size[i] = mine.size[i];
  return LOOM_HALO_SUCCESS;
}

void release(Domain* domain) {
  for (Peer& peer : domain->peers)
    for (Message* message : {&peer.send, &peer.recv}) {
      if (message->request != MPI_REQUEST_NULL) PMPI_Request_free(&message->request);
      if (message->type != MPI_DATATYPE_NULL) PMPI_Type_free(&message->type);
    }
  release_window(domain);
  if (domain->node_comm != MPI_COMM_NULL) MPI_Comm_free(&domain->node_comm);
  if (domain->comm != MPI_COMM_NULL) {
    mpi::forget_communicator(domain->comm);
    MPI_Comm_free(&domain->comm);
  }
  delete domain;
}

int add_field(Domain* domain, size_t element, int* field) {
  if (!domain || !field) return fail(LOOM_HALO_ERR_ARG, "null domain or field pointer");
  if (domain->realized) return fail(LOOM_HALO_ERR_STATE, "a field added after loom_halo_realize");
  if (element == 0) return fail(LOOM_HALO_ERR_ARG, "element size 0");
  Field added;
  added.element = element;
  domain->fields.push_back(std::move(added));
  *field = static_cast<int>(domain->fields.size()) - 1;
  return LOOM_HALO_SUCCESS;
}

// Every rank has the same state, methods and fields (element sizes, attached or not): the
// count first, so that the full comparison has one length on every rank.
int agree_on_fields(const Domain& domain) {
  std::vector<int64_t> shape{static_cast<int64_t>(domain.realized),
                             static_cast<int64_t>(domain.fields.size()), domain.methods};
  for (const Field& field : domain.fields)
    shape.push_back(static_cast<int64_t>(field.element) * 2 + (field.attached ? 1 : 0));
  int rc = MPI_SUCCESS;
  const std::vector<int64_t> head(shape.begin(), shape.begin() + 3);
  if (!same_on_all_ranks(domain.comm, head, &rc) ||
      (rc == MPI_SUCCESS && !same_on_all_ranks(domain.comm, shape, &rc)))
    return rc != MPI_SUCCESS ? mpi_fail(rc, "loom_halo_realize")
                             : fail(LOOM_HALO_ERR_MISMATCH,
                                    "loom_halo_realize: ranks have different fields or states");
  return LOOM_HALO_SUCCESS;
}

// The same-node transport's node and window, where the methods allow it. Neighbours cannot read
// the user's memory: with an attached field it stages the faces through node-shared pack areas
// instead (open_staging, at build_plan).
int open_same_node(Domain* domain) {
  if (!(domain->methods & LOOM_HALO_METHOD_SHARED)) return LOOM_HALO_SUCCESS;
  const bool any_attached = std::any_of(domain->fields.begin(), domain->fields.end(),
                                        [](const Field& field) { return field.attached; });
  int rc = open_node(domain);
  domain->staged = domain->shared && any_attached;
  if (rc == LOOM_HALO_SUCCESS && domain->shared && !domain->staged) rc = open_field_window(domain);
  return rc;
}

// Each field the library allocates: its part of this rank's window segment where neighbours
// read fields in place, else memory of its own, zeroed either way.
int place_fields(Domain* domain) {
  for (size_t index = 0; index < domain->fields.size(); ++index) {
    Field& field = domain->fields[index];
    if (field.attached) continue;
    char* memory = nullptr;
    if (domain->shared && !domain->staged) {
      memory = own_field_memory(*domain, static_cast<int>(index));
    } else {
      const size_t bytes = field_bytes(*domain, domain->size, field.element);
      field.allocation = mpi::sim::allocate(bytes);
      memory = field.allocation.get();
      if (!memory) return fail(LOOM_HALO_ERR_NOMEM, "cannot allocate a field");
    }
    const FieldLayout layout = padded_field(memory, domain->size, domain->radius, field.element);
    field.base = layout.base;
    field.stride = layout.stride;
  }
  return LOOM_HALO_SUCCESS;
}

}  // namespace
}  // namespace loom::halo

extern "C" {

using loom::halo::fail;
using loom::halo::mpi_fail;

int loom_halo_create(MPI_Comm comm, const int64_t extent[3], const int radius[6],
                     const int periodic[3], int stencil, uint32_t mask, loom_halo_domain* domain) {
  if (!domain || !extent || !radius || !periodic || comm == MPI_COMM_NULL)
    return fail(LOOM_HALO_ERR_ARG, "null argument to loom_halo_create");
  *domain = nullptr;
  if (const int code =
          loom::halo::check_create_arguments(comm, extent, radius, periodic, stencil, mask);
      code != LOOM_HALO_SUCCESS)
    return code;
  // Collective over `comm` alone: ranks outside it need not call the library.
  int rc = loom::mpi::learn_locality(comm);
  if (rc != MPI_SUCCESS) return mpi_fail(rc, "loom_halo_create (nodes)");
  auto* d = new (std::nothrow) loom_halo_domain_s;
  if (!d) return fail(LOOM_HALO_ERR_NOMEM, "out of memory");
  rc = MPI_Comm_dup(comm, &d->comm);
  if (rc != MPI_SUCCESS) {
    delete d;
    return mpi_fail(rc, "MPI_Comm_dup");
  }
  MPI_Comm_set_errhandler(d->comm, MPI_ERRORS_RETURN);
  MPI_Comm_rank(d->comm, &d->rank);
  if (const int code = loom::halo::lay_out(d, extent, radius, periodic, stencil, mask);
      code != LOOM_HALO_SUCCESS) {
    loom::halo::release(d);
    return code;
  }
  *domain = d;
  return LOOM_HALO_SUCCESS;
}

int loom_halo_add_field(loom_halo_domain domain, size_t element_size, int* field) {
  return loom::halo::add_field(domain, element_size, field);
}

int loom_halo_add_field_type(loom_halo_domain domain, MPI_Datatype named_type, int* field) {
  if (named_type == MPI_DATATYPE_NULL) return fail(LOOM_HALO_ERR_ARG, "MPI_DATATYPE_NULL");
  if (loom::mpi::type_combiner(named_type) != MPI_COMBINER_NAMED)
    return fail(LOOM_HALO_ERR_ARG, "field type is not a named MPI type");
  int size = 0;
  MPI_Type_size(named_type, &size);
  if (size <= 0) return fail(LOOM_HALO_ERR_ARG, "field type has no size");
  return loom::halo::add_field(domain, static_cast<size_t>(size), field);
}

int loom_halo_attach_field(loom_halo_domain d, size_t element_size, void* base,
                           const int64_t strides[3], int* field) {
  if (!d || !base || !strides) return fail(LOOM_HALO_ERR_ARG, "null domain, base or strides");
  // Row-major without overlap, ghosts included: each stride spans the one below it.
  int64_t span = static_cast<int64_t>(element_size);
  for (size_t i = 0; i < 3; ++i) {
    if (strides[i] < span)
      return fail(LOOM_HALO_ERR_ARG, "attached field: stride " + std::to_string(i) + " is " +
                                         std::to_string(strides[i]) + ", less than " +
                                         std::to_string(span) + " bytes");
    span = strides[i] * (d->size[i] + d->radius.minus[i] + d->radius.plus[i]);
  }
  const int rc = loom::halo::add_field(d, element_size, field);
  if (rc != LOOM_HALO_SUCCESS) return rc;
  loom::halo::Field& attached = d->fields.back();
  attached.attached = true;
  attached.base = static_cast<char*>(base);
  for (size_t i = 0; i < 3; ++i) attached.stride[i] = strides[i];
  return LOOM_HALO_SUCCESS;
}

int loom_halo_set_methods(loom_halo_domain d, unsigned methods) {
  if (!d) return fail(LOOM_HALO_ERR_ARG, "null domain");
  if (d->realized) return fail(LOOM_HALO_ERR_STATE, "methods set after loom_halo_realize");
  if ((methods & ~static_cast<unsigned>(LOOM_HALO_METHODS_ALL)) ||
      !(methods & LOOM_HALO_METHOD_MPI))
    return fail(LOOM_HALO_ERR_ARG, "methods must be loom_halo_method bits including MPI");
  d->methods = methods;
  return LOOM_HALO_SUCCESS;
}

int loom_halo_realize(loom_halo_domain d) {
  if (!d) return fail(LOOM_HALO_ERR_ARG, "null domain");
  // A bad LOOM_HALO_METHODS leaves methods 0, compared like the rest so that ranks agree.
  if (!d->methods && !d->realized) d->methods = loom::halo::methods_from_env();
  if (const int code = loom::halo::agree_on_fields(*d); code != LOOM_HALO_SUCCESS) return code;
  if (d->realized) return fail(LOOM_HALO_ERR_STATE, "loom_halo_realize called twice");
  if (!d->methods)
    return fail(LOOM_HALO_ERR_ARG, std::string("LOOM_HALO_METHODS=") +
                                       loom::base::read(loom::halo::kHaloMethods) +
                                       ": not a list of self, shared, mpi");
  if (const int code = loom::halo::open_same_node(d); code != LOOM_HALO_SUCCESS) return code;
  if (const int code = loom::halo::place_fields(d); code != LOOM_HALO_SUCCESS) return code;
  d->realized = true;
  if (const int code = loom::halo::build_plan(d); code != LOOM_HALO_SUCCESS) return code;
  for (const loom::halo::Peer& peer : d->peers) {
    if (peer.recv.request != MPI_REQUEST_NULL) d->recv_requests.push_back(peer.recv.request);
    if (peer.send.request != MPI_REQUEST_NULL) d->send_requests.push_back(peer.send.request);
  }
  return LOOM_HALO_SUCCESS;
}

int loom_halo_origin(loom_halo_domain d, int64_t origin[3]) {
  if (!d || !origin) return fail(LOOM_HALO_ERR_ARG, "null argument");
  const auto& subdomain = d->partition.subdomain(d->slot);
  for (size_t i = 0; i < 3; ++i) origin[i] = subdomain.origin[i];
  return LOOM_HALO_SUCCESS;
}

int loom_halo_extent(loom_halo_domain d, int64_t extent[3]) {
  if (!d || !extent) return fail(LOOM_HALO_ERR_ARG, "null argument");
  for (size_t i = 0; i < 3; ++i) extent[i] = d->size[i];
  return LOOM_HALO_SUCCESS;
}

int loom_halo_field(loom_halo_domain d, int field, void** base, int64_t strides[3]) {
  if (!d || !base || !strides) return fail(LOOM_HALO_ERR_ARG, "null argument");
  if (!d->realized) return fail(LOOM_HALO_ERR_STATE, "fields exist after loom_halo_realize");
  if (field < 0 || field >= static_cast<int>(d->fields.size()))
    return fail(LOOM_HALO_ERR_ARG, "no field " + std::to_string(field));
  const loom::halo::Field& found = d->fields[static_cast<size_t>(field)];
  *base = found.base;
  for (size_t i = 0; i < 3; ++i) strides[i] = found.stride[i];
  return LOOM_HALO_SUCCESS;
}

int loom_halo_peers(loom_halo_domain d, int* mpi_peers, int* shared_peers, int* self_copies) {
  if (!d || !mpi_peers || !shared_peers || !self_copies)
    return fail(LOOM_HALO_ERR_ARG, "null argument");
  if (!d->realized) return fail(LOOM_HALO_ERR_STATE, "the plan exists after loom_halo_realize");
  *mpi_peers = static_cast<int>(d->peers.size());
  *shared_peers = static_cast<int>(d->sources.size());
  *self_copies = d->self_passes.empty() ? 0 : 1;
  return LOOM_HALO_SUCCESS;
}

int loom_halo_destroy(loom_halo_domain* domain) {
  if (!domain || !*domain) return fail(LOOM_HALO_ERR_ARG, "null domain");
  if ((*domain)->in_flight) loom_halo_finish(*domain);
  loom::halo::release(*domain);
  *domain = nullptr;
  return LOOM_HALO_SUCCESS;
}

}  // extern "C"
