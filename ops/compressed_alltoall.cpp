// The compressed all-to-all exchange (docs/compress.md, "The exchange").
#include "ops/compressed_alltoall.hpp"

#include <algorithm>
#include <chrono>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "base/env.hpp"
#include "codec/frame.hpp"
#include "codec/metrics.hpp"
#include "mpi/locality.hpp"
#include "mpi/requests.hpp"
#include "mpi/sim_clock.hpp"
#include "mpi/type_decode.hpp"
#include "ops/codec_slot.hpp"
#include "runtime/counters.hpp"
#include "transport/staging.hpp"

namespace loom::ops {
using runtime::count;
using runtime::Counter;
namespace {

bool compress_counted() {
  return runtime::area_total("compress") > 0;
}
std::string compress_tail();  // below: ratio and the check's figures
const bool kCompressFormat =
    runtime::format_area("compress", {70, nullptr, compress_tail, compress_counted});

using Clock = std::chrono::steady_clock;

uint64_t nanoseconds_since(Clock::time_point start) {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - start).count());
}

// The one floating kind a datatype's signature is made of: 1 MPI_FLOAT, 2 MPI_DOUBLE, 0 any
// other (another basic type, a mix, nothing, or a type the host cannot describe).
int signature_kind(MPI_Datatype type, int depth) {
  if (type == MPI_FLOAT) return 1;
  if (type == MPI_DOUBLE) return 2;
  if (type == MPI_DATATYPE_NULL || depth > 32) return 0;
  const mpi::TypeContents contents(type);
  if (contents.combiner == -1 || contents.combiner == MPI_COMBINER_NAMED) return 0;
  int kind = -1;
  for (MPI_Datatype inner : contents.types) {
    const int k = signature_kind(inner, depth + 1);
    if (k == 0 || (kind != -1 && kind != k)) kind = 0;
    if (kind == -1) kind = k;
  }
  return kind < 0 ? 0 : kind;
}

constexpr base::EnvVar kCompressWindow{
    "LOOM_COMPRESS_WINDOW", "4",
    "compressed chunks in flight per rank; more delays the transport's handshakes for the "
    "other direction"};
constexpr base::EnvVar kCompressCheck{
    "LOOM_COMPRESS_CHECK", "0",
    "1: every compressed call also measures the maximum absolute error and PSNR of what it "
    "delivered"};

size_t send_window() {
  static const size_t window = [] {
    const char* text = base::read(kCompressWindow);
    const long v = text ? std::strtol(text, nullptr, 10) : 0;
    return v > 0 ? static_cast<size_t>(v) : size_t{4};
  }();
  return window;
}

bool named(MPI_Datatype type) {
  return type == MPI_FLOAT || type == MPI_DOUBLE;
}

bool check_enabled() {
  static const bool on = base::read_flag(kCompressCheck);
  return on;
}

struct CheckSummary {
  std::mutex mutex;
  double max_abs = 0;
  double min_psnr = std::numeric_limits<double>::infinity();
};
CheckSummary& check_summary() {
  static CheckSummary* s = new CheckSummary;
  return *s;
}

// One call's exchange; a PendingOp so that the non-blocking forms finish it at completion.
class CompressedExchange final : public mpi::PendingOp {
 public:
  CompressedExchange(std::shared_ptr<const codec::Codec> codec, codec::Element element,
                     MPI_Comm comm, MPI_Comm pcomm, int rank, int size)
      : codec_(std::move(codec)),
        element_(element),
        es_(codec::element_size(element)),
        comm_(comm),
        pcomm_(pcomm),
        rank_(rank),
        size_(size) {
    codec::FrameOptions options = codec::frame_options(codec_->spec());
    chunk_ = codec::chunk_values(*codec_, element_, options);
  }
  ~CompressedExchange() override {
    if (held_recvtype_ != MPI_DATATYPE_NULL) PMPI_Type_free(&held_recvtype_);
  }

