#include "ops/codec_slot.hpp"

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "base/env.hpp"
#include "codec/frame.hpp"
#include "codec/metrics.hpp"
#include "mpi/communicator.hpp"

namespace loom::ops {
namespace {

struct CommEntry {
  bool has_hint = false;                      // loom_compress was set on this communicator
  std::shared_ptr<const codec::Codec> codec;  // the hint's codec (null: none)
  MPI_Comm private_comm = MPI_COMM_NULL;
  std::string agreed_spec;        // the codec `pays` was agreed for
  bool pays[2] = {false, false};  // Float32, Float64: on every rank
};

struct Slot {
  std::mutex mutex;
  std::shared_ptr<const codec::Codec> default_codec;  // LOOM_COMPRESS (null: none)
  double link_bytes_per_s = 1000e6 / 8;               // LOOM_LINK_MBPS
  std::unordered_map<MPI_Comm, CommEntry> comms;
  struct Measured {
    bool pays = false;
    double cpu_seconds_per_byte = 0;  // compress + decompress; updated by each call's probe
    double compress_share = 0;        // of cpu_seconds_per_byte, as first measured
  };
  std::map<std::pair<std::string, int>, Measured> pays;  // (spec, element) -> measured
};

constexpr base::EnvVar kCompress{
    "LOOM_COMPRESS", "unset (off)",
    "a codec spec (docs/codec.md): compress MPI_Alltoall(v) of float/double data on "
    "communicators that span nodes, where it pays (docs/compress.md)"};
constexpr base::EnvVar kLinkMbps{
    "LOOM_LINK_MBPS", "1000",
    "the inter-node link rate in Mbit/s the compression threshold compares codec speed with"};

Slot& slot() {
  static Slot* s = new Slot;  // never destroyed: communicators may be freed at exit
  return *s;
}

// Every all-to-all asks codec_for, most with the same communicator as the last call: each
// thread keeps its last answer, valid while no hint changed (hints_epoch, bumped under the
// slot's lock). A locked lookup on every call would cost small all-to-alls a visible share of
// their time.
std::atomic<uint64_t> hints_epoch{1};
struct LastAnswer {
  MPI_Comm comm = MPI_COMM_NULL;
  uint64_t epoch = 0;
  std::shared_ptr<const codec::Codec> codec;
};
thread_local LastAnswer last_answer;

// A codec for `text`, or null for "none"/"off"/"" and on error (*error set).
std::shared_ptr<const codec::Codec> codec_of(const std::string& text, std::string* error) {
  if (text.empty() || text == "off" || text == "none" || text == "0") return nullptr;
  std::optional<codec::Spec> spec = codec::parse_spec(text, error);
  if (!spec) return nullptr;
  if (spec->kind == codec::Kind::None) return nullptr;
  std::unique_ptr<codec::Codec> made = codec::make_codec(*spec, error);
  return std::shared_ptr<const codec::Codec>(std::move(made));
}

}  // namespace

std::atomic<bool> any_codec{false};

void init_codec_slot() {
  Slot& s = slot();
  std::lock_guard lock(s.mutex);
  if (const char* text = base::read(kCompress)) {
    std::string error;
    s.default_codec = codec_of(text, &error);
    if (s.default_codec) any_codec.store(true);
    hints_epoch.fetch_add(1, std::memory_order_release);
    if (!error.empty()) {
      runtime::count(kCompressSpecRefused);
      const std::string problem = "is not a codec spec (" + error + ")";
      base::warn_bad_value(kCompress, text, problem.c_str(), "all-to-alls run uncompressed");
    }
  }
  if (const char* text = base::read(kLinkMbps)) {
    char* end = nullptr;
    const double mbps = std::strtod(text, &end);
    if (end && *end == '\0' && mbps > 0 && std::isfinite(mbps)) {
      s.link_bytes_per_s = mbps * 1e6 / 8;
    } else {
      base::warn_bad_value(kLinkMbps, text, "is not a positive number of Mbit/s", "using 1000");
    }
  }
}

const std::shared_ptr<const codec::Codec>& codec_for(MPI_Comm comm) {
  static const std::shared_ptr<const codec::Codec> none;
  if (!any_codec.load(std::memory_order_relaxed)) return none;
  LastAnswer& last = last_answer;
  const uint64_t epoch = hints_epoch.load(std::memory_order_acquire);
  if (last.epoch == epoch && last.comm == comm) return last.codec;
  Slot& s = slot();
  std::lock_guard lock(s.mutex);
  auto it = s.comms.find(comm);
  last.codec = it != s.comms.end() && it->second.has_hint ? it->second.codec : s.default_codec;
  last.comm = comm;
  last.epoch = epoch;
  return last.codec;
}

int note_comm_info(MPI_Comm comm, MPI_Info info) {
  if (info == MPI_INFO_NULL || comm == MPI_COMM_NULL) return MPI_SUCCESS;
  char key[] = "loom_compress";
  int length = 0, found = 0;
  if (PMPI_Info_get_valuelen(info, key, &length, &found) != MPI_SUCCESS || !found)
    return MPI_SUCCESS;
  std::vector<char> value(static_cast<size_t>(length) + 1, '\0');
  PMPI_Info_get(info, key, length, value.data(), &found);
  std::string text(value.data());
  std::string error;
  std::shared_ptr<const codec::Codec> made = codec_of(text, &error);
  {
    Slot& s = slot();
    std::lock_guard lock(s.mutex);
    CommEntry& entry = s.comms[comm];
    entry.has_hint = true;
    entry.codec = error.empty() ? made : nullptr;
    if (entry.codec) any_codec.store(true);
    hints_epoch.fetch_add(1, std::memory_order_release);
  }
  if (error.empty()) return MPI_SUCCESS;
  runtime::count(kCompressSpecRefused);
  if (runtime::config().verbose)
    std::fprintf(stderr, "[loom] info loom_compress=%s: %s: this communicator stays uncompressed\n",
                 text.c_str(), error.c_str());
  PMPI_Comm_call_errhandler(comm, MPI_ERR_INFO_VALUE);
  return MPI_ERR_INFO_VALUE;
}

bool prepare_comm(MPI_Comm comm, const codec::Codec& codec, codec::Element element,
                  MPI_Comm* private_comm, bool* pays) {
  Slot& s = slot();
  const std::string spec = codec::to_string(codec.spec());
  const int e = element == codec::Element::Float32 ? 0 : 1;
  MPI_Comm dup = MPI_COMM_NULL;
  {
    std::lock_guard lock(s.mutex);
    auto it = s.comms.find(comm);
    if (it != s.comms.end() && it->second.private_comm != MPI_COMM_NULL &&
        it->second.agreed_spec == spec) {
      *private_comm = it->second.private_comm;
      *pays = it->second.pays[e];
      return true;
    }
    if (it != s.comms.end()) dup = it->second.private_comm;
  }
  if (dup == MPI_COMM_NULL) {
    if (PMPI_Comm_dup(comm, &dup) != MPI_SUCCESS) return false;
    PMPI_Comm_set_errhandler(dup, MPI_ERRORS_RETURN);
  }
  // Every rank measures its own codec speed; compression is used only where it pays on all.
  int both[2] = {compression_pays(codec, codec::Element::Float32) ? 1 : 0,
                 compression_pays(codec, codec::Element::Float64) ? 1 : 0};
  if (PMPI_Allreduce(MPI_IN_PLACE, both, 2, MPI_INT, MPI_MIN, dup) != MPI_SUCCESS) return false;
  std::lock_guard lock(s.mutex);
  CommEntry& entry = s.comms[comm];
  entry.private_comm = dup;
  entry.agreed_spec = spec;
  entry.pays[0] = both[0] != 0;
  entry.pays[1] = both[1] != 0;
  *private_comm = dup;
  *pays = entry.pays[e];
  return true;
}

void forget_codec_slot(MPI_Comm comm) {
  if (comm == MPI_COMM_NULL) return;
  Slot& s = slot();
  MPI_Comm dup = MPI_COMM_NULL;
  {
    std::lock_guard lock(s.mutex);
    if (s.comms.empty()) return;
    auto it = s.comms.find(comm);
    if (it == s.comms.end()) return;
    dup = it->second.private_comm;
    s.comms.erase(it);
    hints_epoch.fetch_add(1, std::memory_order_release);
  }
  if (dup == MPI_COMM_NULL) return;
  mpi::forget_comm_shapes();
  PMPI_Comm_free(&dup);
}

bool compression_pays(const codec::Codec& codec, codec::Element element) {
  Slot& s = slot();
  const std::pair<std::string, int> key{codec::to_string(codec.spec()), static_cast<int>(element)};
  {
    std::lock_guard lock(s.mutex);
    auto it = s.pays.find(key);
    if (it != s.pays.end()) return it->second.pays;
  }
  // A smooth sample of 256 KiB: a sum of sinusoids with 0.1% noise (docs/codec.md's field).
  const size_t n = (256 * 1024) / codec::element_size(element);
  std::vector<double> values(n);
  uint32_t noise = 12345;
  for (size_t i = 0; i < n; ++i) {
    noise = noise * 1664525u + 1013904223u;
    const double x = static_cast<double>(i);
    values[i] = std::sin(x / 61.0 * 6.2832) + 0.5 * std::cos(x / 173.0 * 6.2832) +
                0.0035 * (static_cast<double>(noise >> 8) / 16777216.0 - 0.5);
  }
  std::vector<float> floats;
  const void* data = values.data();
  if (element == codec::Element::Float32) {
    floats.assign(values.begin(), values.end());
    data = floats.data();
  }
  codec::FrameOptions options = codec::frame_options(codec.spec());
  options.threads = 1;
  const codec::Throughput t = codec::measure_throughput(codec, data, n, element, options, 0.02);
  const double cpu_per_byte = 1.0 / t.compress_bytes_per_s + 1.0 / t.decompress_bytes_per_s;
  const bool pays = t.compress_bytes_per_s > 0 && t.decompress_bytes_per_s > 0 &&
                    cpu_per_byte < 1.0 / s.link_bytes_per_s;
  if (runtime::config().debug)
    std::fprintf(stderr,
                 "[loom] compress %s: %.0f MB/s in, %.0f MB/s out, ratio %.2f on a smooth sample; "
                 "link %.0f MB/s: %s\n",
                 key.first.c_str(), t.compress_bytes_per_s / 1e6, t.decompress_bytes_per_s / 1e6,
                 t.ratio, s.link_bytes_per_s / 1e6, pays ? "compress" : "send raw");
  std::lock_guard lock(s.mutex);
  s.pays[key] = {pays, cpu_per_byte,
                 std::isfinite(cpu_per_byte) ? (1.0 / t.compress_bytes_per_s) / cpu_per_byte : 0};
  return pays;
}

CodecCost codec_cost(const codec::Codec& codec, codec::Element element,
                     double compress_seconds_per_byte) {
  compression_pays(codec, element);  // measures on first use
  Slot& s = slot();
  std::lock_guard lock(s.mutex);
  Slot::Measured& m = s.pays[{codec::to_string(codec.spec()), static_cast<int>(element)}];
  // A probe's compression speed, on the call's own data and under the machine's present
  // load, scaled to compress + decompress by the first measurement's split; smoothed. One
  // probe counts as at most kMaxProbeStep times the present estimate, so that one probe stalled
  // by descheduling does not send the next calls raw, while a lasting load still raises the
  // estimate a call after a call (docs/compress.md, "The threshold").
  constexpr double kMaxProbeStep = 4;
  if (compress_seconds_per_byte > 0 && m.compress_share > 0) {
    double sample = compress_seconds_per_byte / m.compress_share;
    if (m.cpu_seconds_per_byte > 0)
      sample = std::min(sample, kMaxProbeStep * m.cpu_seconds_per_byte);
    m.cpu_seconds_per_byte = 0.75 * m.cpu_seconds_per_byte + 0.25 * sample;
  }
  return {m.cpu_seconds_per_byte, 1.0 / s.link_bytes_per_s};
}

}  // namespace loom::ops
