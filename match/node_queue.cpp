// Array-node backends: a singly linked list of fixed-size nodes, each an array of entries.
// Deleted slots become holes whose keys can never match; nodes are compacted lazily once
// holes outnumber live entries. The node layout and its search kernel vary:
//   lla     2 compact 24-byte entries + header in one 64-byte cache line (seed §5.3.1)
//   simd    32 entries in structure-of-arrays form, AVX-512/AVX2 compare and mask (§5.3.2)
//   fuzzyN  64 N-bit hashed keys as a SIMD prefilter, then an exact check (§6.3)
#include <immintrin.h>

#include <bit>
#include <type_traits>

#include "match/queue.hpp"

namespace loom::match {
namespace {

// ---------------------------------------------------------------- lla
struct LlaLayout {
  static constexpr unsigned kLanes = 2;
  using Index = uint8_t;
  using LiveMask = uint8_t;
  struct Slot {
    int32_t tag, src;
    uint32_t ctx;
    uint32_t wild;  // bit 0: any source, bit 1: any tag
    void* user;
  };
  struct Lanes {
    Slot slot[kLanes];
  };
  using FindFn = int (*)(const Lanes&, const Key&);

  static void store(Lanes& l, unsigned i, const Entry& e) {
    l.slot[i] = Slot{e.key.tag, e.key.src, e.key.ctx,
                     (any_source(e.key) ? 1u : 0u) | (any_tag(e.key) ? 2u : 0u), e.user};
  }
  static Entry load(const Lanes& l, unsigned i) {
    const Slot& s = l.slot[i];
    return Entry{Key{s.src, s.tag, s.ctx, (s.wild & 1) ? kWildMask : kExactMask,
                     (s.wild & 2) ? kWildMask : kExactMask},
                 s.user};
  }
  static void clear(Lanes& l, unsigned i) { store(l, i, Entry{hole_key(), nullptr}); }
  static int find_scalar(const Lanes& l, const Key& probe) {
    for (unsigned i = 0; i < kLanes; ++i)
      if (key_matches(load(l, i).key, probe)) return static_cast<int>(i);
    return -1;
  }
  static FindFn select(loom_match_isa) { return find_scalar; }
};
static_assert(sizeof(LlaLayout::Lanes) == 48, "two 24-byte entries per cache line");

// ---------------------------------------------------------------- simd
struct NoMasks {};
template <unsigned N>
struct MaskArrays {
  uint32_t smask[N], tmask[N];
};

// kMasked: entries carry wildcards (PRQ). Otherwise entries are concrete (UMQ) and only the
// probe's masks apply, which saves two arrays.
template <bool kMasked>
struct SimdLayout {
  static constexpr unsigned kLanes = 32;
  using Index = uint32_t;
  using LiveMask = uint32_t;
  struct Lanes {
    int32_t tag[kLanes];
    int32_t src[kLanes];
    uint32_t ctx[kLanes];
    [[no_unique_address]] std::conditional_t<kMasked, MaskArrays<kLanes>, NoMasks> m;
    void* user[kLanes];
  };
  using FindFn = int (*)(const Lanes&, const Key&);

  static void store(Lanes& l, unsigned i, const Entry& e) {
    l.tag[i] = e.key.tag;
    l.src[i] = e.key.src;
    l.ctx[i] = e.key.ctx;
    if constexpr (kMasked) {
      l.m.smask[i] = e.key.smask;
      l.m.tmask[i] = e.key.tmask;
    }
    l.user[i] = e.user;
  }
  static Entry load(const Lanes& l, unsigned i) {
    Key k{l.src[i], l.tag[i], l.ctx[i], kExactMask, kExactMask};
    if constexpr (kMasked) {
      k.smask = l.m.smask[i];
      k.tmask = l.m.tmask[i];
    }
    return Entry{k, l.user[i]};
  }
  static void clear(Lanes& l, unsigned i) { store(l, i, Entry{hole_key(), nullptr}); }

  static int find_scalar(const Lanes& l, const Key& probe) {
    for (unsigned i = 0; i < kLanes; ++i)
      if (key_matches(load(l, i).key, probe)) return static_cast<int>(i);
    return -1;
  }