  // Describes both sides; false on a host error (rc_ set).
  bool describe(const void* sendbuf, const int* sendcounts, const int* sdispls,
                MPI_Datatype sendtype, void* recvbuf, const int* recvcounts, const int* rdispls,
                MPI_Datatype recvtype, bool nonblocking) {
    if (!describe_receives(recvbuf, recvcounts, rdispls, recvtype, nonblocking)) return false;
    if (sendbuf != MPI_IN_PLACE) return describe_sends(sendbuf, sendcounts, sdispls, sendtype);
    // The send data is the receive buffer: staged before anything arrives.
    in_place_ = true;
    return describe_sends(recvbuf, recvcounts, rdispls, recvtype);
  }

  // Posts every receive, copies the own block, compresses and sends peer by peer.
  int start() {
    count(kCompressCalls);
    if (int rc = post_first_receives(); rc != MPI_SUCCESS) return rc;
    copy_own_block();
    const std::vector<bool> compress_to = compressed_destinations();
    decide_by_probe(compress_to);
    // Sends from rank+1 on, so that the first block compressed is the first one a peer waits
    // for, and compression of one block overlaps the transfer of the previous.
    size_t staged = 0;  // bytes of sstage_ taken
    for (int k = 1; k < size_; ++k) {
      const int dest = (rank_ + k) % size_;
      if (int rc = send_block(dest, compress_to[static_cast<size_t>(dest)], &staged);
          rc != MPI_SUCCESS)
        return rc;
    }
    return MPI_SUCCESS;
  }

  // Decompresses every block still to come, completes the sends, unpacks derived types.
  int finish() {
    int rc = progress(true);
    if (!sends_.empty()) {
      const int src =
          PMPI_Waitall(static_cast<int>(sends_.size()), sends_.data(), MPI_STATUSES_IGNORE);
      if (rc == MPI_SUCCESS) rc = src;
    }
    if (rc == MPI_SUCCESS && !recv_named_) {
      for (size_t p = 0; p < static_cast<size_t>(size_); ++p) {
        if (recv_values_[p] == 0) continue;
        int position = 0;
        const int urc = PMPI_Unpack(recv_at_[p], static_cast<int>(recv_values_[p] * es_), &position,
                                    static_cast<char*>(recvbuf_) + rdispls_[p] * rextent_,
                                    recvcounts_[p], recvtype_, comm_);
        if (urc != MPI_SUCCESS) {
          rc = urc;
          break;
        }
      }
    }
    count(kCompressRawBytes, raw_bytes_);
    count(kCompressWireBytes, wire_bytes_);
    count(kCompressCodecTime, codec_ns_);
    if (checked_) {
      CheckSummary& s = check_summary();
      const double psnr = sse_ == 0 ? std::numeric_limits<double>::infinity()
                          : hi_ > lo_
                              ? 20 * std::log10(hi_ - lo_) -
                                    10 * std::log10(sse_ / static_cast<double>(checked_count_))
                              : -std::numeric_limits<double>::infinity();
      std::lock_guard lock(s.mutex);
      s.max_abs = std::max(s.max_abs, max_abs_);
      s.min_psnr = std::min(s.min_psnr, psnr);
    }
    return rc;
  }

  int on_complete(MPI_Status* /*status*/) override { return finish(); }

  int error() const { return rc_; }

 private:
  struct Piece {
    enum class Kind : uint8_t {
      First,  // a block's first message: into place, sized for the whole block raw (into
              // staging where the block is too large for one message)
      Chunk,  // a later chunk, into staging
    };
    char* staged;  // where it is received (null: straight into `to`)
    char* to;      // where its values go
    size_t values;
    int block;  // index in blocks_ (First), else -1
    Kind kind;
  };
  struct Block {
    int source;
    size_t offset;  // of its chunks' slots in rstage_
    size_t values;
  };

  bool fail(int rc) {
    rc_ = rc;
    return false;
  }

  // A type's size and extent; false where the host cannot tell.
  static bool size_and_extent(MPI_Datatype type, int* size, MPI_Aint* extent) {
    MPI_Aint lb = 0;
    return PMPI_Type_size(type, size) == MPI_SUCCESS &&
           PMPI_Type_get_extent(type, &lb, extent) == MPI_SUCCESS;
  }

  // Values in each peer's block, `counts[p]` elements of `type_size` bytes; returns the total.
  size_t block_values(const int* counts, int type_size, std::vector<size_t>* values) const {
    const size_t per_element = static_cast<size_t>(type_size) / es_;
    values->resize(static_cast<size_t>(size_));
    size_t total = 0;
    for (size_t p = 0; p < values->size(); ++p) {
      (*values)[p] = static_cast<size_t>(std::max(counts[p], 0)) * per_element;
      total += (*values)[p];
    }
    return total;
  }

