// What Loom did in this process: the counters every component registered (runtime/counters.hpp),
// as loom_get_stats and loom_get_counter return them and as LOOM_STATS prints them at
// MPI_Finalize.
#pragma once

#include <cstdint>

#include "loom/loom.h"

namespace loom::ops {

void fill_stats(loom_stats* out);
// loom_get_counter: 1 and the total of the counter `name` ("p2p.send.packed"), 0 when none is.
int counter_value(const char* name, uint64_t* value);
// Prints the LOOM_STATS report for this rank to stderr.
void print_stats(int rank);

}  // namespace loom::ops
