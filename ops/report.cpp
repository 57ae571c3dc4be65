#include "ops/report.hpp"

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "exec/device_memory.hpp"
#include "ops/compressed_alltoall.hpp"
#include "runtime/runtime.hpp"

namespace loom::ops {
using namespace loom::runtime;  // NOLINT: the layers below
using namespace loom::exec;     // NOLINT: the layers below

using runtime::Counter;
using runtime::total;

void fill_stats(loom_stats* out) {
  if (!out) return;
  out->pack_calls_loom = total(Counter::PackLoom);
  out->pack_calls_host = total(Counter::PackHost);
  out->unpack_calls_loom = total(Counter::UnpackLoom);
  out->unpack_calls_host = total(Counter::UnpackHost);
  out->pack_bytes_loom = total(Counter::PackBytes);
  out->unpack_bytes_loom = total(Counter::UnpackBytes);
  out->types_committed = total(Counter::TypesCommitted);
  out->types_accelerated = total(Counter::TypesAccelerated);
  out->pack_seconds = static_cast<double>(total(Counter::PackNanoseconds)) * 1e-9;
  out->unpack_seconds = static_cast<double>(total(Counter::UnpackNanoseconds)) * 1e-9;
  out->send_packed = total(Counter::SendPacked);
  out->send_host = total(Counter::SendHost);
  out->send_packed_bytes = total(Counter::SendPackedBytes);
  out->recv_unpacked = total(Counter::RecvUnpacked);
  out->recv_host = total(Counter::RecvHost);
  out->recv_unpacked_bytes = total(Counter::RecvUnpackedBytes);
  out->collective_packed = total(Counter::CollectivePacked);
  out->collective_host = total(Counter::CollectiveHost);
  out->collective_packed_bytes = total(Counter::CollectivePackedBytes);
  out->collective_shared = total(Counter::CollectiveShared);
  out->trials_kept = total(Counter::TrialsKept);
  out->trials_switched = total(Counter::TrialsSwitched);
  out->self_delivered = total(Counter::SelfDelivered);
  out->self_delivered_bytes = total(Counter::SelfDeliveredBytes);
  out->self_demoted = total(Counter::SelfDemoted);
  out->device_staged = total(Counter::DeviceStaged);
  out->device_staged_bytes = total(Counter::DeviceStagedBytes);
  out->compress_calls = total(Counter::CompressCalls);
  out->compress_host_threshold = total(Counter::CompressHostThreshold);
  out->compress_host_type = total(Counter::CompressHostType);
  out->compress_bad_spec = total(Counter::CompressBadSpec);
  out->compress_raw_bytes = total(Counter::CompressRawBytes);
  out->compress_wire_bytes = total(Counter::CompressWireBytes);
  out->compress_seconds = static_cast<double>(total(Counter::CompressNanoseconds)) * 1e-9;
  compress_check_summary(&out->compress_max_abs_error, &out->compress_min_psnr_db);
  out->trials_cost_seconds = static_cast<double>(total(Counter::TrialNanoseconds)) * 1e-9;
  out->trials_started = total(Counter::TrialsStarted);
}

void print_stats(int rank) {
  loom_stats s;
  fill_stats(&s);
  using ull = unsigned long long;
  // One line per rank, grep-friendly: "[loom] rank R <area>: key=value ...".
  std::fprintf(stderr,
               "[loom] rank %d types: isa=%s committed=%llu accelerated=%llu\n"
               "[loom] rank %d pack: MPI_Pack loom=%llu host=%llu bytes=%llu | MPI_Unpack "
               "loom=%llu host=%llu bytes=%llu | kernel time pack=%.6fs unpack=%.6fs\n"
               "[loom] rank %d p2p: send packed=%llu host=%llu bytes=%llu | recv unpacked=%llu "
               "host=%llu bytes=%llu | online trials started=%llu kept=%llu switched=%llu "
               "cost=%.6fs | to itself "
               "delivered=%llu bytes=%llu demoted=%llu\n"
               "[loom] rank %d collectives: packed=%llu host=%llu bytes=%llu shared=%llu\n",
               rank, pack::isa_name(runtime::config().isa), (ull)s.types_committed,
               (ull)s.types_accelerated, rank, (ull)s.pack_calls_loom, (ull)s.pack_calls_host,
               (ull)s.pack_bytes_loom, (ull)s.unpack_calls_loom, (ull)s.unpack_calls_host,
               (ull)s.unpack_bytes_loom, s.pack_seconds, s.unpack_seconds, rank, (ull)s.send_packed,
               (ull)s.send_host, (ull)s.send_packed_bytes, (ull)s.recv_unpacked, (ull)s.recv_host,
               (ull)s.recv_unpacked_bytes, (ull)s.trials_started, (ull)s.trials_kept,
               (ull)s.trials_switched, s.trials_cost_seconds, (ull)s.self_delivered,
               (ull)s.self_delivered_bytes, (ull)s.self_demoted, rank, (ull)s.collective_packed,
               (ull)s.collective_host, (ull)s.collective_packed_bytes, (ull)s.collective_shared);
  if (std::strcmp(exec::device_support_name(), "off") != 0)
    std::fprintf(stderr, "[loom] rank %d device: executor=%s staged=%llu bytes=%llu\n", rank,
                 exec::device_support_name(), (ull)s.device_staged, (ull)s.device_staged_bytes);
  if (s.compress_calls || s.compress_host_threshold || s.compress_host_type ||
      s.compress_bad_spec) {
    const double ratio = s.compress_wire_bytes ? static_cast<double>(s.compress_raw_bytes) /
                                                     static_cast<double>(s.compress_wire_bytes)
                                               : 1.0;
    std::fprintf(
        stderr,
        "[loom] rank %d compress: calls=%llu host=%llu (threshold=%llu type=%llu) "
        "bad_spec=%llu | bytes raw=%llu wire=%llu ratio=%.3f | codec time=%.6fs",
        rank, (ull)s.compress_calls, (ull)(s.compress_host_threshold + s.compress_host_type),
        (ull)s.compress_host_threshold, (ull)s.compress_host_type, (ull)s.compress_bad_spec,
        (ull)s.compress_raw_bytes, (ull)s.compress_wire_bytes, ratio, s.compress_seconds);
    if (compress_check_enabled())
      std::fprintf(stderr, " | check max_abs=%.6g psnr_min=%.2fdB", s.compress_max_abs_error,
                   s.compress_min_psnr_db);
    std::fprintf(stderr, "\n");
  }
}

}  // namespace loom::ops