  // Where each peer's values arrive: in the user's buffer for MPI_FLOAT and MPI_DOUBLE, else
  // in rpacked_, unpacked by finish (a non-blocking call holds the type until then).
  bool describe_receives(void* recvbuf, const int* recvcounts, const int* rdispls,
                         MPI_Datatype recvtype, bool nonblocking) {
    recvbuf_ = recvbuf;
    recvtype_ = recvtype;
    recv_named_ = named(recvtype);
    int type_size = 0;
    if (!size_and_extent(recvtype, &type_size, &rextent_)) return fail(MPI_ERR_TYPE);
    const size_t total = block_values(recvcounts, type_size, &recv_values_);
    const auto n = static_cast<size_t>(size_);
    if (!recv_named_) {
      rpacked_ = transport::StagingBuffer(total * es_);
      recvcounts_.assign(recvcounts, recvcounts + n);
      rdispls_.assign(rdispls, rdispls + n);
      if (nonblocking && PMPI_Type_dup(recvtype, &held_recvtype_) == MPI_SUCCESS)
        recvtype_ = held_recvtype_;
    }
    recv_at_.resize(n);
    size_t offset = 0;
    for (size_t p = 0; p < n; ++p) {
      recv_at_[p] = recv_named_ ? static_cast<char*>(recvbuf) + rdispls[p] * rextent_
                                : rpacked_.data() + offset;
      offset += recv_values_[p] * es_;
    }
    return true;
  }

  // Where each peer's values are sent from: the user's buffer for MPI_FLOAT and MPI_DOUBLE,
  // else (or in place) a copy in spacked_, taken now.
  bool describe_sends(const void* sendbuf, const int* sendcounts, const int* sdispls,
                      MPI_Datatype sendtype) {
    int type_size = 0;
    MPI_Aint extent = 0;
    if (!size_and_extent(sendtype, &type_size, &extent)) return fail(MPI_ERR_TYPE);
    const size_t total = block_values(sendcounts, type_size, &send_values_);
    const bool copy = in_place_ || !named(sendtype);
    if (copy) spacked_ = transport::StagingBuffer(total * es_);
    send_at_.resize(static_cast<size_t>(size_));
    size_t offset = 0;
    for (size_t p = 0; p < send_at_.size(); ++p) {
      const char* user = static_cast<const char*>(sendbuf) + sdispls[p] * extent;
      if (!copy) {
        send_at_[p] = user;
        continue;
      }
      char* to = spacked_.data() + offset;
      send_at_[p] = to;
      const size_t bytes = send_values_[p] * es_;
      offset += bytes;
      if (in_place_ && recv_named_ && static_cast<int>(p) == rank_) continue;  // stays in place
      if (bytes && !stage_block(user, sendcounts[p], sendtype, to, bytes))
        return fail(MPI_ERR_TYPE);
    }
    return true;
  }

  // Copies one peer's block of `count` elements of `type` at `user` into `bytes` at `to`.
  bool stage_block(const char* user, int count, MPI_Datatype type, char* to, size_t bytes) const {
    if (named(type)) {
      std::memcpy(to, user, bytes);
      return true;
    }
    int position = 0;
    return PMPI_Pack(user, count, type, to, static_cast<int>(bytes), &position, comm_) ==
           MPI_SUCCESS;
  }

  // Staging for a block of `values` values sent or received chunk by chunk, each chunk's slot
  // large enough for its compressed or raw bytes.
  size_t chunked_capacity(size_t values) const {
    size_t bytes = 0;
    for (size_t first = 0; first < values; first += chunk_)
      bytes += capacity(std::min(chunk_, values - first));
    return bytes;
  }

