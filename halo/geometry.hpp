// Directions and regions of a halo exchange, in a subdomain's local cell coordinates (the
// first interior cell is (0, 0, 0); ghosts have negative coordinates or ones past the size).
#pragma once

#include <array>
#include <cstdint>

#include "place/partition.hpp"

namespace loom::halo {

constexpr int kDirections = 27;
constexpr int kCentre = 13;

// Direction i is the offset ((i % 3) - 1, (i / 3 % 3) - 1, (i / 9) - 1).
inline place::Offset3 offset(int direction) {
  return {direction % 3 - 1, direction / 3 % 3 - 1, direction / 9 - 1};
}
inline int opposite(int direction) {
  return kDirections - 1 - direction;
}

struct Box {
  std::array<int64_t, 3> lo{};
  std::array<int64_t, 3> n{};
  bool empty() const { return n[0] <= 0 || n[1] <= 0 || n[2] <= 0; }
  int64_t cells() const { return empty() ? 0 : n[0] * n[1] * n[2]; }
};

// The ghost region in `direction`: the neighbour there fills it.
inline Box recv_box(int direction, const std::array<int64_t, 3>& size, const place::Radius& r) {
  const place::Offset3 o = offset(direction);
  Box b;
  for (size_t d = 0; d < 3; ++d) {
    if (o[d] == 0) {
      b.lo[d] = 0;
      b.n[d] = size[d];
    } else if (o[d] > 0) {
      b.lo[d] = size[d];
      b.n[d] = r.plus[d];
    } else {
      b.lo[d] = -r.minus[d];
      b.n[d] = r.minus[d];
    }
  }
  return b;
}

// The interior region sent to the neighbour in `direction`: what fills that neighbour's ghost
// region in the opposite direction (its width is the radius on the neighbour's facing side).
inline Box send_box(int direction, const std::array<int64_t, 3>& size, const place::Radius& r) {
  const place::Offset3 o = offset(direction);
  Box b;
  for (size_t d = 0; d < 3; ++d) {
    if (o[d] == 0) {
      b.lo[d] = 0;
      b.n[d] = size[d];
    } else if (o[d] > 0) {
      b.lo[d] = size[d] - r.minus[d];
      b.n[d] = r.minus[d];
    } else {
      b.lo[d] = 0;
      b.n[d] = r.plus[d];
    }
  }
  return b;
}

}  // namespace loom::halo
