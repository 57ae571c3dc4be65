#include "bench/p2p/p2p_pingpong.hpp"

#include <algorithm>
#include <cstring>
#include <vector>

#include "bench/common/p2p_common.hpp"

namespace loom::bench::p2p {

const Path& host_path() {
  static const Path p{"host", &PMPI_Send, &PMPI_Recv, 101};
  return p;
}
const Path& loom_path() {
  static const Path p{"loom", &MPI_Send, &MPI_Recv, 202};
  return p;
}

Exchange make_exchange(MPI_Datatype type, int count, int64_t packed_bytes, int64_t span_bytes,
                       int64_t base, const char* tool) {
  return {type,
          packed_bytes,
          span_bytes,
          allocate(span_bytes, tool),
          allocate(span_bytes, tool),
          allocate(span_bytes, tool),
          allocate(packed_bytes, tool),
          count,
          base};
}

void ping_pong(const Path& p, int rank, Exchange& x, int iterations, MPI_Status* last) {
  const int peer = 1 - rank;
  MPI_Status* status = last ? last : MPI_STATUS_IGNORE;
  for (int i = 0; i < iterations; ++i) {
    if (rank == 0) {
      p.send(x.at(x.send), x.count, x.type, peer, p.tag, MPI_COMM_WORLD);
      p.recv(x.at(x.recv), x.count, x.type, peer, p.tag, MPI_COMM_WORLD, status);
    } else {
      p.recv(x.at(x.recv), x.count, x.type, peer, p.tag, MPI_COMM_WORLD, status);
      p.send(x.at(x.send), x.count, x.type, peer, p.tag, MPI_COMM_WORLD);
    }
  }
}

std::string verify(const Path& p, int rank, Exchange& x, uint64_t seed) {
  const int peer = 1 - rank;
  const uint64_t sentinel_seed = seed + 1000 + static_cast<uint64_t>(rank);
  fill_pattern(x.send.get(), x.span_bytes, seed + static_cast<uint64_t>(rank));
  fill_pattern(x.recv.get(), x.span_bytes, sentinel_seed);
  MPI_Status status;
  ping_pong(p, rank, x, 1, &status);

  std::string message;
  int count = -1;
  MPI_Get_count(&status, x.type, &count);
  if (count != x.count || status.MPI_SOURCE != peer || status.MPI_TAG != p.tag) {
    message = format("rank %d, %s path: status says count=%d source=%d tag=%d (want %d, %d, %d)",
                     rank, p.name, count, status.MPI_SOURCE, status.MPI_TAG, x.count, peer, p.tag);
  } else {
    fill_pattern(x.scratch.get(), x.span_bytes, seed + static_cast<uint64_t>(peer));
    int pos = 0;
    PMPI_Pack(x.at(x.scratch), x.count, x.type, x.packed.get(), static_cast<int>(x.packed_bytes),
              &pos, MPI_COMM_WORLD);
    fill_pattern(x.scratch.get(), x.span_bytes, sentinel_seed);
    pos = 0;
    PMPI_Unpack(x.packed.get(), static_cast<int>(x.packed_bytes), &pos, x.at(x.scratch), x.count,
                x.type, MPI_COMM_WORLD);
    const unsigned char* got = x.recv.get();
    const unsigned char* want = x.scratch.get();
    if (std::memcmp(got, want, static_cast<size_t>(x.span_bytes)) != 0) {
      int64_t first = 0, wrong = 0;
      for (int64_t i = x.span_bytes - 1; i >= 0; --i)
        if (got[i] != want[i]) first = i, ++wrong;
      message = format(
          "rank %d, %s path: %lld of %lld buffer bytes wrong, first at byte %lld "
          "(got 0x%02x, want 0x%02x)",
          rank, p.name, (long long)wrong, (long long)x.span_bytes, (long long)first, got[first],
          want[first]);
    }
  }
  return gather_rank_messages(message, rank, 2);
}

double median_call_seconds(const std::function<void()>& call, int samples) {
  int repeats = 1;
  while (repeats < (1 << 16) && seconds_per_call(call, repeats) * repeats < 20e-6) repeats *= 4;
  std::vector<double> times;
  for (int s = 0; s < samples; ++s) times.push_back(seconds_per_call(call, repeats));
  return summarize(times).median;
}

Floor measure_floor(Exchange& x, bool quick) {
  const int samples = quick ? 3 : 9;
  const int bytes = static_cast<int>(x.packed_bytes);
  auto pack_with = [&](decltype(&MPI_Pack) pack) {
    return median_call_seconds(
        [&] {
          int position = 0;
          pack(x.at(x.send), x.count, x.type, x.packed.get(), bytes, &position, MPI_COMM_WORLD);
        },
        samples);
  };
  auto unpack_with = [&](decltype(&MPI_Unpack) unpack) {
    return median_call_seconds(
        [&] {
          int position = 0;
          unpack(x.packed.get(), bytes, &position, x.at(x.scratch), x.count, x.type,
                 MPI_COMM_WORLD);
        },
        samples);
  };
  PMPI_Barrier(MPI_COMM_WORLD);
  Floor f;
  f.pack = std::min(pack_with(&MPI_Pack), pack_with(&PMPI_Pack));
  f.unpack = std::min(unpack_with(&MPI_Unpack), unpack_with(&PMPI_Unpack));
  PMPI_Barrier(MPI_COMM_WORLD);
  return f;
}

}  // namespace loom::bench::p2p