  // Receives, in the order the peers send to this rank (peer rank-k sends here at step k).
  // Only each block's first message is posted now, straight into place and sized for the whole
  // block raw: it is either that (the sender's first chunk did not compress) or the compressed
  // first chunk, after which the rest comes chunk by chunk (post_rest). A block too large for
  // one message comes chunk by chunk, the first into staging.
  int post_first_receives() {
    size_t staged = 0;
    for (int k = 1; k < size_; ++k) {
      const int source = (rank_ - k + size_) % size_;
      const size_t values = recv_values_[static_cast<size_t>(source)];
      if (values == 0) continue;
      blocks_.push_back({source, staged, values});
      staged += chunked_capacity(values);
    }
    rstage_ = transport::StagingBuffer(staged);
    for (size_t b = 0; b < blocks_.size(); ++b) {
      const Block& block = blocks_[b];
      const size_t first_values = std::min(chunk_, block.values);
      char* to = recv_at_[static_cast<size_t>(block.source)];
      const bool whole = fits(block.values);
      if (int rc = post(whole ? nullptr : rstage_.data() + block.offset,
                        whole ? block.values * es_ : capacity(first_values), block.source,
                        {nullptr, to, first_values, static_cast<int>(b), Piece::Kind::First});
          rc != MPI_SUCCESS)
        return rc;
    }
    return MPI_SUCCESS;
  }

  // The own block, copied exactly.
  void copy_own_block() {
    const auto me = static_cast<size_t>(rank_);
    const size_t own = std::min(send_values_[me], recv_values_[me]) * es_;
    if (own && !(in_place_ && recv_named_)) std::memmove(recv_at_[me], send_at_[me], own);
  }

  // The peers whose blocks this call compresses (those on other nodes), with staging in
  // sstage_ for their compressed chunks.
  std::vector<bool> compressed_destinations() {
    std::vector<bool> compress_to(static_cast<size_t>(size_), false);
    size_t staged = 0;
    for (int k = 1; k < size_; ++k) {
      const int dest = (rank_ + k) % size_;
      const size_t values = send_values_[static_cast<size_t>(dest)];
      if (values == 0 || mpi::locality(comm_, dest) != model::Locality::OtherNode) continue;
      compress_to[static_cast<size_t>(dest)] = true;
      staged += chunked_capacity(values);
    }
    sstage_ = transport::StagingBuffer(staged);
    return compress_to;
  }

  // Before any chunk, the call's data decides: a probe of its first compressed block predicts
  // the ratio, and where compressed sends would not beat raw ones every block of the call goes
  // raw (random bits pay one small compression per call, not one chunk's).
  void decide_by_probe(const std::vector<bool>& compress_to) {
    for (int k = 1; k < size_; ++k) {
      const auto dest = static_cast<size_t>((rank_ + k) % size_);
      if (!compress_to[dest]) continue;
      given_up_ = !probe_pays(send_at_[dest], send_values_[dest]);
      return;
    }
  }

  // Sends the block for `dest` chunk by chunk, compressed where `compress` (and the call has not
  // given up), raw otherwise; `*staged`: the bytes of sstage_ taken so far.
  int send_block(int dest, bool compress, size_t* staged) {
    const size_t values = send_values_[static_cast<size_t>(dest)];
    const char* from = send_at_[static_cast<size_t>(dest)];
    for (size_t first = 0; first < values;) {
      size_t chunk_values = std::min(chunk_, values - first);
      const char* in = from + first * es_;
      const void* wire = in;
      size_t bytes = chunk_values * es_;
      if (compress && !given_up_)
        if (int rc = compress_into_stage(in, chunk_values, staged, &wire, &bytes);
            rc != MPI_SUCCESS)
          return rc;
      // A raw first chunk: the whole block goes raw in one message, into place (as the host's
      // exchange sends it; the receiver tells it by its size).
      if (first == 0 && bytes == chunk_values * es_ && fits(values))
        bytes = (chunk_values = values) * es_;
      if (int rc = wait_for_window(); rc != MPI_SUCCESS) return rc;
      MPI_Request request;
      const int rc = PMPI_Isend(wire, static_cast<int>(bytes), MPI_BYTE, dest, 0, pcomm_, &request);
      if (rc != MPI_SUCCESS) return rc;
      sends_.push_back(request);
      raw_bytes_ += chunk_values * es_;
      wire_bytes_ += bytes;
      first += chunk_values;
      if (int prc = progress(false); prc != MPI_SUCCESS) return prc;
    }
    return MPI_SUCCESS;
  }

