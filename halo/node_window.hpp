// The same-node transport's memory (docs/halo.md, Transports): which ranks of this rank's node
// share memory with it, and one MPI_Win_allocate_shared window over them, one segment per rank.
// A segment holds the rank's step flags (halo/step_flags.hpp), then either its fields (each
// 64-byte aligned, laid out from the rank's subdomain size alone, so that every rank finds its
// neighbours' fields without asking) or, in a domain with an attached field, one pack area per
// same-node reader (staging).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "halo/domain.hpp"

namespace loom::halo {

// Finds the ranks of this rank's node (as mpi/locality.hpp sees nodes) that really share
// memory with it: sets node_comm, node_rank, node_rank_of and `shared`. A node whose ranks
// cannot share memory (virtual nodes spanning machines) keeps the MPI transport; every rank of
// a node decides alike. Collective over the domain's communicator.
int open_node(Domain* domain);

// A field of `element`-byte cells laid out densely, ghosts included, from `memory`.
struct FieldLayout {
  char* base;  // local cell (0, 0, 0)
  std::array<int64_t, 3> stride;
};
FieldLayout padded_field(char* memory, const std::array<int64_t, 3>& size,
                         const place::Radius& radius, size_t element);

// Bytes of a padded field over a subdomain of `size` cells, rounded up to 64.
size_t field_bytes(const Domain& domain, const std::array<int64_t, 3>& size, size_t element);

// Opens the window with every rank's fields in its segment (the domain has no attached field).
int open_field_window(Domain* domain);

// Where this rank's field `field` lies in its own segment (open_field_window).
char* own_field_memory(const Domain& domain, int field);

// Field `field` of node rank `node_rank`, whose subdomain has `size` cells, in its segment.
FieldLayout neighbour_field(const Domain& domain, int node_rank, const std::array<int64_t, 3>& size,
                            int field);

// Frees the window (collective over the node, as MPI_Win_free is).
void release_window(Domain* domain);

// Opens the window of a staged domain: this rank's segment is its flags, then one pack area per
// staged reader in node-rank order (sized from the readers' segments); every rank learns where
// its area lies in each source's segment. Sets the readers' and the sources' `area`.
int open_staging(Domain* domain);

}  // namespace loom::halo
