/* Loom public C API: runtime queries for tools, tests and curious applications.
 * Applications never need this header; Loom works on unmodified MPI programs. */
#ifndef LOOM_LOOM_H
#define LOOM_LOOM_H

#include <mpi.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Counters for this process, summed over all threads. */
typedef struct loom_stats {
  uint64_t pack_calls_loom; /* MPI_Pack served by Loom's engine */
  uint64_t pack_calls_host; /* MPI_Pack forwarded to the host MPI */
  uint64_t unpack_calls_loom;
  uint64_t unpack_calls_host;
  uint64_t pack_bytes_loom; /* packed bytes produced by Loom */
  uint64_t unpack_bytes_loom;
  uint64_t types_committed;   /* MPI_Type_commit calls seen */
  uint64_t types_accelerated; /* ... of which Loom built a plan for (docs/commit.md: once the
                                 type's host time paid for it, or at first use with
                                 LOOM_PLAN=eager) */
  double pack_seconds;        /* time inside Loom pack kernels (LOOM_STATS=1 only) */
  double unpack_seconds;
  /* Point-to-point calls. Every call is counted on one route; besides these fields, by name
   * (loom_get_counter): "p2p.send.plain" (nothing to pack: a basic or contiguous type, an empty
   * message, MPI_PROC_NULL) and "p2p.send.host_(not_planned_yet)" (a committed type Loom has not
   * planned yet, served by the host as written), and the same for "p2p.recv". */
  uint64_t send_packed;       /* sends Loom packed and sent as MPI_PACKED */
  uint64_t send_host;         /* sends of a derived type left to the host's datatype engine */
  uint64_t send_packed_bytes; /* packed bytes of those sends */
  uint64_t recv_unpacked;     /* receives staged as MPI_PACKED and unpacked by Loom */
  uint64_t recv_host;
  uint64_t recv_unpacked_bytes;
  /* Collectives on this rank ("collectives.plain" and "collectives.host_(not_planned_yet)" by
   * name, as for point-to-point). */
  uint64_t collective_packed; /* Loom packed or unpacked this rank's data */
  uint64_t collective_host;   /* left to the host with the user's derived datatypes */
  uint64_t collective_packed_bytes;
  /* Blocking neighbourhood all-to-alls moved through Loom's same-node shared-memory window
   * (any datatypes; the rest of the collectives run on the host, on bytes or as written). */
  uint64_t collective_shared;
  /* Kinds of blocking point-to-point message (datatype, send or receive, locality, size)
   * whose first messages tried both methods (LOOM_ONLINE, docs/model.md): the method model's
   * choice was kept, or the other method was consistently faster and replaced it. */
  uint64_t trials_kept;
  uint64_t trials_switched;
  /* Messages this process sent to itself that Loom delivered (LOOM_SELF, docs/p2p.md), their
   * bytes, and communicators whose messages to oneself went back to the host (a wildcard
   * source, a matched probe, or a synchronous, buffered or persistent operation with oneself). */
  uint64_t self_delivered;
  uint64_t self_delivered_bytes;
  uint64_t self_demoted;
  /* Device-memory buffers (LOOM_DEVICE, docs/gpu.md) Loom packed, unpacked or copied through its
   * device executor so that the host MPI saw only host memory, and their bytes. */
  uint64_t device_staged;
  uint64_t device_staged_bytes;
  /* Compressed all-to-alls (LOOM_COMPRESS, the loom_compress info key, docs/compress.md): calls
   * through Loom's compressed exchange; calls with compression requested left to the host
   * because every peer shares this node (the threshold) or the data is not MPI_FLOAT or
   * MPI_DOUBLE; codec specs refused; raw bytes of the blocks sent to other ranks and the bytes
   * that went on the wire for them; seconds spent compressing and decompressing. With
   * LOOM_COMPRESS_CHECK=1, the largest absolute error and the lowest PSNR (dB) of the values
   * this process compressed, as their receivers decoded them (0 and +Inf when none). */
  uint64_t compress_calls;
  uint64_t compress_host_threshold;
  uint64_t compress_host_type;
  uint64_t compress_bad_spec;
  uint64_t compress_raw_bytes;
  uint64_t compress_wire_bytes;
  double compress_seconds;
  double compress_max_abs_error;
  double compress_min_psnr_db;
  /* What the online trials cost (LOOM_ONLINE, docs/model.md): the time their messages took
   * beyond what their verdict's method would have taken, estimated from their samples, and the
   * kinds that reached their trial's wait (a kind too young for its trial to pay is not tried). */
  double trials_cost_seconds;
  uint64_t trials_started;
} loom_stats;

/* 1 when the interposer is loaded and not disabled by LOOM_DISABLE=1. */
int loom_is_active(void);
/* 1 when MPI_Pack/MPI_Unpack on this datatype run in Loom's engine, 0 when they go to the host.
 * A committed type Loom has not planned yet is planned by this query (as by loom_type_describe
 * and loom_method_for). */
int loom_type_is_accelerated(MPI_Datatype type);
/* Writes a one-line description of Loom's plan for the type into buf (always NUL-terminated).
 * Returns the length the full description needs. */
int loom_type_describe(MPI_Datatype type, char* buf, int buflen);
void loom_get_stats(loom_stats* out);
/* Any counter Loom registered, by the name its LOOM_STATS line shows: "area.group.key" (or
 * "area.key"), spaces written '_', e.g. "p2p.send.packed", "p2p.online_trials.kept",
 * "pack.kernel_time.pack" (nanoseconds). Returns 1 and sets *value (summed over threads), or 0
 * when no counter has that name. */
int loom_get_counter(const char* name, uint64_t* value);

/* How a blocking point-to-point message (MPI_Send, MPI_Recv: one-way traffic in
 * docs/model.md) of `count` elements of `type` would be sent to a peer on this
 * node (peer_same_node != 0) or another node: LOOM_METHOD_PACK (packed by Loom, sent as
 * MPI_PACKED) or LOOM_METHOD_HOST (the host's datatype engine). Honours LOOM_METHOD; in auto
 * mode asks the calibrated model (docs/model.md). Types without a Loom plan, contiguous types
 * and empty messages: LOOM_METHOD_HOST. Online trials (LOOM_ONLINE) may settle a kind of
 * blocking message on the other method; this returns the model's choice. */
#define LOOM_METHOD_HOST 0
#define LOOM_METHOD_PACK 1
int loom_method_for(MPI_Datatype type, int count, int peer_same_node);

/* The emulated device, for testing device-buffer paths on machines without a GPU
 * (LOOM_DEVICE=emulated, docs/gpu.md): memory that nothing but Loom's device executor may touch
 * (any other access faults, as a GPU pointer would in a host MPI that is not CUDA-aware).
 * loom_emulated_device_copy copies between it and host memory, either way; returns 0. */
void* loom_emulated_device_alloc(size_t bytes);
void loom_emulated_device_free(void* p);
int loom_emulated_device_copy(void* dst, const void* src, size_t bytes);

#ifdef __cplusplus
}
#endif

#endif /* LOOM_LOOM_H */