  // Compresses `values` values at `in` into the next slot of sstage_ (`*staged` bytes taken).
  // Where they compress, `*wire` and `*bytes` become the compressed chunk; the call's first
  // chunk decides whether the call's data compresses at all.
  int compress_into_stage(const char* in, size_t values, size_t* staged, const void** wire,
                          size_t* bytes) {
    char* out = sstage_.data() + *staged;
    const size_t cap = capacity(values);
    *staged += cap;
    bool raw = true;
    const auto t0 = Clock::now();
    const size_t compressed = codec::compress_chunk(*codec_, in, values, element_, out, cap, &raw);
    charge(true, values * es_, nanoseconds_since(t0));
    if (compressed == 0) return MPI_ERR_INTERN;
    if (!tried_) {
      tried_ = true;
      if (raw || static_cast<double>(compressed) > 0.95 * static_cast<double>(values * es_))
        given_up_ = raw = true;
    }
    if (raw) return MPI_SUCCESS;
    *wire = out;
    *bytes = compressed;
    if (check_enabled()) check(in, out, compressed, values);
    return MPI_SUCCESS;
  }

  // At most send_window() messages in flight: a long queue of this rank's sends delays the
  // transport's handshakes for the peers' messages behind it (docs/compress.md). The oldest
  // send is polled, not waited for: its receive may be one the peer posts only when our first
  // chunk to it is decoded (post_rest), and the peer may be here too, waiting for ours;
  // PMPI_Wait would deadlock both.
  int wait_for_window() {
    while (sends_.size() - sends_done_ >= send_window()) {
      if (int rc = progress(false); rc != MPI_SUCCESS) return rc;
      int done = 0;
      const int rc = PMPI_Test(&sends_[sends_done_], &done, MPI_STATUS_IGNORE);
      if (rc != MPI_SUCCESS) return rc;
      if (done) ++sends_done_;
    }
    return MPI_SUCCESS;
  }

  size_t capacity(size_t values) const {
    return std::max(values * es_, codec_->max_compressed_bytes(values, element_));
  }

  // Posts a receive of `cap` bytes from `source` into `staged` (null: straight into
  // piece.to).
  int post(char* staged, size_t cap, int source, Piece piece) {
    piece.staged = staged;
    MPI_Request request;
    const int rc = PMPI_Irecv(staged ? staged : piece.to, static_cast<int>(cap), MPI_BYTE, source,
                              0, pcomm_, &request);
    if (rc != MPI_SUCCESS) return rc;
    recvs_.push_back(request);
    pieces_.push_back(piece);
    ++remaining_;
    return MPI_SUCCESS;
  }

  // Whether `values` fit in one message.
  bool fits(size_t values) const { return values * es_ <= INT_MAX; }

  // Whether compressing pays for data like the first kProbeBytes at `from`: the pipelined
  // call costs max(CPU, wire / ratio) per byte against the raw wire's time per byte
  // (docs/compress.md, "The threshold"), with a 5% margin; the probe's own speed updates
  // the CPU cost.
  bool probe_pays(const char* from, size_t values) {
    constexpr size_t kProbeBytes = 16 << 10;
    const size_t quantum = codec_->chunk_quantum();
    const size_t m = std::min(values, std::max<size_t>(kProbeBytes / es_ / quantum, 1) * quantum);
    probe_ = transport::StagingBuffer(capacity(m));
    bool raw = true;
    const auto t0 = Clock::now();
    const size_t bytes =
        codec::compress_chunk(*codec_, from, m, element_, probe_.data(), probe_.size(), &raw);
    const uint64_t ns = nanoseconds_since(t0);
    charge(true, m * es_, ns);
    if (bytes == 0 || raw) return false;
    const CodecCost cost = codec_cost(
        *codec_, element_, static_cast<double>(ns) * 1e-9 / static_cast<double>(m * es_));
    const double ratio = static_cast<double>(m * es_) / static_cast<double>(bytes);
    const double compressed =
        std::max(cost.cpu_seconds_per_byte, cost.link_seconds_per_byte / ratio);
    return compressed < 0.95 * cost.link_seconds_per_byte;
  }

