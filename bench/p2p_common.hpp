// Helpers shared by the communication benchmarks (loom-bench pingpong and halo): option
// parsing, page-aligned buffers, deterministic fill patterns and which path (Loom's engine or
// the host's) served the MPI_* calls of a measured exchange.
#pragma once

#include <mpi.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "bench/report.hpp"
#include "loom/loom.h"

namespace loom::bench::p2p {

constexpr int64_t kKiB = 1024, kMiB = 1024 * kKiB;

// Largest named type that divides a block: how an application would declare it. Hosts
// have kernels per basic type, so the calibration and the benchmarks use the same choice.
struct Element {
  MPI_Datatype type;
  int bytes;
};
inline Element element_for_block(int64_t block_bytes) {
  if (block_bytes % 8 == 0) return {MPI_DOUBLE, 8};
  if (block_bytes % 4 == 0) return {MPI_FLOAT, 4};
  if (block_bytes % 2 == 0) return {MPI_SHORT, 2};
  return {MPI_BYTE, 1};
}

// Which engine served a measured exchange, from the LOOM_STATS counters of this rank taken
// before and after it: "loom" (packed by Loom, sent as bytes, or a message to the rank itself
// that Loom delivered), "host" (Loom left the derived
// type to the host MPI), "mixed", or "-" when Loom saw no such call at all (Loom inactive, or
// a build of libloom that does not interpose this MPI call).
inline std::string route_of(uint64_t loom_calls, uint64_t host_calls) {
  if (loom_calls && host_calls) return "mixed";
  if (loom_calls) return "loom";
  if (host_calls) return "host";
  return "-";
}

struct RouteCounters {
  uint64_t p2p_loom = 0, p2p_host = 0, coll_loom = 0, coll_host = 0;
  static RouteCounters now() {
    loom_stats s;
    loom_get_stats(&s);
    // A message to oneself that Loom delivered served a send and a receive.
    return {s.send_packed + s.recv_unpacked + 2 * s.self_delivered, s.send_host + s.recv_host,
            s.collective_packed, s.collective_host};
  }
  RouteCounters since(const RouteCounters& before) const {
    return {p2p_loom - before.p2p_loom, p2p_host - before.p2p_host, coll_loom - before.coll_loom,
            coll_host - before.coll_host};
  }
};

}  // namespace loom::bench::p2p