  __attribute__((target("avx2"))) static int find_avx2(const Lanes& l, const Key& p) {
    const __m256i pt = _mm256_set1_epi32(p.tag), ps = _mm256_set1_epi32(p.src);
    const __m256i pc = _mm256_set1_epi32(static_cast<int>(p.ctx));
    const __m256i ptm = _mm256_set1_epi32(static_cast<int>(p.tmask));
    const __m256i psm = _mm256_set1_epi32(static_cast<int>(p.smask));
    const __m256i zero = _mm256_setzero_si256();
    for (unsigned base = 0; base < kLanes; base += 8) {
      __m256i tm = ptm, sm = psm;
      if constexpr (kMasked) {
        tm = _mm256_and_si256(
            tm, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(l.m.tmask + base)));
        sm = _mm256_and_si256(
            sm, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(l.m.smask + base)));
      }
      const __m256i t = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(l.tag + base));
      const __m256i s = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(l.src + base));
      const __m256i c = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(l.ctx + base));
      const __m256i diff =
          _mm256_or_si256(_mm256_or_si256(_mm256_and_si256(_mm256_xor_si256(t, pt), tm),
                                          _mm256_and_si256(_mm256_xor_si256(s, ps), sm)),
                          _mm256_xor_si256(c, pc));
      const unsigned hit = static_cast<unsigned>(
          _mm256_movemask_ps(_mm256_castsi256_ps(_mm256_cmpeq_epi32(diff, zero))));
      if (hit) return static_cast<int>(base + static_cast<unsigned>(std::countr_zero(hit)));
    }
    return -1;
  }

  __attribute__((target("avx512f,avx512bw"))) static int find_avx512(const Lanes& l, const Key& p) {
    const __m512i pt = _mm512_set1_epi32(p.tag), ps = _mm512_set1_epi32(p.src);
    const __m512i pc = _mm512_set1_epi32(static_cast<int>(p.ctx));
    const __m512i ptm = _mm512_set1_epi32(static_cast<int>(p.tmask));
    const __m512i psm = _mm512_set1_epi32(static_cast<int>(p.smask));
    for (unsigned base = 0; base < kLanes; base += 16) {
      __m512i tm = ptm, sm = psm;
      if constexpr (kMasked) {
        tm = _mm512_and_si512(tm, _mm512_loadu_si512(l.m.tmask + base));
        sm = _mm512_and_si512(sm, _mm512_loadu_si512(l.m.smask + base));
      }
      __mmask16 k = _mm512_cmpeq_epi32_mask(_mm512_loadu_si512(l.ctx + base), pc);
      k = _mm512_mask_testn_epi32_mask(k, _mm512_xor_si512(_mm512_loadu_si512(l.tag + base), pt),
                                       tm);
      k = _mm512_mask_testn_epi32_mask(k, _mm512_xor_si512(_mm512_loadu_si512(l.src + base), ps),
                                       sm);
      if (k)
        return static_cast<int>(base +
                                static_cast<unsigned>(std::countr_zero(static_cast<unsigned>(k))));
    }
    return -1;
  }

  static FindFn select(loom_match_isa isa) {
    switch (isa) {
      case LOOM_MATCH_ISA_AVX512:
        return find_avx512;
      case LOOM_MATCH_ISA_AVX2:
        return find_avx2;
      default:
        return find_scalar;
    }
  }
};

// ---------------------------------------------------------------- fuzzy
// Fast-match id: the low half of the key's bits hold the source's low bits, the high half the
// tag's low bits (a "high-pass filter", seed §6.3). Wildcards clear their field in the id mask.
template <class Id>
struct FuzzyId {
  static constexpr unsigned kHalf = 4 * sizeof(Id);
  static constexpr uint32_t kField = (1u << kHalf) - 1;
  static Id id(const Key& k) {
    return static_cast<Id>(((static_cast<uint32_t>(k.tag) & kField) << kHalf) |
                           (static_cast<uint32_t>(k.src) & kField));
  }
  static Id mask(const Key& k) {
    return static_cast<Id>((any_tag(k) ? 0u : kField << kHalf) | (any_source(k) ? 0u : kField));
  }
};

template <class Id, bool kMasked>
struct FuzzyLayout {
  static constexpr unsigned kLanes = 64;
  using Index = uint32_t;
  using LiveMask = uint64_t;
  struct IdMasks {
    Id idmask[kLanes];
  };
  struct Lanes {
    Id id[kLanes];
    [[no_unique_address]] std::conditional_t<kMasked, IdMasks, NoMasks> m;
    Entry exact[kLanes];
  };
  using FindFn = int (*)(const Lanes&, const Key&);
  using Ids = FuzzyId<Id>;