  // After a block's first chunk arrived compressed (or, for a block too large for one
  // message, at all): chunks 1.., each into its staging slot.
  int post_rest(const Block& block) {
    const size_t m0 = std::min(chunk_, block.values);
    char* to = recv_at_[static_cast<size_t>(block.source)];
    size_t first = m0, offset = block.offset + capacity(m0);
    for (; first < block.values; first += chunk_) {
      const size_t m = std::min(chunk_, block.values - first);
      if (int rc = post(rstage_.data() + offset, capacity(m), block.source,
                        {nullptr, to + first * es_, m, -1, Piece::Kind::Chunk});
          rc != MPI_SUCCESS)
        return rc;
      offset += capacity(m);
    }
    return MPI_SUCCESS;
  }

  // Decompresses the chunks that arrived (all of them when `all`).
  int progress(bool all) {
    while (remaining_ > 0) {
      int outcount = 0;
      const int n = static_cast<int>(recvs_.size());
      indices_.resize(recvs_.size());
      statuses_.resize(recvs_.size());
      const int rc =
          all ? PMPI_Waitsome(n, recvs_.data(), &outcount, indices_.data(), statuses_.data())
              : PMPI_Testsome(n, recvs_.data(), &outcount, indices_.data(), statuses_.data());
      if (rc != MPI_SUCCESS) return rc;
      if (outcount == MPI_UNDEFINED) break;
      // Copied: handling a first chunk posts more pieces.
      const std::vector<int> done(indices_.begin(), indices_.begin() + outcount);
      const std::vector<MPI_Status> done_status(statuses_.begin(), statuses_.begin() + outcount);
      for (int i = 0; i < outcount; ++i) {
        --remaining_;
        const Piece piece = pieces_[static_cast<size_t>(done[static_cast<size_t>(i)])];
        int bytes = 0;
        PMPI_Get_count(&done_status[static_cast<size_t>(i)], MPI_BYTE, &bytes);
        if (int prc = take_piece(piece, static_cast<size_t>(bytes)); prc != MPI_SUCCESS) return prc;
      }
      if (!all && outcount == 0) break;
    }
    return MPI_SUCCESS;
  }

  // A piece that arrived with `bytes`: its values decoded (or copied, where they came raw) into
  // place; after a block's first piece, the rest of the block is posted.
  int take_piece(const Piece& piece, size_t bytes) {
    const size_t raw = piece.values * es_;
    const char* in = piece.staged;
    if (piece.kind == Piece::Kind::First && !in) {
      // Received in place: the whole block raw, or the compressed first chunk, which lies
      // where its values go and is moved aside (to its staging slot) to be decoded.
      const Block& block = blocks_[static_cast<size_t>(piece.block)];
      if (bytes == block.values * es_) return MPI_SUCCESS;
      char* aside = rstage_.data() + block.offset;
      std::memcpy(aside, piece.to, bytes);
      in = aside;
    }
    if (bytes == raw) {
      std::memcpy(piece.to, in, raw);
    } else {
      const auto t0 = Clock::now();
      const bool ok = codec_->decompress(in, bytes, piece.values, element_, piece.to);
      charge(false, raw, nanoseconds_since(t0));
      if (!ok) return MPI_ERR_INTERN;
    }
    // After the first chunk the sender sends the rest chunk by chunk.
    if (piece.kind == Piece::Kind::First)
      return post_rest(blocks_[static_cast<size_t>(piece.block)]);
    return MPI_SUCCESS;
  }

  // Codec time: counted, and under SMPI charged to the simulated rank (mpi/sim_clock.hpp).
  void charge(bool compress, size_t raw_bytes, uint64_t ns) {
    codec_ns_ += ns;
    mpi::sim::charge_codec(compress, static_cast<int64_t>(raw_bytes),
                           static_cast<double>(ns) * 1e-9);
  }

