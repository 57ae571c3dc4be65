#include "ops/report.hpp"

#include <cstddef>
#include <cstdio>
#include <string>

#include "ops/compressed_alltoall.hpp"
#include "runtime/counters.hpp"

namespace loom::ops {
namespace {

// Each loom_stats field and the registered counter it reports. The struct is the public ABI;
// new counters need no field (loom_get_counter reads them by name).
struct Field {
  size_t offset;
  const char* counter;
  bool seconds;  // a Unit::Nanoseconds counter reported as a double in seconds
};
#define LOOM_FIELD(member, name) \
  { offsetof(loom_stats, member), name, false }
#define LOOM_SECONDS(member, name) \
  { offsetof(loom_stats, member), name, true }
constexpr Field kFields[] = {
    LOOM_FIELD(pack_calls_loom, "pack.MPI_Pack.loom"),
    LOOM_FIELD(pack_calls_host, "pack.MPI_Pack.host"),
    LOOM_FIELD(unpack_calls_loom, "pack.MPI_Unpack.loom"),
    LOOM_FIELD(unpack_calls_host, "pack.MPI_Unpack.host"),
    LOOM_FIELD(pack_bytes_loom, "pack.MPI_Pack.bytes"),
    LOOM_FIELD(unpack_bytes_loom, "pack.MPI_Unpack.bytes"),
    LOOM_FIELD(types_committed, "types.committed"),
    LOOM_FIELD(types_accelerated, "types.accelerated"),
    LOOM_SECONDS(pack_seconds, "pack.kernel_time.pack"),
    LOOM_SECONDS(unpack_seconds, "pack.kernel_time.unpack"),
    LOOM_FIELD(send_packed, "p2p.send.packed"),
    LOOM_FIELD(send_host, "p2p.send.host"),
    LOOM_FIELD(send_packed_bytes, "p2p.send.bytes"),
    LOOM_FIELD(recv_unpacked, "p2p.recv.unpacked"),
    LOOM_FIELD(recv_host, "p2p.recv.host"),
    LOOM_FIELD(recv_unpacked_bytes, "p2p.recv.bytes"),
    LOOM_FIELD(collective_packed, "collectives.packed"),
    LOOM_FIELD(collective_host, "collectives.host"),
    LOOM_FIELD(collective_packed_bytes, "collectives.bytes"),
    LOOM_FIELD(collective_shared, "collectives.shared"),
    LOOM_FIELD(trials_kept, "p2p.online_trials.kept"),
    LOOM_FIELD(trials_switched, "p2p.online_trials.switched"),
    LOOM_FIELD(trials_started, "p2p.online_trials.started"),
    LOOM_SECONDS(trials_cost_seconds, "p2p.online_trials.cost"),
    LOOM_FIELD(self_delivered, "p2p.to_itself.delivered"),
    LOOM_FIELD(self_delivered_bytes, "p2p.to_itself.bytes"),
    LOOM_FIELD(self_demoted, "p2p.to_itself.demoted"),
    LOOM_FIELD(device_staged, "device.staged"),
    LOOM_FIELD(device_staged_bytes, "device.bytes"),
    LOOM_FIELD(compress_calls, "compress.calls"),
    LOOM_FIELD(compress_host_threshold, "compress.host.threshold"),
    LOOM_FIELD(compress_host_type, "compress.host.type"),
    LOOM_FIELD(compress_bad_spec, "compress.spec.refused"),
    LOOM_FIELD(compress_raw_bytes, "compress.bytes.raw"),
    LOOM_FIELD(compress_wire_bytes, "compress.bytes.wire"),
    LOOM_SECONDS(compress_seconds, "compress.codec.time"),
};
#undef LOOM_FIELD
#undef LOOM_SECONDS

}  // namespace

void fill_stats(loom_stats* out) {
  if (!out) return;
  *out = loom_stats{};
  auto* base = reinterpret_cast<char*>(out);
  for (const Field& f : kFields) {
    const uint64_t value = runtime::total(runtime::find_counter(f.counter));
    if (f.seconds)
      *reinterpret_cast<double*>(base + f.offset) = static_cast<double>(value) * 1e-9;
    else
      *reinterpret_cast<uint64_t*>(base + f.offset) = value;
  }
  compress_check_summary(&out->compress_max_abs_error, &out->compress_min_psnr_db);
}

int counter_value(const char* name, uint64_t* value) {
  if (!name || !value) return 0;
  const runtime::Counter counter = runtime::find_counter(name);
  if (!counter.valid()) return 0;
  *value = runtime::total(counter);
  return 1;
}

void print_stats(int rank) {
  const std::string report = runtime::format_report(rank);
  std::fputs(report.c_str(), stderr);
}

}  // namespace loom::ops
