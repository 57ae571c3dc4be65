// The codec slot: which codec (if any) compresses Loom's all-to-alls on each communicator.
// LOOM_COMPRESS (codec spec syntax, docs/codec.md) is the default for every communicator;
// MPI_Comm_set_info with key `loom_compress` overrides it per communicator (`none` or `off`
// turns compression off there). A bad value is reported once (LOOM_COMPRESS: on stderr at
// MPI_Init; the info key: MPI_ERR_INFO_VALUE through the communicator's error handler) and
// that scope stays uncompressed. Also: the private communicator the compressed exchange runs
// on, and the codec throughput measured once per process, spec and element. docs/compress.md.
#pragma once

#include <mpi.h>

#include <atomic>
#include <memory>

#include "codec/codec.hpp"
#include "runtime/counters.hpp"

namespace loom::ops {

// All-to-alls through the compressed exchange; those with compression requested left to the
// host because no peer is on another node or compression does not pay (threshold), or the data
// is not MPI_FLOAT/MPI_DOUBLE (type); raw bytes of the blocks for other ranks and the bytes that
// went on the wire for them; time compressing and decompressing; codec specs refused
// (LOOM_COMPRESS, the loom_compress info key).
inline const runtime::Counter kCompressCalls = runtime::register_counter("compress", "", "calls");
inline const runtime::Counter kCompressHostThreshold =
    runtime::register_counter("compress", "host", "threshold");
inline const runtime::Counter kCompressHostType =
    runtime::register_counter("compress", "host", "type");
inline const runtime::Counter kCompressRawBytes =
    runtime::register_counter("compress", "bytes", "raw");
inline const runtime::Counter kCompressWireBytes =
    runtime::register_counter("compress", "bytes", "wire");
inline const runtime::Counter kCompressCodecTime =
    runtime::register_counter("compress", "codec", "time", runtime::Unit::Nanoseconds);
inline const runtime::Counter kCompressSpecRefused =
    runtime::register_counter("compress", "spec", "refused");

// Whether any codec was ever requested (LOOM_COMPRESS or a loom_compress hint): until one is,
// an all-to-all may pass through without asking codec_for.
extern std::atomic<bool> any_codec;
inline bool compression_requested() {
  return any_codec.load(std::memory_order_relaxed);
}

// Reads LOOM_COMPRESS and LOOM_LINK_MBPS; called from MPI_Init (errors are printed there).
void init_codec_slot();

// The codec for all-to-alls on `comm`, or null when none is requested. The reference is this
// thread's and valid until its next call: copy it to keep it.
const std::shared_ptr<const codec::Codec>& codec_for(MPI_Comm comm);

// MPI_Comm_set_info: records the `loom_compress` hint of `info`, if any. Returns
// MPI_ERR_INFO_VALUE (after calling the communicator's error handler) for a bad value.
int note_comm_info(MPI_Comm comm, MPI_Info info);

// What the compressed exchange needs on `comm` with `codec`: a duplicate of `comm` private to
// it, and whether compression pays for `element` on every rank (compression_pays, agreed by
// all ranks, so that every rank takes the same path). Collective the first time for a
// communicator and codec (every rank of `comm` calls it in the same all-to-all). False on
// failure.
bool prepare_comm(MPI_Comm comm, const codec::Codec& codec, codec::Element element,
                  MPI_Comm* private_comm, bool* pays);

// At MPI_Comm_free / MPI_Comm_disconnect: forgets the hint and frees the private duplicate.
void forget_codec_slot(MPI_Comm comm);

// Whether compressing a block for a peer on another node pays: the CPU time per byte of
// compressing and decompressing (measured once per process, spec and element on a smooth
// sample) is below the link's time per byte (LOOM_LINK_MBPS, default 1000 Mbit/s).
bool compression_pays(const codec::Codec& codec, codec::Element element);

// This process's cost of `codec` on `element`: CPU seconds per byte compressed plus
// decompressed, and the link's seconds per byte. compression_pays measures the first on first
// use; each `compress_seconds_per_byte` > 0 given (a call's probe) updates it, so that the
// per-call decision follows the machine's load.
struct CodecCost {
  double cpu_seconds_per_byte = 0;
  double link_seconds_per_byte = 0;
};
CodecCost codec_cost(const codec::Codec& codec, codec::Element element,
                     double compress_seconds_per_byte = 0);

}  // namespace loom::ops