  static void store(Lanes& l, unsigned i, const Entry& e) {
    l.id[i] = Ids::id(e.key);
    if constexpr (kMasked) l.m.idmask[i] = Ids::mask(e.key);
    l.exact[i] = e;
  }
  static Entry load(const Lanes& l, unsigned i) { return l.exact[i]; }
  static void clear(Lanes& l, unsigned i) { store(l, i, Entry{hole_key(), nullptr}); }

  // Exact check of prefilter candidates, lowest lane (oldest) first.
  static int verify(const Lanes& l, uint64_t candidates, const Key& p) {
    while (candidates) {
      const unsigned i = static_cast<unsigned>(std::countr_zero(candidates));
      if (key_matches(l.exact[i].key, p)) return static_cast<int>(i);
      candidates &= candidates - 1;
    }
    return -1;
  }

  static int find_scalar(const Lanes& l, const Key& p) {
    const Id pid = Ids::id(p), pm = Ids::mask(p);
    uint64_t cand = 0;
    for (unsigned i = 0; i < kLanes; ++i) {
      Id m = pm;
      if constexpr (kMasked) m = static_cast<Id>(m & l.m.idmask[i]);
      if (((l.id[i] ^ pid) & m) == 0) cand |= uint64_t{1} << i;
    }
    return verify(l, cand, p);
  }

  __attribute__((target("avx2"))) static int find_avx2(const Lanes& l, const Key& p) {
    const Id pid = Ids::id(p), pm = Ids::mask(p);
    const __m256i zero = _mm256_setzero_si256();
    uint64_t cand = 0;
    constexpr unsigned kPerVec = 32 / sizeof(Id);
    __m256i vid, vm;
    if constexpr (sizeof(Id) == 1) {
      vid = _mm256_set1_epi8(static_cast<char>(pid));
      vm = _mm256_set1_epi8(static_cast<char>(pm));
    } else if constexpr (sizeof(Id) == 2) {
      vid = _mm256_set1_epi16(static_cast<short>(pid));
      vm = _mm256_set1_epi16(static_cast<short>(pm));
    } else {
      vid = _mm256_set1_epi32(static_cast<int>(pid));
      vm = _mm256_set1_epi32(static_cast<int>(pm));
    }
    __m256i eq[kLanes / kPerVec];
    for (unsigned v = 0; v < kLanes / kPerVec; ++v) {
      __m256i m = vm;
      if constexpr (kMasked)
        m = _mm256_and_si256(
            m, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(l.m.idmask + v * kPerVec)));
      const __m256i x = _mm256_and_si256(
          _mm256_xor_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(l.id + v * kPerVec)),
                           vid),
          m);
      if constexpr (sizeof(Id) == 1)
        eq[v] = _mm256_cmpeq_epi8(x, zero);
      else if constexpr (sizeof(Id) == 2)
        eq[v] = _mm256_cmpeq_epi16(x, zero);
      else
        eq[v] = _mm256_cmpeq_epi32(x, zero);
    }
    if constexpr (sizeof(Id) == 1) {
      for (unsigned v = 0; v < 2; ++v)
        cand |= uint64_t{static_cast<uint32_t>(_mm256_movemask_epi8(eq[v]))} << (32 * v);
    } else if constexpr (sizeof(Id) == 2) {
      // Pack two 16-lane results to bytes; the permute undoes packs' per-128-bit interleave.
      for (unsigned v = 0; v < 2; ++v) {
        const __m256i packed =
            _mm256_permute4x64_epi64(_mm256_packs_epi16(eq[2 * v], eq[2 * v + 1]), 0xD8);
        cand |= uint64_t{static_cast<uint32_t>(_mm256_movemask_epi8(packed))} << (32 * v);
      }
    } else {
      for (unsigned v = 0; v < 8; ++v)
        cand |= uint64_t{static_cast<uint32_t>(_mm256_movemask_ps(_mm256_castsi256_ps(eq[v])))}
                << (8 * v);
    }
    return verify(l, cand, p);
  }

  __attribute__((target("avx512f,avx512bw"))) static int find_avx512(const Lanes& l, const Key& p) {
    const Id pid = Ids::id(p), pm = Ids::mask(p);
    constexpr unsigned kPerVec = 64 / sizeof(Id);
    uint64_t cand = 0;
    for (unsigned v = 0; v < kLanes / kPerVec; ++v) {
      const __m512i ids = _mm512_loadu_si512(l.id + v * kPerVec);
      if constexpr (sizeof(Id) == 1) {
        __m512i m = _mm512_set1_epi8(static_cast<char>(pm));
        if constexpr (kMasked) m = _mm512_and_si512(m, _mm512_loadu_si512(l.m.idmask));
        cand = _mm512_testn_epi8_mask(
            _mm512_xor_si512(ids, _mm512_set1_epi8(static_cast<char>(pid))), m);
      } else if constexpr (sizeof(Id) == 2) {
        __m512i m = _mm512_set1_epi16(static_cast<short>(pm));
        if constexpr (kMasked)
          m = _mm512_and_si512(m, _mm512_loadu_si512(l.m.idmask + v * kPerVec));
        const uint64_t k = _mm512_testn_epi16_mask(
            _mm512_xor_si512(ids, _mm512_set1_epi16(static_cast<short>(pid))), m);
        cand |= k << (32 * v);
      } else {
        __m512i m = _mm512_set1_epi32(static_cast<int>(pm));
        if constexpr (kMasked)
          m = _mm512_and_si512(m, _mm512_loadu_si512(l.m.idmask + v * kPerVec));
        const uint64_t k = _mm512_testn_epi32_mask(
            _mm512_xor_si512(ids, _mm512_set1_epi32(static_cast<int>(pid))), m);
        cand |= k << (16 * v);
      }
    }
    return verify(l, cand, p);
  }

  static FindFn select(loom_match_isa isa) {
    switch (isa) {
      case LOOM_MATCH_ISA_AVX512:
        return find_avx512;
      case LOOM_MATCH_ISA_AVX2:
        return find_avx2;
      default:
        return find_scalar;
    }
  }
};

