#include "halo/pattern.hpp"

#include <array>

#include "halo/domain.hpp"
#include "loom/halo.h"

namespace loom::halo {
namespace {

// The neighbour owning subdomain `slot`, and how this rank reaches it.
Region neighbour_region(const Domain& domain, int slot) {
  Region region;
  region.slot = slot;
  region.rank = domain.rank_of_slot[static_cast<size_t>(slot)];
  const int node_rank = domain.shared ? domain.node_rank_of[static_cast<size_t>(region.rank)] : -1;
  if (slot == domain.slot && (domain.methods & LOOM_HALO_METHOD_SELF)) {
    region.route = Route::Self;
  } else if (node_rank >= 0) {
    region.route = Route::Shared;
    region.node_rank = node_rank;
  }
  return region;
}

bool fills(const Domain& domain, int ghost_direction) {
  return ghost_direction != kCentre && (domain.mask & (1u << ghost_direction));
}

}  // namespace

uint32_t stencil_mask(int stencil, uint32_t explicit_mask) {
  if (stencil == LOOM_HALO_BOX) return ((1u << kDirections) - 1) & ~(1u << kCentre);
  if (stencil == LOOM_HALO_STAR) {
    uint32_t faces = 0;
    for (size_t dimension = 0; dimension < 3; ++dimension)
      for (int side : {-1, 1}) {
        std::array<int, 3> face{0, 0, 0};
        face[dimension] = side;
        faces |= 1u << LOOM_HALO_DIRECTION(face[0], face[1], face[2]);
      }
    return faces;
  }
  return explicit_mask & ~(1u << kCentre);
}

std::vector<Region> send_regions(const Domain& domain) {
  std::vector<Region> regions;
  for (int direction = 0; direction < kDirections; ++direction) {
    // The neighbour there fills its ghost region in the opposite direction.
    if (!fills(domain, opposite(direction))) continue;
    const int slot = domain.partition.neighbour(domain.slot, offset(direction), domain.periodic);
    if (slot == place::kNoNeighbour) continue;
    Region region = neighbour_region(domain, slot);
    if (region.route == Route::Self) continue;
    region.direction = direction;
    region.box = send_box(direction, domain.size, domain.radius);
    if (!region.box.empty()) regions.push_back(region);
  }
  return regions;
}

std::vector<Region> receive_regions(const Domain& domain) {
  std::vector<Region> regions;
  for (int direction = 0; direction < kDirections; ++direction) {
    const int ghost = opposite(direction);  // our ghost region, filled by the sender's `direction`
    if (!fills(domain, ghost)) continue;
    const int slot = domain.partition.neighbour(domain.slot, offset(ghost), domain.periodic);
    if (slot == place::kNoNeighbour) continue;
    Region region = neighbour_region(domain, slot);
    region.direction = direction;
    region.box = recv_box(ghost, domain.size, domain.radius);
    if (!region.box.empty()) regions.push_back(region);
  }
  return regions;
}

void add_segments(std::vector<Segment>* segments, const Box& box, int fields) {
  for (int field = 0; field < fields; ++field) segments->push_back({field, box});
}

size_t packed_bytes(const std::vector<Segment>& segments, const std::vector<Field>& fields) {
  size_t bytes = 0;
  for (const Segment& segment : segments)
    bytes += static_cast<size_t>(segment.box.cells()) *
             fields[static_cast<size_t>(segment.field)].element;
  return bytes;
}

}  // namespace loom::halo