  // LOOM_COMPRESS_CHECK: the sender decodes its own chunk, as the receiver will.
  void check(const char* original, const char* compressed, size_t bytes, size_t m) {
    std::vector<char> decoded(m * es_);
    const auto t0 = Clock::now();
    if (!codec_->decompress(compressed, bytes, m, element_, decoded.data())) return;
    codec_ns_ += nanoseconds_since(t0);
    const codec::ErrorStats e = codec::compare(original, decoded.data(), m, element_);
    max_abs_ = std::max(max_abs_, e.max_abs_error);
    sse_ += e.rmse * e.rmse * static_cast<double>(m);
    checked_count_ += m;
    checked_ = true;
    for (size_t i = 0; i < m; ++i) {
      const double v = element_ == codec::Element::Float32
                           ? static_cast<double>(reinterpret_cast<const float*>(original)[i])
                           : reinterpret_cast<const double*>(original)[i];
      if (!std::isfinite(v)) continue;
      lo_ = std::min(lo_, v);
      hi_ = std::max(hi_, v);
    }
  }

  std::shared_ptr<const codec::Codec> codec_;
  codec::Element element_;
  size_t es_;
  size_t chunk_ = 1;
  MPI_Comm comm_, pcomm_;
  int rank_, size_;
  int rc_ = MPI_SUCCESS;
  void* recvbuf_ = nullptr;
  MPI_Datatype recvtype_ = MPI_DATATYPE_NULL, held_recvtype_ = MPI_DATATYPE_NULL;
  MPI_Aint rextent_ = 0;
  bool recv_named_ = true, in_place_ = false;
  std::vector<int> recvcounts_, rdispls_;
  std::vector<size_t> recv_values_, send_values_;
  std::vector<char*> recv_at_;
  std::vector<const char*> send_at_;
  // Pooled (transport/staging.hpp): a fresh buffer per call costs its page faults and zeroing
  // before the first message goes out (docs/compress.md).
  transport::StagingBuffer rpacked_, spacked_, rstage_, sstage_, probe_;
  std::vector<MPI_Request> recvs_, sends_;
  size_t sends_done_ = 0;  // sends_[0, sends_done_) completed in order by the window
  std::vector<Piece> pieces_;
  std::vector<Block> blocks_;
  std::vector<int> indices_;
  std::vector<MPI_Status> statuses_;
  size_t remaining_ = 0;
  bool tried_ = false, given_up_ = false;
  uint64_t raw_bytes_ = 0, wire_bytes_ = 0, codec_ns_ = 0;
  bool checked_ = false;
  double max_abs_ = 0, sse_ = 0, lo_ = std::numeric_limits<double>::infinity(),
         hi_ = -std::numeric_limits<double>::infinity();
  size_t checked_count_ = 0;
};

// A generalized request, complete from the start: the user's handle for a non-blocking
// compressed exchange, whose completion (in Loom's Wait/Test) finishes the exchange.
int query_done(void* /*extra*/, MPI_Status* status) {
  PMPI_Status_set_elements(status, MPI_BYTE, 0);
  PMPI_Status_set_cancelled(status, 0);
  status->MPI_SOURCE = MPI_UNDEFINED;
  status->MPI_TAG = MPI_UNDEFINED;
  return MPI_SUCCESS;
}
int free_done(void* /*extra*/) {
  return MPI_SUCCESS;
}
int cancel_done(void* /*extra*/, int /*complete*/) {
  return MPI_SUCCESS;
}

// Every rank decides alike: the codec, the signature's kind and the node layout are the same
// on every rank of a correct program. The kind (1 float, 2 double), or 0 where the call goes
// to the host (counted).
int compressible_kind(const void* sendbuf, MPI_Datatype sendtype, MPI_Datatype recvtype,
                      MPI_Comm comm, int size) {
  const int kind = signature_kind(recvtype, 0);
  if (kind == 0 || (sendbuf != MPI_IN_PLACE && signature_kind(sendtype, 0) != kind)) {
    count(kCompressHostType);
    return 0;
  }
  for (int p = 0; p < size; ++p)
    if (mpi::locality(comm, p) == model::Locality::OtherNode) return kind;
  count(kCompressHostThreshold);
  return 0;
}

}  // namespace

