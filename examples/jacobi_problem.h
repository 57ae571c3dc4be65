/* The problem both Jacobi examples solve (jacobi_halo.c on Loom's halo library, jacobi_mpi.c
 * with hand-written MPI): the 3-D heat equation, 7-point stencil, periodic, on a grid of
 * (edge+1) x (edge-3) x edge cells, so no two extents are equal. The same initial values,
 * update and checksum in both, so that their checksums must agree. */
#ifndef LOOM_EXAMPLES_JACOBI_PROBLEM_H
#define LOOM_EXAMPLES_JACOBI_PROBLEM_H

#include <stdint.h>
#include <string.h>

static inline double initial(int64_t x, int64_t y, int64_t z) {
  return (double)((x * 7 + y * 13 + z * 29) % 101) / 101.0;
}

/* The update of one cell from itself and its six neighbours, the same expression everywhere. */
static inline double update(double c, double xm, double xp, double ym, double yp, double zm,
                            double zp) {
  return c + 0.1 * (xm + xp + ym + yp + zm + zp - 6.0 * c);
}

/* An order-independent checksum: a hash of each cell's bits and global index, summed. */
static inline uint64_t cell_hash(double v, int64_t index) {
  uint64_t bits;
  memcpy(&bits, &v, sizeof bits);
  uint64_t h = bits ^ ((uint64_t)index * 0x9E3779B97F4A7C15ull);
  h ^= h >> 31;
  h *= 0xBF58476D1CE4E5B9ull;
  h ^= h >> 29;
  return h;
}

#endif
