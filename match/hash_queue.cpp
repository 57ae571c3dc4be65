// Hash backend (UCX-like): entries live in FIFO bins keyed by their match pattern, and in one
// age list of the whole queue; a per-queue sequence number orders entries across bins.
//
// Posted receives go to one of four bins by wildcard kind: exact (source, tag, context),
// any-source (tag, context), any-tag (source, context) or any-both (context). Every entry of
// a bin matches exactly the same concrete messages, so the bin head is the bin's oldest match
// and an arrival needs at most four lookups: O(1) at any depth and any wildcard share.
// Unexpected messages are concrete: an exact receive takes the head of its bin; a wildcard
// receive walks the age list (linear, which is why adaptive leaves hash when wildcard
// receives dominate).
#include "match/flat_map.hpp"
#include "match/queue.hpp"

namespace loom::match {
namespace {

enum BinKind : uint32_t { kExact = 0, kAnySource = 1, kAnyTag = 2, kAnyBoth = 3 };

struct HashNode;
struct Bin {
  MapKey key;
  HashNode* head = nullptr;
  HashNode* tail = nullptr;
};
struct HashNode {
  Entry e;
  uint64_t seq = 0;
  Bin* bin = nullptr;
  HashNode *bin_next = nullptr, *bin_prev = nullptr;
  HashNode *age_next = nullptr, *age_prev = nullptr;
};

BinKind kind_of(const Key& k) {
  return static_cast<BinKind>((any_source(k) ? uint32_t{kAnySource} : 0u) |
                              (any_tag(k) ? uint32_t{kAnyTag} : 0u));
}
MapKey bin_key(BinKind kind, const Key& k) {
  return MapKey{kind, kind & kAnySource ? 0u : static_cast<uint32_t>(k.src),
                kind & kAnyTag ? 0u : static_cast<uint32_t>(k.tag), k.ctx};
}

class HashQueue final : public MatchQueue {
 public:
  explicit HashQueue(const loom_match_config& cfg)
      : MatchQueue(cfg), nodes_(mem_), bins_pool_(mem_), bins_(mem_) {}
  ~HashQueue() override {
    while (age_head_) erase(age_head_);
  }

  bool append(const Entry& e) override {
    const BinKind kind = kind_of(e.key);
    const MapKey bk = bin_key(kind, e.key);
    Bin* b = bins_.find(bk);
    HashNode* n = nodes_.get();
    if (!n) return false;
    if (!b) {
      b = bins_pool_.get();
      if (!b || !bins_.insert(bk, b)) {
        if (b) bins_pool_.put(b);
        nodes_.put(n);
        return false;
      }
      b->key = bk;
    }
    n->e = e;
    n->seq = next_seq_++;
    n->bin = b;
    n->bin_prev = b->tail;
    (b->tail ? b->tail->bin_next : b->head) = n;
    b->tail = n;
    n->age_prev = age_tail_;
    (age_tail_ ? age_tail_->age_next : age_head_) = n;
    age_tail_ = n;
    ++kind_count_[kind];
    ++size_;
    return true;
  }

  bool find(const Key& probe, bool remove, Entry* out, uint32_t* depth) override {
    HashNode* best = nullptr;
    if (is_exact(probe)) {
      // Oldest among the heads of the (up to four) bins whose entries match this message.
      // Wildcard-tag bins never match negative (internal) tags.
      for (uint32_t kind = kExact; kind <= kAnyBoth; ++kind) {
        if (!kind_count_[kind] || ((kind & kAnyTag) && probe.tag < 0)) continue;
        ++*depth;
        const Bin* b = bins_.find(bin_key(static_cast<BinKind>(kind), probe));
        if (b && (!best || b->head->seq < best->seq)) best = b->head;
      }
    } else {
      for (HashNode* n = age_head_; n; n = n->age_next) {
        ++*depth;
        if (key_matches(n->e.key, probe)) {
          best = n;
          break;
        }
      }
    }
    if (!best) return false;
    *out = best->e;
    if (remove) erase(best);
    return true;
  }

  bool cancel(const Key& key, void* user) override {
    const Bin* b = bins_.find(bin_key(kind_of(key), key));
    for (HashNode* n = b ? b->head : nullptr; n; n = n->bin_next)
      if (n->e.user == user && key_equal(n->e.key, key)) {
        erase(n);
        return true;
      }
    return false;
  }

  bool visit(VisitFn fn, void* arg) const override {
    for (const HashNode* n = age_head_; n; n = n->age_next)
      if (!fn(n->e, arg)) return false;
    return true;
  }
  uint64_t touch() const override {
    uint64_t sum = bins_.touch();
    for (const HashNode* n = age_head_; n; n = n->age_next)
      sum += touch_lines(n, sizeof *n) + touch_lines(n->bin, sizeof(Bin));
    return sum;
  }
  size_t size() const override { return size_; }

 private:
  void erase(HashNode* n) {
    Bin* b = n->bin;
    (n->bin_prev ? n->bin_prev->bin_next : b->head) = n->bin_next;
    (n->bin_next ? n->bin_next->bin_prev : b->tail) = n->bin_prev;
    if (!b->head) {
      bins_.erase(b->key);
      bins_pool_.put(b);
    }
    (n->age_prev ? n->age_prev->age_next : age_head_) = n->age_next;
    (n->age_next ? n->age_next->age_prev : age_tail_) = n->age_prev;
    --kind_count_[kind_of(n->e.key)];
    --size_;
    nodes_.put(n);
  }

  Pool<HashNode> nodes_;
  Pool<Bin> bins_pool_;
  FlatMap<Bin> bins_;
  HashNode* age_head_ = nullptr;
  HashNode* age_tail_ = nullptr;
  size_t kind_count_[4] = {0, 0, 0, 0};
  uint64_t next_seq_ = 0;
  size_t size_ = 0;
};

}  // namespace

std::unique_ptr<MatchQueue> make_hash_queue(const loom_match_config& cfg) {
  return std::make_unique<HashQueue>(cfg);
}

}  // namespace loom::match
