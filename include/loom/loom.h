/* Loom public C API: runtime queries for tools, tests and curious applications.
 * Applications never need this header; Loom works on unmodified MPI programs. */
#ifndef LOOM_LOOM_H
#define LOOM_LOOM_H

#include <mpi.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Counters for this process, summed over all threads. */
typedef struct loom_stats {
  uint64_t pack_calls_loom; /* MPI_Pack served by Loom's engine */
  uint64_t pack_calls_host; /* MPI_Pack forwarded to the host MPI */
  uint64_t unpack_calls_loom;
  uint64_t unpack_calls_host;
  uint64_t pack_bytes_loom; /* packed bytes produced by Loom */
  uint64_t unpack_bytes_loom;
  uint64_t types_committed;   /* MPI_Type_commit calls seen */
  uint64_t types_accelerated; /* ... of which Loom compiled a plan for */
  double pack_seconds;        /* time inside Loom pack kernels (LOOM_STATS=1 only) */
  double unpack_seconds;
} loom_stats;

/* 1 when the interposer is loaded and not disabled by LOOM_DISABLE=1. */
int loom_is_active(void);
/* 1 when MPI_Pack/MPI_Unpack on this datatype run in Loom's engine, 0 when they go to the host. */
int loom_type_is_accelerated(MPI_Datatype type);
/* Writes a one-line description of Loom's plan for the type into buf (always NUL-terminated).
 * Returns the length the full description needs. */
int loom_type_describe(MPI_Datatype type, char* buf, int buflen);
void loom_get_stats(loom_stats* out);

#ifdef __cplusplus
}
#endif

#endif /* LOOM_LOOM_H */
