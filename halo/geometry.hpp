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

// The region `direction` names, along each dimension: the whole size where the offset is 0,
// else a slab of width w_plus (offset +1) starting at lo_plus, or w_minus (offset -1) at lo_minus.
inline Box side_box(int direction, const std::array<int64_t, 3>& size,
                    const std::array<int64_t, 3>& lo_minus, const std::array<int64_t, 3>& w_minus,
                    const std::array<int64_t, 3>& lo_plus, const std::array<int64_t, 3>& w_plus) {
  const place::Offset3 o = offset(direction);
  Box b;
  for (size_t d = 0; d < 3; ++d) {
    b.lo[d] = o[d] == 0 ? 0 : o[d] > 0 ? lo_plus[d] : lo_minus[d];
    b.n[d] = o[d] == 0 ? size[d] : o[d] > 0 ? w_plus[d] : w_minus[d];
  }
  return b;
}

// The ghost region in `direction`: the neighbour there fills it.
inline Box recv_box(int direction, const std::array<int64_t, 3>& size, const place::Radius& r) {
  std::array<int64_t, 3> minus{}, plus{}, lo_minus{};
  for (size_t d = 0; d < 3; ++d) {
    minus[d] = r.minus[d];
    plus[d] = r.plus[d];
    lo_minus[d] = -minus[d];
  }
  return side_box(direction, size, lo_minus, minus, size, plus);
}

// The interior region sent to the neighbour in `direction`: what fills that neighbour's ghost
// region in the opposite direction (its width is the radius on the neighbour's facing side).
inline Box send_box(int direction, const std::array<int64_t, 3>& size, const place::Radius& r) {
  std::array<int64_t, 3> minus{}, plus{}, lo_plus{};
  for (size_t d = 0; d < 3; ++d) {
    minus[d] = r.minus[d];
    plus[d] = r.plus[d];
    lo_plus[d] = size[d] - minus[d];
  }
  return side_box(direction, size, {0, 0, 0}, plus, lo_plus, minus);
}

}  // namespace loom::halo
