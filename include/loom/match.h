/* Loom match: an MPI message-matching engine with selectable backends.
 *
 * An engine holds the two queues every MPI implementation searches:
 *   - the posted-receive queue (PRQ), searched when a message arrives;
 *   - the unexpected-message queue (UMQ), searched when a receive is posted.
 * One engine may serve any number of communicators: the context id is part of every key
 * and entries of different contexts never match each other. Embedders usually create one
 * engine per process (like MPICH's global queues) or one per communicator.
 *
 * Semantics are MPI's: wildcards only on receives, FIFO non-overtaking in both directions
 * (an arrival takes the earliest posted matching receive, a post takes the earliest
 * arrived matching message), contexts never cross, negative (internal) tags are never
 * matched by LOOM_MATCH_ANY_TAG. Pure C interface, no MPI dependency. See docs/match.md.
 */
#ifndef LOOM_MATCH_H
#define LOOM_MATCH_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Wildcards, valid for receives (post, probe, matched-probe) only. Message sources must be
 * >= 0; any int32 tag other than LOOM_MATCH_ANY_TAG is a valid tag. */
#define LOOM_MATCH_ANY_SOURCE (-1)
#define LOOM_MATCH_ANY_TAG INT32_MIN

/* Return codes. Operations that search return MATCHED or QUEUED (NOT_FOUND for probes). */
#define LOOM_MATCH_QUEUED 0       /* no partner: the entry was appended to its queue */
#define LOOM_MATCH_NOT_FOUND 0    /* probe/cancel: nothing matched, nothing changed */
#define LOOM_MATCH_MATCHED 1      /* a partner was found and (except for probe) removed */
#define LOOM_MATCH_ERR_ARG (-1)   /* invalid argument (negative source on arrival, ...) */
#define LOOM_MATCH_ERR_NOMEM (-2) /* allocation failed; the queues are unchanged */

typedef enum loom_match_backend {
  LOOM_MATCH_BACKEND_DEFAULT = 0, /* $LOOM_MATCH_BACKEND if set, else adaptive */
  LOOM_MATCH_BACKEND_LIST,        /* one doubly linked list per queue (MPICH CH3) */
  LOOM_MATCH_BACKEND_PERPEER,     /* per-source lists + ANY_SOURCE list by sequence (ob1) */
  LOOM_MATCH_BACKEND_LLA,         /* linked list of cache-line arrays of compact entries */
  LOOM_MATCH_BACKEND_SIMD,        /* structure-of-arrays nodes, AVX-512/AVX2/scalar search */
  LOOM_MATCH_BACKEND_FUZZY8,      /* 8-bit hashed prefilter keys, then exact check */
  LOOM_MATCH_BACKEND_FUZZY16,     /* 16-bit keys */
  LOOM_MATCH_BACKEND_FUZZY32,     /* 32-bit keys */
  LOOM_MATCH_BACKEND_HASH,        /* bins keyed by (source, tag, context) + wildcard bins */
  LOOM_MATCH_BACKEND_ADAPTIVE,    /* simd when short or wildcard-searched, hash when deep */
  LOOM_MATCH_BACKEND_COUNT
} loom_match_backend;

/* Vector instruction set for the simd and fuzzy backends. AUTO picks the best the CPU
 * supports ($LOOM_MATCH_ISA=scalar|avx2|avx512 overrides); a forced ISA the CPU lacks
 * falls back to the best available one. */
typedef enum loom_match_isa {
  LOOM_MATCH_ISA_AUTO = 0,
  LOOM_MATCH_ISA_SCALAR,
  LOOM_MATCH_ISA_AVX2,
  LOOM_MATCH_ISA_AVX512 /* AVX-512F + BW */
} loom_match_isa;

typedef enum loom_match_threading {
  LOOM_MATCH_THREAD_NONE = 0,    /* caller serializes all calls (MPI_THREAD_SERIALIZED) */
  LOOM_MATCH_THREAD_GLOBAL_LOCK, /* one lock around every call (MPICH's ML), the baseline */
  LOOM_MATCH_THREAD_TAIL_QUEUES  /* per-queue locks + inbox tails under a tail lock: one
                                    posting and one arriving thread run concurrently */
} loom_match_threading;

typedef struct loom_match_config {
  loom_match_backend backend;
  loom_match_threading threading;
  loom_match_isa isa;
  /* Hot caching: a helper thread that re-reads queue memory every hot_cache_period_ns
   * (0 = 20000) so it stays in cache. Off (0) by default; forces internal locking. */
  int hot_cache;
  uint64_t hot_cache_period_ns;
  /* Optional allocator for all engine memory (NULL = aligned_alloc). It must return memory
   * aligned to 16 bytes and be thread-safe when threading != NONE or hot_cache is on.
   * Returning NULL makes the operation fail with LOOM_MATCH_ERR_NOMEM, queues unchanged. */
  void* (*alloc)(size_t size, void* arg);
  void (*free)(void* ptr, size_t size, void* arg);
  void* alloc_arg;
} loom_match_config;

