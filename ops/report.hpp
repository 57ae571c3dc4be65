// What Loom did in this process: the counters of every layer, as loom_get_stats returns them and as
// LOOM_STATS prints them at MPI_Finalize.
#pragma once

#include "loom/loom.h"

namespace loom::ops {

void fill_stats(loom_stats* out);
// Prints the LOOM_STATS report for this rank to stderr.
void print_stats(int rank);

}  // namespace loom::ops
