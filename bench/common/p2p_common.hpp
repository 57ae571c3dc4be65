// Helpers shared by the communication benchmarks (loom-bench pingpong, halo and measure): the
// element type of a block, which path (Loom's engine or the host's) served the MPI_* calls of a
// measured exchange, the paired host/Loom times of a case and the verification messages of
// every rank.
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

#include "bench/common/report.hpp"
#include "loom/loom.h"

namespace loom::bench::p2p {

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

// The host path's and Loom's path's samples of one case, taken in alternation (samples[0]: the
// host's, samples[1]: Loom's), summarised; paired_ratio: host/Loom of each repetition's
// adjacent samples.
struct PathTimes {
  Summary host, loom, paired_ratio;
  // host median / Loom median: > 1 means Loom is faster.
  double ratio() const { return loom.median > 0 ? host.median / loom.median : 0; }
  void summarize_samples(const std::vector<double> (&samples)[2]) {
    std::vector<double> ratios;
    for (size_t i = 0; i < samples[0].size(); ++i) ratios.push_back(samples[0][i] / samples[1][i]);
    host = summarize(samples[0]);
    loom = summarize(samples[1]);
    paired_ratio = summarize(ratios);
  }
};

// Every rank's verification message (empty: nothing wrong), gathered on rank 0 and joined with
// "; " there; "" on the other ranks. A message is cut at 239 characters.
inline std::string gather_rank_messages(const std::string& local, int rank, int ranks) {
  constexpr int kMessageChars = 240;
  char message[kMessageChars] = {};
  std::snprintf(message, sizeof message, "%s", local.c_str());
  std::vector<char> all(rank == 0 ? static_cast<size_t>(ranks) * kMessageChars : 1);
  PMPI_Gather(message, kMessageChars, MPI_CHAR, all.data(), kMessageChars, MPI_CHAR, 0,
              MPI_COMM_WORLD);
  std::string result;
  if (rank == 0)
    for (int r = 0; r < ranks; ++r) {
      const char* m = all.data() + static_cast<size_t>(r) * kMessageChars;
      if (*m) append_error(&result, std::string(m, strnlen(m, kMessageChars)));
    }
  return result;
}

}  // namespace loom::bench::p2p