// ---------------------------------------------------------------- the queue
template <class Layout>
class NodeQueue final : public MatchQueue {
  static constexpr unsigned kLanes = Layout::kLanes;
  using LiveMask = typename Layout::LiveMask;
  using Index = typename Layout::Index;

  struct alignas(64) Node {
    typename Layout::Lanes lanes;
    Node* next;
    Index head, tail;  // lanes outside [head, tail) are holes
    LiveMask live;     // bit i set: lane i holds an entry
  };

 public:
  NodeQueue(loom_match_isa isa, const loom_match_config& cfg)
      : MatchQueue(cfg), find_(Layout::select(isa)) {}
  ~NodeQueue() override {
    free_chain(head_);
    if (spare_) mem_.release(spare_, sizeof(Node));
  }

  bool append(const Entry& e) override {
    if (!tail_ || tail_->tail == kLanes) {
      Node* n = new_node();
      if (!n) return false;
      (tail_ ? tail_->next : head_) = n;
      tail_ = n;
    }
    Layout::store(tail_->lanes, tail_->tail, e);
    tail_->live = static_cast<LiveMask>(tail_->live | bit(tail_->tail));
    ++tail_->tail;
    ++size_;
    ++slots_;
    return true;
  }

  bool find(const Key& probe, bool remove, Entry* out, uint32_t* depth) override {
    Node* prev = nullptr;
    for (Node* n = head_; n; prev = n, n = n->next) {
      const int lane = find_(n->lanes, probe);
      if (lane < 0) {
        *depth += n->tail - n->head;
        continue;
      }
      *depth += static_cast<uint32_t>(lane) - n->head + 1;
      *out = Layout::load(n->lanes, static_cast<unsigned>(lane));
      if (remove) remove_at(prev, n, static_cast<unsigned>(lane));
      return true;
    }
    return false;
  }

  bool cancel(const Key& key, void* user) override {
    Node* prev = nullptr;
    for (Node* n = head_; n; prev = n, n = n->next)
      for (unsigned i = n->head; i < n->tail; ++i) {
        if (!(n->live & bit(i))) continue;
        const Entry e = Layout::load(n->lanes, i);
        if (e.user == user && key_equal(e.key, key)) {
          remove_at(prev, n, i);
          return true;
        }
      }
    return false;
  }

  bool visit(VisitFn fn, void* arg) const override {
    for (const Node* n = head_; n; n = n->next)
      for (unsigned i = n->head; i < n->tail; ++i)
        if ((n->live & bit(i)) && !fn(Layout::load(n->lanes, i), arg)) return false;
    return true;
  }
  uint64_t touch() const override {
    uint64_t sum = 0;
    for (const Node* n = head_; n; n = n->next) sum += touch_lines(n, sizeof(Node));
    return sum;
  }
  size_t size() const override { return size_; }

