// loom_get_counter (counters by name, runtime/counters.hpp) against loom_get_stats: every field
// of the public struct names a registered counter and reads the same value.
#include <mpi.h>

#include <cinttypes>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <vector>

#include "loom/loom.h"

namespace {

struct Field {
  const char* name;
  size_t offset;
  bool seconds;
};
#define COUNT_FIELD(member, name) \
  { name, offsetof(loom_stats, member), false }
#define SECONDS_FIELD(member, name) \
  { name, offsetof(loom_stats, member), true }
// The names README's LOOM_STATS section documents for each field.
const Field kFields[] = {
    COUNT_FIELD(types_committed, "types.committed"),
    COUNT_FIELD(types_accelerated, "types.accelerated"),
    COUNT_FIELD(pack_calls_loom, "pack.MPI_Pack.loom"),
    COUNT_FIELD(pack_calls_host, "pack.MPI_Pack.host"),
    COUNT_FIELD(pack_bytes_loom, "pack.MPI_Pack.bytes"),
    COUNT_FIELD(unpack_calls_loom, "pack.MPI_Unpack.loom"),
    COUNT_FIELD(unpack_calls_host, "pack.MPI_Unpack.host"),
    COUNT_FIELD(unpack_bytes_loom, "pack.MPI_Unpack.bytes"),
    SECONDS_FIELD(pack_seconds, "pack.kernel_time.pack"),
    SECONDS_FIELD(unpack_seconds, "pack.kernel_time.unpack"),
    COUNT_FIELD(send_packed, "p2p.send.packed"),
    COUNT_FIELD(send_host, "p2p.send.host"),
    COUNT_FIELD(send_packed_bytes, "p2p.send.bytes"),
    COUNT_FIELD(recv_unpacked, "p2p.recv.unpacked"),
    COUNT_FIELD(recv_host, "p2p.recv.host"),
    COUNT_FIELD(recv_unpacked_bytes, "p2p.recv.bytes"),
    COUNT_FIELD(trials_kept, "p2p.online_trials.kept"),
    COUNT_FIELD(trials_switched, "p2p.online_trials.switched"),
    COUNT_FIELD(trials_started, "p2p.online_trials.started"),
    SECONDS_FIELD(trials_cost_seconds, "p2p.online_trials.cost"),
    COUNT_FIELD(self_delivered, "p2p.to_itself.delivered"),
    COUNT_FIELD(self_delivered_bytes, "p2p.to_itself.bytes"),
    COUNT_FIELD(self_demoted, "p2p.to_itself.demoted"),
    COUNT_FIELD(collective_packed, "collectives.packed"),
    COUNT_FIELD(collective_host, "collectives.host"),
    COUNT_FIELD(collective_packed_bytes, "collectives.bytes"),
    COUNT_FIELD(collective_shared, "collectives.shared"),
    COUNT_FIELD(device_staged, "device.staged"),
    COUNT_FIELD(device_staged_bytes, "device.bytes"),
    COUNT_FIELD(compress_calls, "compress.calls"),
    COUNT_FIELD(compress_host_threshold, "compress.host.threshold"),
    COUNT_FIELD(compress_host_type, "compress.host.type"),
    COUNT_FIELD(compress_bad_spec, "compress.spec.refused"),
    COUNT_FIELD(compress_raw_bytes, "compress.bytes.raw"),
    COUNT_FIELD(compress_wire_bytes, "compress.bytes.wire"),
    SECONDS_FIELD(compress_seconds, "compress.codec.time"),
};

int failures = 0;
void fail(const char* what, const char* name) {
  std::fprintf(stderr, "FAIL: %s: %s\n", name, what);
  ++failures;
}

uint64_t counter(const char* name) {
  uint64_t value = 0;
  if (!loom_get_counter(name, &value)) fail("loom_get_counter knows no such counter", name);
  return value;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  // Traffic that every build serves: a committed vector packed, unpacked and sent to oneself.
  MPI_Datatype vec;
  MPI_Type_vector(64, 3, 5, MPI_INT, &vec);
  MPI_Type_commit(&vec);
  std::vector<int> data(64 * 5), back(64 * 5, 0);
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<int>(i * 7 + 1);
  std::vector<char> packed(64 * 3 * sizeof(int));
  int position = 0;
  MPI_Pack(data.data(), 1, vec, packed.data(), static_cast<int>(packed.size()), &position,
           MPI_COMM_WORLD);
  position = 0;
  MPI_Unpack(packed.data(), static_cast<int>(packed.size()), &position, back.data(), 1, vec,
             MPI_COMM_WORLD);
  MPI_Sendrecv(data.data(), 1, vec, 0, 7, back.data(), 1, vec, 0, 7, MPI_COMM_SELF,
               MPI_STATUS_IGNORE);
  MPI_Type_free(&vec);

  loom_stats stats{};
  loom_get_stats(&stats);
  const auto* base = reinterpret_cast<const char*>(&stats);
  for (const Field& f : kFields) {
    const uint64_t value = counter(f.name);
    if (f.seconds) {
      double seconds = 0;
      std::memcpy(&seconds, base + f.offset, sizeof seconds);
      if (seconds != static_cast<double>(value) * 1e-9) fail("differs from loom_get_stats", f.name);
    } else {
      uint64_t field = 0;
      std::memcpy(&field, base + f.offset, sizeof field);
      if (field != value) fail("differs from loom_get_stats", f.name);
    }
  }
  if (loom_is_active()) {
    if (counter("types.committed") < 1) fail("no commit counted", "types.committed");
    if (counter("pack.MPI_Pack.loom") + counter("pack.MPI_Pack.host") != 1)
      fail("one MPI_Pack expected", "pack.MPI_Pack");
    if (counter("p2p.to_itself.delivered") + counter("p2p.send.host") + counter("p2p.send.packed") <
        1)
      fail("the message to oneself was not counted", "p2p");
  }
  uint64_t untouched = 12345;
  if (loom_get_counter("no.such.counter", &untouched) != 0 || untouched != 12345)
    fail("an unknown name must return 0 and leave the value", "no.such.counter");
  if (loom_get_counter(nullptr, &untouched) != 0 || loom_get_counter("types.committed", nullptr))
    fail("null arguments must return 0", "loom_get_counter");
  MPI_Finalize();
  if (failures) return 1;
  std::printf("stats counters: %zu fields agree with loom_get_counter\n", std::size(kFields));
  return 0;
}
