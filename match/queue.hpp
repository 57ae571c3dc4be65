// Internal building blocks shared by every matching backend: the match key and predicate,
// the allocator wrapper that counts bytes, and the queue interface the engine drives.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>

#include "loom/match.h"

namespace loom::match {

// A wildcard field keeps only the sign bit in its mask and stores value 0, so it matches
// exactly the non-negative values: any source (sources are >= 0) or any non-internal tag.
constexpr uint32_t kWildMask = 0x80000000u;
constexpr uint32_t kExactMask = 0xffffffffu;

struct Key {
  int32_t src = 0;
  int32_t tag = 0;
  uint32_t ctx = 0;
  uint32_t smask = kExactMask;
  uint32_t tmask = kExactMask;
};

// One predicate for both directions: fields differ only where both sides compare them.
inline bool key_matches(const Key& a, const Key& b) {
  return ((static_cast<uint32_t>(a.src ^ b.src) & a.smask & b.smask) |
          (static_cast<uint32_t>(a.tag ^ b.tag) & a.tmask & b.tmask) | (a.ctx ^ b.ctx)) == 0;
}
inline bool key_equal(const Key& a, const Key& b) {
  return a.src == b.src && a.tag == b.tag && a.ctx == b.ctx && a.smask == b.smask &&
         a.tmask == b.tmask;
}
inline bool any_source(const Key& k) {
  return k.smask != kExactMask;
}
inline bool any_tag(const Key& k) {
  return k.tmask != kExactMask;
}
inline bool is_exact(const Key& k) {
  return !any_source(k) && !any_tag(k);
}

// A hole (deleted slot) can never match: its tag INT32_MIN is not a valid concrete tag and
// fails the non-negative test of ANY_TAG; its exact masks defeat any probe.
inline Key hole_key() {
  return Key{-1, INT32_MIN, 0, kExactMask, kExactMask};
}

Key make_key(int32_t source, int32_t tag, uint32_t ctx);
loom_match_envelope to_envelope(const Key& k, void* user);

struct Entry {
  Key key;
  void* user = nullptr;
};

// Allocation through the user's allocator, counting live bytes for the memory statistic.
class Memory {
 public:
  explicit Memory(const loom_match_config& cfg);
  void* allocate(size_t bytes);  // nullptr on failure
  void release(void* p, size_t bytes);
  template <class T>
  T* create() {
    void* p = allocate(sizeof(T));
    return p ? new (p) T() : nullptr;
  }
  template <class T>
  void destroy(T* p) {
    if (!p) return;
    p->~T();
    release(p, sizeof(T));
  }
  size_t bytes() const { return bytes_; }

 private:
  void* (*alloc_)(size_t, void*);
  void (*free_)(void*, size_t, void*);
  void* arg_;
  size_t bytes_ = 0;
};

using VisitFn = bool (*)(const Entry& e, void* arg);  // return false to stop

// One queue (PRQ or UMQ). Entries of a PRQ may carry wildcards and are searched with
// concrete probes; entries of a UMQ are concrete and searched with possibly-wild probes.
class MatchQueue {
 public:
  explicit MatchQueue(const loom_match_config& cfg) : mem_(cfg) {}
  virtual ~MatchQueue() = default;
  MatchQueue(const MatchQueue&) = delete;
  MatchQueue& operator=(const MatchQueue&) = delete;

  // Appends at the tail (youngest). False on allocation failure, queue unchanged.
  virtual bool append(const Entry& e) = 0;
  // Finds the oldest entry matching probe; removes it when remove is set. *depth receives
  // the number of entries (or bins) inspected.
  virtual bool find(const Key& probe, bool remove, Entry* out, uint32_t* depth) = 0;
  // Removes the oldest entry with exactly this key and user pointer.
  virtual bool cancel(const Key& key, void* user) = 0;
  // Visits entries oldest first; returns false if visit stopped early.
  virtual bool visit(VisitFn fn, void* arg) const = 0;
  // Reads one word per cache line of the queue's memory (hot caching); returns a checksum.
  virtual uint64_t touch() const = 0;
  virtual size_t size() const = 0;
  virtual uint64_t switches() const { return 0; }
  virtual size_t memory_bytes() const { return mem_.bytes(); }

 protected:
  mutable Memory mem_;  // mutable: visit() needs scratch space
};

enum class Side { kPosted, kUnexpected };

std::unique_ptr<MatchQueue> make_queue(loom_match_backend backend, Side side, loom_match_isa isa,
                                       const loom_match_config& cfg);
std::unique_ptr<MatchQueue> make_list_queue(const loom_match_config& cfg);
std::unique_ptr<MatchQueue> make_perpeer_queue(const loom_match_config& cfg);
std::unique_ptr<MatchQueue> make_node_queue(loom_match_backend backend, Side side,
                                            loom_match_isa isa, const loom_match_config& cfg);
std::unique_ptr<MatchQueue> make_hash_queue(const loom_match_config& cfg);
std::unique_ptr<MatchQueue> make_adaptive_queue(Side side, loom_match_isa isa,
                                                const loom_match_config& cfg);

// Best ISA the CPU supports, and the one to use for a request (AUTO, env, fallback).
loom_match_isa detect_isa();
loom_match_isa resolve_isa(loom_match_isa requested);

// Reads a word of every cache line in [p, p + bytes).
inline uint64_t touch_lines(const void* p, size_t bytes) {
  uint64_t sum = 0;
  const auto* c = static_cast<const unsigned char*>(p);
  for (size_t off = 0; off < bytes; off += 64)
    sum += *reinterpret_cast<const volatile unsigned char*>(c + off);
  return sum;
}

}  // namespace loom::match