 private:
  static LiveMask bit(unsigned i) { return static_cast<LiveMask>(LiveMask{1} << i); }

  Node* new_node() {
    Node* n = spare_;
    spare_ = nullptr;
    if (!n) n = static_cast<Node*>(mem_.allocate(sizeof(Node)));
    if (!n) return nullptr;
    for (unsigned i = 0; i < kLanes; ++i) Layout::clear(n->lanes, i);
    n->next = nullptr;
    n->head = n->tail = 0;
    n->live = 0;
    return n;
  }
  void free_node(Node* n) {
    if (!spare_)
      spare_ = n;
    else
      mem_.release(n, sizeof(Node));
  }
  void free_chain(Node* n) {
    while (n) {
      Node* next = n->next;
      mem_.release(n, sizeof(Node));
      n = next;
    }
  }

  void remove_at(Node* prev, Node* n, unsigned lane) {
    Layout::clear(n->lanes, lane);
    n->live = static_cast<LiveMask>(n->live & ~bit(lane));
    --size_;
    if (!n->live) {
      slots_ -= n->tail - n->head;
      if (n == tail_) {
        n->head = n->tail = 0;  // every lane is a hole again: reuse the node
      } else {
        (prev ? prev->next : head_) = n->next;
        free_node(n);
      }
    } else if (lane == n->head) {
      const unsigned first = static_cast<unsigned>(std::countr_zero(n->live));
      slots_ -= first - n->head;
      n->head = static_cast<Index>(first);
    }
    if (slots_ - size_ > size_ && slots_ - size_ > 4 * kLanes) compact();
  }

  // Lazy compaction: copy live entries, in order, into a fresh dense chain. Skipped (holes
  // stay, still correct) when memory for the new chain is not available.
  void compact() {
    Node *new_head = nullptr, *new_tail = nullptr;
    for (const Node* n = head_; n; n = n->next)
      for (unsigned i = n->head; i < n->tail; ++i) {
        if (!(n->live & bit(i))) continue;
        if (!new_tail || new_tail->tail == kLanes) {
          Node* fresh = new_node();
          if (!fresh) {
            free_chain(new_head);
            return;
          }
          (new_tail ? new_tail->next : new_head) = fresh;
          new_tail = fresh;
        }
        Layout::store(new_tail->lanes, new_tail->tail, Layout::load(n->lanes, i));
        new_tail->live = static_cast<LiveMask>(new_tail->live | bit(new_tail->tail));
        ++new_tail->tail;
      }
    free_chain(head_);
    head_ = new_head;
    tail_ = new_tail;
    slots_ = size_;
  }

  typename Layout::FindFn find_;
  Node* head_ = nullptr;
  Node* tail_ = nullptr;
  Node* spare_ = nullptr;
  size_t size_ = 0;
  size_t slots_ = 0;  // sum of (tail - head): live entries plus holes inside the ranges
};

template <template <bool> class Layout>
std::unique_ptr<MatchQueue> make_sided(Side side, loom_match_isa isa,
                                       const loom_match_config& cfg) {
  if (side == Side::kPosted) return std::make_unique<NodeQueue<Layout<true>>>(isa, cfg);
  return std::make_unique<NodeQueue<Layout<false>>>(isa, cfg);
}
template <bool kMasked>
using Fuzzy8 = FuzzyLayout<uint8_t, kMasked>;
template <bool kMasked>
using Fuzzy16 = FuzzyLayout<uint16_t, kMasked>;
template <bool kMasked>
using Fuzzy32 = FuzzyLayout<uint32_t, kMasked>;

}  // namespace

std::unique_ptr<MatchQueue> make_node_queue(loom_match_backend backend, Side side,
                                            loom_match_isa isa, const loom_match_config& cfg) {
  switch (backend) {
    case LOOM_MATCH_BACKEND_LLA:
      return std::make_unique<NodeQueue<LlaLayout>>(isa, cfg);
    case LOOM_MATCH_BACKEND_SIMD:
      return make_sided<SimdLayout>(side, isa, cfg);
    case LOOM_MATCH_BACKEND_FUZZY8:
      return make_sided<Fuzzy8>(side, isa, cfg);
    case LOOM_MATCH_BACKEND_FUZZY16:
      return make_sided<Fuzzy16>(side, isa, cfg);
    case LOOM_MATCH_BACKEND_FUZZY32:
      return make_sided<Fuzzy32>(side, isa, cfg);
    default:
      return nullptr;
  }
}

}  // namespace loom::match
