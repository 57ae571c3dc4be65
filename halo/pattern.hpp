// The pattern of a halo exchange on one rank: which ghost regions a stencil fills, which
// interior regions this rank sends, which neighbour owns each and how it is reached, and the
// segments (one per field) each region becomes. See docs/halo.md.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "halo/geometry.hpp"

struct loom_halo_domain_s;

namespace loom::halo {

struct Field;

// The ghost regions a stencil (loom_halo_stencil) fills, as a mask of directions; bit kCentre
// is never set. `explicit_mask` is used for LOOM_HALO_EXPLICIT only.
uint32_t stencil_mask(int stencil, uint32_t explicit_mask);

// How this rank reaches the neighbour that owns (or fills) a region.
enum class Route : uint8_t {
  Self,     // this rank itself (a periodic wrap) and the self method allowed: a copy in place
  Shared,   // a rank of this node in the node-shared window
  Message,  // any other: the pair's host-MPI message
};

// One region of the exchange on this rank: an interior box it sends, or a ghost box it fills.
struct Region {
  int direction = 0;  // the sender's direction, towards the receiver: both ends order by it
  Box box;            // in this rank's local coordinates
  int slot = 0;       // the neighbour's subdomain
  int rank = 0;       // the neighbour's rank in the domain's communicator
  Route route = Route::Message;
  int node_rank = -1;  // Route::Shared: the neighbour's rank in the node communicator
};

// The interior regions this rank sends, by the sender's (this rank's) direction. Regions whose
// neighbour is this rank with the self method are left out: receive_regions copies them.
std::vector<Region> send_regions(const loom_halo_domain_s& domain);

// The ghost regions this rank fills, by the sender's direction (the opposite of the ghost
// region's own), so that both ends of a pair agree on the merged message's layout.
std::vector<Region> receive_regions(const loom_halo_domain_s& domain);

// One field's cells in one box.
struct Segment {
  int field;
  Box box;
};

// Appends `box`'s segment of every field, in field order.
void add_segments(std::vector<Segment>* segments, const Box& box, int fields);

// The bytes `segments` hold, packed.
size_t packed_bytes(const std::vector<Segment>& segments, const std::vector<Field>& fields);

}  // namespace loom::halo
