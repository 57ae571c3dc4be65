// Per-source lists plus an ANY_SOURCE list merged by sequence number (Open MPI ob1), and
// the factory of the single-list baseline (list_queue.hpp).
#include <algorithm>

#include "match/flat_map.hpp"
#include "match/list_queue.hpp"
#include "match/queue.hpp"

namespace loom::match {
namespace {

// ob1 layout: per communicator, an array of per-peer lists indexed by source (memory grows
// with the number of peers) and one list for ANY_SOURCE receives. Order across lists comes
// from a per-queue sequence number.
class PerPeerQueue final : public MatchQueue {
 public:
  explicit PerPeerQueue(const loom_match_config& cfg)
      : MatchQueue(cfg), pool_(mem_), comms_(mem_) {}
  ~PerPeerQueue() override {
    comms_.for_each([&](Comm* c) {
      for (uint32_t i = 0; i < c->npeers; ++i) drop(c->peers[i]);
      drop(c->wild);
      mem_.release(c->peers, c->npeers * sizeof(List));
      mem_.destroy(c);
    });
  }

  bool append(const Entry& e) override {
    Comm* c = comm_for(e.key.ctx);
    if (!c) return false;
    List* l = any_source(e.key) ? &c->wild : peer_list(c, static_cast<uint32_t>(e.key.src));
    if (!l) return false;
    ListNode* n = pool_.get();
    if (!n) return false;
    n->e = e;
    n->seq = next_seq_++;
    l->push_back(n);
    ++size_;
    return true;
  }

  bool find(const Key& probe, bool remove, Entry* out, uint32_t* depth) override {
    Comm* c = comms_.find(MapKey{probe.ctx});
    if (!c) return false;
    ListNode* best = nullptr;
    List* best_list = nullptr;
    auto consider = [&](List& l) {
      ListNode* n = l.first_match(probe, depth);
      if (n && (!best || n->seq < best->seq)) {
        best = n;
        best_list = &l;
      }
    };
    if (any_source(probe)) {
      for (uint32_t i = 0; i < c->npeers; ++i) consider(c->peers[i]);
    } else if (static_cast<uint32_t>(probe.src) < c->npeers) {
      consider(c->peers[probe.src]);
    }
    consider(c->wild);
    if (!best) return false;
    *out = best->e;
    if (remove) erase(*best_list, best);
    return true;
  }

  bool cancel(const Key& key, void* user) override {
    Comm* c = comms_.find(MapKey{key.ctx});
    if (!c) return false;
    List* l = nullptr;
    if (any_source(key))
      l = &c->wild;
    else if (static_cast<uint32_t>(key.src) < c->npeers)
      l = &c->peers[key.src];
    ListNode* n = l ? l->find_exact(key, user) : nullptr;
    if (n) erase(*l, n);
    return n != nullptr;
  }

  // Rare path (debugging): gather every node and order by sequence.
  bool visit(VisitFn fn, void* arg) const override {
    if (!size_) return true;
    auto** all = static_cast<const ListNode**>(mem_.allocate(size_ * sizeof(ListNode*)));
    if (!all) return false;
    size_t k = 0;
    comms_.for_each([&](const Comm* c) {
      for (uint32_t i = 0; i <= c->npeers; ++i)
        for (const ListNode* n = (i < c->npeers ? c->peers[i] : c->wild).head; n; n = n->next)
          all[k++] = n;
    });
    std::sort(all, all + k, [](const ListNode* a, const ListNode* b) { return a->seq < b->seq; });
    bool complete = true;
    for (size_t i = 0; i < k && complete; ++i) complete = fn(all[i]->e, arg);
    mem_.release(all, size_ * sizeof(ListNode*));
    return complete;
  }

  uint64_t touch() const override {
    uint64_t sum = comms_.touch();
    comms_.for_each([&](const Comm* c) {
      sum += touch_lines(c->peers, c->npeers * sizeof(List)) + c->wild.touch();
      for (uint32_t i = 0; i < c->npeers; ++i) sum += c->peers[i].touch();
    });
    return sum;
  }
  size_t size() const override { return size_; }

 private:
  struct Comm {
    List* peers = nullptr;
    uint32_t npeers = 0;
    List wild;
  };

  Comm* comm_for(uint32_t ctx) {
    if (Comm* c = comms_.find(MapKey{ctx})) return c;
    Comm* c = mem_.create<Comm>();
    if (c && !comms_.insert(MapKey{ctx}, c)) {
      mem_.destroy(c);
      return nullptr;
    }
    return c;
  }
  // Grows the peer array geometrically to cover src (ob1 sizes it by communicator size).
  List* peer_list(Comm* c, uint32_t src) {
    if (src >= c->npeers) {
      uint32_t n = std::max<uint32_t>(16, c->npeers);
      while (n <= src) n *= 2;
      auto* grown = static_cast<List*>(mem_.allocate(n * sizeof(List)));
      if (!grown) return nullptr;
      for (uint32_t i = 0; i < n; ++i) new (&grown[i]) List(i < c->npeers ? c->peers[i] : List{});
      mem_.release(c->peers, c->npeers * sizeof(List));
      c->peers = grown;
      c->npeers = n;
    }
    return &c->peers[src];
  }
  void erase(List& l, ListNode* n) {
    l.unlink(n);
    pool_.put(n);
    --size_;
  }
  void drop(List& l) {
    while (l.head) erase(l, l.head);
  }

  Pool<ListNode> pool_;
  FlatMap<Comm> comms_;
  uint64_t next_seq_ = 0;
  size_t size_ = 0;
};

}  // namespace

std::unique_ptr<MatchQueue> make_list_queue(const loom_match_config& cfg) {
  return std::make_unique<ListQueue>(cfg);
}
std::unique_ptr<MatchQueue> make_perpeer_queue(const loom_match_config& cfg) {
  return std::make_unique<PerPeerQueue>(cfg);
}

}  // namespace loom::match