bool compressed_alltoallv(const void* sendbuf, const int* sendcounts, const int* sdispls,
                          MPI_Datatype sendtype, void* recvbuf, const int* recvcounts,
                          const int* rdispls, MPI_Datatype recvtype, MPI_Comm comm,
                          MPI_Request* request, int* rc) {
  if (runtime::config().disabled || comm == MPI_COMM_NULL) return false;
  std::shared_ptr<const codec::Codec> codec = codec_for(comm);
  if (!codec) return false;
  int inter = 0, rank = 0, size = 0;
  if (PMPI_Comm_test_inter(comm, &inter) != MPI_SUCCESS || inter ||
      PMPI_Comm_rank(comm, &rank) != MPI_SUCCESS || PMPI_Comm_size(comm, &size) != MPI_SUCCESS)
    return false;
  // Null buffers are fine where counts are zero; null count arrays are the host's error.
  if (!recvcounts || !rdispls || (sendbuf != MPI_IN_PLACE && (!sendcounts || !sdispls)))
    return false;
  const int kind = compressible_kind(sendbuf, sendtype, recvtype, comm, size);
  if (kind == 0) return false;
  const codec::Element element = kind == 1 ? codec::Element::Float32 : codec::Element::Float64;
  MPI_Comm pcomm = MPI_COMM_NULL;
  bool pays = false;
  if (!prepare_comm(comm, *codec, element, &pcomm, &pays)) {
    *rc = MPI_ERR_INTERN;
    return true;
  }
  if (!pays) {  // the codec is slower than the link on some rank: the host's exchange
    count(kCompressHostThreshold);
    return false;
  }
  auto ex =
      std::make_unique<CompressedExchange>(std::move(codec), element, comm, pcomm, rank, size);
  if (!ex->describe(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls, recvtype,
                    request != nullptr)) {
    *rc = ex->error();
    return true;
  }
  *rc = ex->start();
  if (!request) {
    const int frc = ex->finish();
    if (*rc == MPI_SUCCESS) *rc = frc;
    return true;
  }
  if (*rc != MPI_SUCCESS) return true;
  *rc = PMPI_Grequest_start(query_done, free_done, cancel_done, nullptr, request);
  if (*rc != MPI_SUCCESS) return true;
  PMPI_Grequest_complete(*request);
  mpi::track_request(*request, std::move(ex));
  return true;
}

bool compressed_alltoall(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                         int recvcount, MPI_Datatype recvtype, MPI_Comm comm, MPI_Request* request,
                         int* rc) {
  if (runtime::config().disabled || comm == MPI_COMM_NULL || !codec_for(comm)) return false;
  int size = 0, inter = 0;
  if (PMPI_Comm_test_inter(comm, &inter) != MPI_SUCCESS || inter ||
      PMPI_Comm_size(comm, &size) != MPI_SUCCESS)
    return false;
  // Before building the count arrays: a same-node call costs no more than the checks.
  if (compressible_kind(sendbuf, sendtype, recvtype, comm, size) == 0) return false;
  const auto n = static_cast<size_t>(size);
  std::vector<int> rcounts(n, recvcount), rdispls(n), scounts(n, sendcount), sdispls(n);
  for (size_t p = 0; p < n; ++p) {
    rdispls[p] = static_cast<int>(p) * recvcount;
    sdispls[p] = static_cast<int>(p) * sendcount;
  }
  const bool in_place = sendbuf == MPI_IN_PLACE;
  return compressed_alltoallv(sendbuf, in_place ? nullptr : scounts.data(),
                              in_place ? nullptr : sdispls.data(), sendtype, recvbuf,
                              rcounts.data(), rdispls.data(), recvtype, comm, request, rc);
}

bool compress_check_enabled() {
  return check_enabled();
}

void compress_check_summary(double* max_abs_error, double* min_psnr_db) {
  CheckSummary& s = check_summary();
  std::lock_guard lock(s.mutex);
  *max_abs_error = s.max_abs;
  *min_psnr_db = s.min_psnr;
}

namespace {
std::string compress_tail() {
  const uint64_t raw = runtime::total(kCompressRawBytes), wire = runtime::total(kCompressWireBytes);
  char text[96];
  std::snprintf(text, sizeof text, "ratio=%.3f",
                wire ? static_cast<double>(raw) / static_cast<double>(wire) : 1.0);
  std::string tail = text;
  if (check_enabled()) {
    double max_abs = 0, min_psnr = 0;
    compress_check_summary(&max_abs, &min_psnr);
    std::snprintf(text, sizeof text, " | check max_abs=%.6g psnr_min=%.2fdB", max_abs, min_psnr);
    tail += text;
  }
  return tail;
}
}  // namespace

}  // namespace loom::ops
