// The ping-pong of one derived-type message between two ranks, the host MPI's point-to-point
// (PMPI_Send/PMPI_Recv) against Loom's (MPI_Send/MPI_Recv), shared by `loom-bench pingpong` and
// `loom-bench app`: the two paths, one round trip, its verification and the floor of the case.
//
// loom-bench links libloom before libmpi, so MPI_Send/MPI_Recv resolve to Loom while
// PMPI_Send/PMPI_Recv are the host's own.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <functional>
#include <string>

#include "bench/common/report.hpp"

namespace loom::bench::p2p {

struct Path {
  const char* name;
  decltype(&MPI_Send) send;
  decltype(&MPI_Recv) recv;
  int tag;  // distinct per path, so a stray message of one path can never match the other
};

const Path& host_path();
const Path& loom_path();

// One message: `count` elements of `type`, whose lowest touched byte is at buffer + base.
struct Exchange {
  MPI_Datatype type;
  int64_t packed_bytes, span_bytes;
  Buffer send, recv, scratch, packed;  // scratch and packed: the expected bytes, built
                                       // with the host's engine
  int count = 1;
  int64_t base = 0;
  unsigned char* at(const Buffer& b) const { return b.get() + base; }
};

// Buffers for `count` elements of `type` spanning `span_bytes` from their lowest byte.
Exchange make_exchange(MPI_Datatype type, int count, int64_t packed_bytes, int64_t span_bytes,
                       int64_t base, const char* tool);

// `iterations` round trips: rank 0 pings, rank 1 pongs, both with the derived type. `last`, if
// given, receives the status of the last receive.
void ping_pong(const Path& p, int rank, Exchange& x, int iterations, MPI_Status* last = nullptr);

// One round trip with fresh patterns; each rank checks its whole receive buffer (typemap bytes
// equal to the peer's pattern, every other byte untouched) and the status. Returns "" on both
// ranks' success, else (on rank 0) every failing rank's description.
std::string verify(const Path& p, int rank, Exchange& x, uint64_t seed);

// The least work any same-node transport must do for one message: read every line of the
// sender's typemap once and write every line of the receiver's once. Timed as this machine's
// fastest pack and fastest unpack of the message (Loom's engine or the host's, whichever is
// faster), with both ranks doing the same at once so that they share the memory system as in
// the ping-pong. Split perfectly over the two cores and overlapped, that work takes
// (pack + unpack) / 2: no transport, Loom's or another, can deliver the message faster, so
// host / floor bounds the host/loom ratio any transport can reach on this machine.
struct Floor {
  double pack = 0, unpack = 0;  // seconds, the faster engine's median
  double seconds() const { return (pack + unpack) / 2; }
};

// Median seconds per call of `call` over `samples` samples, each repeating it until it
// lasts >= 20 us.
double median_call_seconds(const std::function<void()>& call, int samples);

Floor measure_floor(Exchange& x, bool quick);

}  // namespace loom::bench::p2p