typedef struct loom_match_engine loom_match_engine;

/* A queue entry as handed back: the concrete (message) or posted (receive) envelope. */
typedef struct loom_match_envelope {
  int32_t source; /* LOOM_MATCH_ANY_SOURCE possible for receives */
  int32_t tag;    /* LOOM_MATCH_ANY_TAG possible for receives */
  uint32_t context;
  void* user; /* the pointer given when the entry was queued */
} loom_match_envelope;

/* Fills *config with defaults (backend DEFAULT, no threading, ISA AUTO, no hot caching). */
void loom_match_config_init(loom_match_config* config);
/* Creates an engine; config may be NULL for defaults. Returns NULL on allocation failure. */
loom_match_engine* loom_match_create(const loom_match_config* config);
/* Destroys the engine; entries still queued are dropped (their user pointers untouched). */
void loom_match_destroy(loom_match_engine* engine);

/* Post a receive. source may be ANY_SOURCE, tag may be ANY_TAG. On MATCHED, *matched holds
 * the oldest matching unexpected message, now removed. On QUEUED, the receive (carrying
 * recv_user) was appended to the PRQ. */
int loom_match_post(loom_match_engine* engine, int32_t source, int32_t tag, uint32_t context,
                    void* recv_user, loom_match_envelope* matched);
/* A message arrived (source >= 0, tag != ANY_TAG). On MATCHED, *matched holds the oldest
 * matching posted receive, now removed. On QUEUED, the message joined the UMQ. */
int loom_match_arrive(loom_match_engine* engine, int32_t source, int32_t tag, uint32_t context,
                      void* msg_user, loom_match_envelope* matched);
/* Cancel a posted receive: give the same source, tag, context and user pointer it was posted
 * with. Returns MATCHED when it was removed, NOT_FOUND when it is not queued (already
 * matched). */
int loom_match_cancel(loom_match_engine* engine, int32_t source, int32_t tag, uint32_t context,
                      void* recv_user);
/* Probe: copy the oldest matching unexpected message into *found without removing it. */
int loom_match_probe(loom_match_engine* engine, int32_t source, int32_t tag, uint32_t context,
                     loom_match_envelope* found);
/* Matched probe (MPI_Mprobe): like probe, but the message is removed and handed back. */
int loom_match_mprobe(loom_match_engine* engine, int32_t source, int32_t tag, uint32_t context,
                      loom_match_envelope* found);

/* Search depth histogram: bucket 0 counts searches that inspected nothing, bucket b >= 1
 * counts depths in [2^(b-1), 2^b); the last bucket also takes everything deeper. */
#define LOOM_MATCH_HIST_BUCKETS 16

typedef struct loom_match_stats {
  uint64_t posted_length, unexpected_length; /* entries queued now */
  uint64_t posted_peak, unexpected_peak;     /* largest lengths seen */
  uint64_t posts, arrivals, cancels, probes, mprobes;
  uint64_t matched_on_post, matched_on_arrival;
  /* Entries (or bins, for hash) inspected per PRQ search (arrivals, cancels) and per UMQ
   * search (posts, probes). */
  uint64_t posted_search_hist[LOOM_MATCH_HIST_BUCKETS];
  uint64_t unexpected_search_hist[LOOM_MATCH_HIST_BUCKETS];
  uint64_t memory_bytes;     /* bytes allocated by the engine right now, both queues */
  uint64_t backend_switches; /* adaptive: queue structure changes so far */
  uint64_t hot_cache_passes; /* hot caching: completed passes over queue memory */
} loom_match_stats;

void loom_match_get_stats(loom_match_engine* engine, loom_match_stats* out);

/* Visit queued entries oldest first (message-queue debugging, MPIR-style). Stops early when
 * visit returns nonzero. Must not be called concurrently with other calls on the engine
 * unless threading != NONE. Returns the number of entries visited. */
typedef enum loom_match_queue { LOOM_MATCH_POSTED = 0, LOOM_MATCH_UNEXPECTED = 1 } loom_match_queue;
size_t loom_match_foreach(loom_match_engine* engine, loom_match_queue queue,
                          int (*visit)(const loom_match_envelope* entry, void* arg), void* arg);

/* Backend names: "list", "perpeer", "lla", "simd", "fuzzy8", "fuzzy16", "fuzzy32", "hash",
 * "adaptive". from_name returns DEFAULT for unknown names. */
const char* loom_match_backend_name(loom_match_backend backend);
loom_match_backend loom_match_backend_from_name(const char* name);
/* The backend and ISA an engine actually uses (after DEFAULT/AUTO resolution). */
loom_match_backend loom_match_engine_backend(const loom_match_engine* engine);
loom_match_isa loom_match_engine_isa(const loom_match_engine* engine);
const char* loom_match_isa_name(loom_match_isa isa);

#ifdef __cplusplus
}
#endif

#endif /* LOOM_MATCH_H */
