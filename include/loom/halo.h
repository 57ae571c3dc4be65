/* Loom halo: a 3-D halo-exchange library (issue #24). C API; see docs/halo.md.
 *
 * A domain is a global 3-D grid (x fastest) split over the ranks of a communicator (two-level:
 * nodes, then ranks inside a node; place/partition.hpp), with a halo of radius cells per side,
 * periodic or not per dimension, and a stencil that says which of the 26 ghost regions are
 * filled. Fields (structure of arrays, allocated by the library, ghosts included) are added,
 * then the domain is realized: a persistent plan merges every direction and field between one
 * pair of ranks into one message, replayed by each exchange.
 *
 * Every function returns LOOM_HALO_SUCCESS or an error code; loom_halo_error_message() gives
 * the calling thread's last error in words. Functions marked "collective" must be entered by
 * every rank of the domain's communicator with the same arguments. Works with or without
 * libloom.so preloaded. */
#ifndef LOOM_HALO_H
#define LOOM_HALO_H

#include <mpi.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

enum loom_halo_error {
  LOOM_HALO_SUCCESS = 0,
  LOOM_HALO_ERR_ARG = 1,      /* null pointer, unknown stencil, field index, element size/type */
  LOOM_HALO_ERR_EXTENT = 2,   /* global extent below 1, or more ranks than cells along the grid */
  LOOM_HALO_ERR_RADIUS = 3,   /* a negative radius, or one larger than a subdomain */
  LOOM_HALO_ERR_STATE = 4,    /* call out of order: a field after realize, an exchange before */
  LOOM_HALO_ERR_MISMATCH = 5, /* ranks passed different arguments to a collective call */
  LOOM_HALO_ERR_MPI = 6,      /* the host MPI returned an error */
  LOOM_HALO_ERR_NOMEM = 7     /* allocation failed */
};

enum loom_halo_stencil {
  LOOM_HALO_BOX = 0,     /* all 26 directions: faces, edges, corners */
  LOOM_HALO_STAR = 1,    /* the 6 faces */
  LOOM_HALO_EXPLICIT = 2 /* the directions set in the mask (below) */
};

/* Directions: offsets (dx, dy, dz) in {-1,0,1}^3, numbered (dx+1) + 3(dy+1) + 9(dz+1); 13 is
 * the subdomain itself. Bit i of an explicit mask asks for the ghost region in direction i. */
#define LOOM_HALO_DIRECTION(dx, dy, dz) (((dx) + 1) + 3 * ((dy) + 1) + 9 * ((dz) + 1))

typedef struct loom_halo_domain_s* loom_halo_domain;

/* Collective over comm (and, the first time in a process without libloom.so preloaded, over
 * MPI_COMM_WORLD: node identity, as mpi/locality.hpp). extent: global cells along x, y, z.
 * radius: ghost width per side, {-x, +x, -y, +y, -z, +z} (0 allowed). periodic: per dimension,
 * nonzero wraps. mask: used only with LOOM_HALO_EXPLICIT. The communicator is duplicated. */
int loom_halo_create(MPI_Comm comm, const int64_t extent[3], const int radius[6],
                     const int periodic[3], int stencil, uint32_t mask, loom_halo_domain* domain);

/* Adds a field of element_size bytes per cell (or of a named MPI type), before realize.
 * *field receives its index (0, 1, ...). Not collective, but every rank must add the same
 * fields in the same order (realize checks). */
int loom_halo_add_field(loom_halo_domain domain, size_t element_size, int* field);
int loom_halo_add_field_type(loom_halo_domain domain, MPI_Datatype named_type, int* field);
/* Attaches the caller's memory as a field, before realize (user-attached buffers; also the way
 * to array-of-structs layouts). base is the field's local cell (0,0,0): cell (i,j,k), ghosts
 * included (-radius[-side] <= i < extent + radius[+side], likewise j, k), is at
 * (char*)base + i*strides[0] + j*strides[1] + k*strides[2]; strides in bytes, row-major and
 * not overlapping (strides[0] >= element_size, strides[1] >= strides[0] * cells along x with
 * ghosts, strides[2] likewise). Array of structs: strides[0] = the struct's size, base =
 * &cell->member. Neighbours cannot read user memory in place, so in a domain with an attached
 * field same-node neighbours exchange through node-shared pack areas (docs/halo.md). The memory
 * must outlive the domain. */
int loom_halo_attach_field(loom_halo_domain domain, size_t element_size, void* base,
                           const int64_t strides[3], int* field);

/* Transports a neighbour pair may use (docs/halo.md): the same rank copies interior to ghost
 * directly (SELF), a same-node rank reads the neighbour's interior from node-shared memory, or
 * with attached fields unpacks it from the neighbour's node-shared pack area (SHARED), any
 * other pair exchanges one packed MPI message each way (MPI, the fallback of
 * every pair: it cannot be left out). */
enum loom_halo_method {
  LOOM_HALO_METHOD_SELF = 1,
  LOOM_HALO_METHOD_SHARED = 2,
  LOOM_HALO_METHOD_MPI = 4,
  LOOM_HALO_METHODS_ALL = 7
};
/* Restricts the transports of this domain, before realize (the same on every rank, realize
 * checks). Without it, LOOM_HALO_METHODS (e.g. "shared,mpi") or all of them. */
int loom_halo_set_methods(loom_halo_domain domain, unsigned methods);

/* Collective: allocates the fields (zeroed, ghosts included; in node-shared memory when the
 * SHARED method is allowed) and builds the persistent plan. */
int loom_halo_realize(loom_halo_domain domain);

/* This rank's subdomain: first interior cell in global coordinates, and interior cells. */
int loom_halo_origin(loom_halo_domain domain, int64_t origin[3]);
int loom_halo_extent(loom_halo_domain domain, int64_t extent[3]);
/* After realize: *base points at the field's first interior cell (local (0,0,0)); cell (i,j,k)
 * with -radius[-side] <= i < extent + radius[+side] (likewise j, k) is at
 * (char*)*base + i*strides[0] + j*strides[1] + k*strides[2]; strides in bytes (strides[0] is
 * the element size). */
int loom_halo_field(loom_halo_domain domain, int field, void** base, int64_t strides[3]);
/* The plan's transports on this rank: distinct ranks exchanging one MPI message each way
 * (mpi_peers), same-node ranks whose interior this rank reads from node-shared memory
 * (shared_peers), and whether it copies onto itself (periodic wrap onto one subdomain). */
int loom_halo_peers(loom_halo_domain domain, int* mpi_peers, int* shared_peers, int* self_copies);
/* Fills every ghost region the stencil asks for with the owning neighbour's interior.
 * Collective over the domain's communicator. exchange = start + finish. Between start and
 * finish the interior may be read but not written, and ghosts neither. */
int loom_halo_exchange(loom_halo_domain domain);
int loom_halo_start(loom_halo_domain domain);
int loom_halo_finish(loom_halo_domain domain);

/* Frees the fields and the plan; *domain becomes NULL. Collective over the ranks of this
 * rank's node when the same-node transport is in use (node-shared windows are freed); an
 * exchange in flight is completed first. */
int loom_halo_destroy(loom_halo_domain* domain);

const char* loom_halo_error_string(int code); /* the code's name */
const char* loom_halo_error_message(void);    /* the calling thread's last error, in words */

#ifdef __cplusplus
}
#endif

#endif /* LOOM_HALO_H */
