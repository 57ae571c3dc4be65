/* Loom's test-only C API: what loom-bench and Loom's own tests ask of the libloom.so they run
 * under, where the answer must come from that library's own state (the method it chooses, the
 * host it records, the types it decodes). Not a stable API, and not installed: applications
 * use loom.h. The declared test-only header set of bench/ is this header and the headers of
 * the MPI-free engines it links (docs/architecture.md). */
#ifndef LOOM_TESTING_H
#define LOOM_TESTING_H

#include <mpi.h>
#include <stdint.h>

#include "loom/loom.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Pins every method choice of this process to LOOM_METHOD_HOST or LOOM_METHOD_PACK (loom.h),
 * ahead of LOOM_METHOD; -1 gives the choice back to LOOM_METHOD and the model. */
void loom_testing_pin_method(int method);

/* The strings below are written into buf (always NUL-terminated, cut to buflen - 1
 * characters); each call returns the length the whole string needs. */
/* The calibration file the method model reads: $LOOM_CACHE_DIR/calibration-<family>.json, the
 * directory defaulting to $XDG_CACHE_HOME/loom, else $HOME/.cache/loom; "" when none is set. */
int loom_testing_calibration_path(char* buf, int buflen);
/* The running host MPI's short name, e.g. "Open MPI v4.1.4" or "MPICH 4.0.2", and its
 * transport settings in this process's environment (space-separated NAME=value): what a
 * calibration records and is checked against. */
int loom_testing_host_mpi(char* buf, int buflen);
int loom_testing_host_settings(char* buf, int buflen);

/* One element of `type` as Loom decodes it (before canonicalisation), as the words of
 * loom::types::to_words (types/ir.hpp). Returns the number of words; they are written only when
 * it is at most `capacity`. -1 when Loom does not handle the type. */
int loom_testing_type_layout(MPI_Datatype type, int64_t* words, int capacity);

/* A committed type Loom has not planned yet: 1, and the host time its calls have counted towards
 * its plan so far in *host_us (lazy planning, docs/commit.md); 0 for any other type. */
int loom_testing_unplanned_host_time(MPI_Datatype type, double* host_us);

#ifdef __cplusplus
}
#endif

#endif /* LOOM_TESTING_H */
