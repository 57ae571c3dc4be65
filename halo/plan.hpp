// A halo domain's persistent plan, built once at realize from its pattern (halo/pattern.hpp):
// the copies inside this process (a periodic wrap onto this rank, same-node neighbours' fields
// in node-shared memory), the staging plans of attached fields, and one persistent host-MPI
// message each way per other peer, every direction and field between the pair merged. Those
// messages are bytes already packed (or the host's own datatype), so their requests go to the
// host MPI directly (PMPI_*): a preloaded libloom.so would only add a layer. See docs/halo.md.
#pragma once

#include "halo/domain.hpp"

namespace loom::halo {

// Builds the plan of a realized domain (fields placed, node window open where shared).
int build_plan(Domain* domain);

}  // namespace loom::halo
