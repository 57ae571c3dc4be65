// Adaptive backend: each queue picks the structure that is fastest at its current depth.
//   list  while short (fewest instructions per operation at depth <= ~32);
//   simd  at medium depth (vector scan beats pointer chasing; also the fallback when
//         wildcard receives dominate the unexpected queue, which hash can only scan);
//   hash  when deep and searched by exact keys (O(1) at any depth).
// The list tier is embedded and called directly (no virtual dispatch), so a short queue
// costs about what the list backend costs. Switching copies the entries, oldest first. The up and
// down thresholds differ (hysteresis), so a queue oscillating around one threshold switches at most
// once per ~100 operations and the copy cost stays amortised O(1).
#include <new>

#include "match/list_queue.hpp"
#include "match/queue.hpp"

namespace loom::match {
namespace {

enum class Tier { kList, kSimd, kHash };

class AdaptiveQueue final : public MatchQueue {
 public:
  static constexpr size_t kListToSimd = 32, kSimdToList = 8;
  static constexpr size_t kSimdToHash = 512, kHashToSimd = 128;
  // Decaying share of wildcard probes (1/256 units) above which hash stops paying off, and
  // the lower share below which a queue may (re)enter hash.
  static constexpr uint32_t kWildLeaveHash = 128, kWildEnterHash = 64;

  AdaptiveQueue(Side side, loom_match_isa isa, const loom_match_config& cfg)
      : MatchQueue(cfg), side_(side), isa_(isa), cfg_(cfg), list_(cfg) {
    set_thresholds();
  }

  // In the list tier every operation goes straight to the list, which keeps its own
  // count; size_ is only maintained for the bigger tiers. With the slow paths out of
  // line (below), a post/arrive pair at depth 4 costs 426 instructions against the list
  // backend's 414 (callgrind), down from 468.
  bool append(const Entry& e) override {
    if (tier_ == Tier::kList) {
      if (!list_.append(e)) return false;
      if (list_.size() > grow_at_) {
        size_ = list_.size();
        retier();
      }
      return true;
    }
    if (!big_->append(e)) return false;
    if (++size_ > grow_at_) retier();
    return true;
  }

  bool find(const Key& probe, bool remove, Entry* out, uint32_t* depth) override {
    if (tier_ == Tier::kList) return list_.find(probe, remove, out, depth);  // never shrinks
    return find_past_list(probe, remove, out, depth);
  }

  bool cancel(const Key& key, void* user) override {
    if (tier_ == Tier::kList) return list_.cancel(key, user);
    if (!big_->cancel(key, user)) return false;
    if (--size_ < shrink_at_) retier();
    return true;
  }
  bool visit(VisitFn fn, void* arg) const override { return current().visit(fn, arg); }
  uint64_t touch() const override { return current().touch(); }
  size_t size() const override { return tier_ == Tier::kList ? list_.size() : size_; }
  uint64_t switches() const override { return switches_; }
  size_t memory_bytes() const override {
    return list_.memory_bytes() + (big_ ? big_->memory_bytes() : 0);
  }

 private:
  // Out of line, like retier(): kept in find(), their register saves and unwinding
  // set-up would be paid by every list-tier operation too.
  [[gnu::noinline]] bool find_past_list(const Key& probe, bool remove, Entry* out,
                                        uint32_t* depth) {
    // Only unexpected-queue probes carry wildcards; the share only matters once the queue is
    // past the list tier, so short queues skip the bookkeeping.
    if (side_ == Side::kUnexpected) {
      const uint32_t sample = is_exact(probe) ? 0 : 256;
      wild_share_ = wild_share_ - (wild_share_ >> 4) + (sample >> 4);
      if (tier_ == Tier::kHash && sample && wild_share_ > kWildLeaveHash) retier();
    }
    if (!(tier_ == Tier::kList ? list_.find(probe, remove, out, depth)
                               : big_->find(probe, remove, out, depth)))
      return false;
    if (remove && --size_ < shrink_at_) retier();
    return true;
  }

  const MatchQueue& current() const {
    if (tier_ == Tier::kList) return list_;
    return *big_;
  }

  Tier desired() const {
    const bool hash_ok = wild_share_ <= (tier_ == Tier::kHash ? kWildLeaveHash : kWildEnterHash);
    switch (tier_) {
      case Tier::kList:
        return size_ <= kListToSimd               ? Tier::kList
               : (size_ > kSimdToHash && hash_ok) ? Tier::kHash
                                                  : Tier::kSimd;
      case Tier::kSimd:
        return size_ < kSimdToList                ? Tier::kList
               : (size_ > kSimdToHash && hash_ok) ? Tier::kHash
                                                  : Tier::kSimd;
      default:
        return !hash_ok || size_ < kHashToSimd ? (size_ < kSimdToList ? Tier::kList : Tier::kSimd)
                                               : Tier::kHash;
    }
  }

  // Sizes at which to re-evaluate: only crossing a threshold can change the tier.
  void set_thresholds() {
    switch (tier_) {
      case Tier::kList:
        grow_at_ = kListToSimd, shrink_at_ = 0;
        break;
      case Tier::kSimd:
        grow_at_ = kSimdToHash, shrink_at_ = kSimdToList;
        break;
      default:
        grow_at_ = SIZE_MAX, shrink_at_ = kHashToSimd;
        break;
    }
  }

  // Copies every entry, oldest first; on allocation failure the old structure stays (still
  // correct, only slower).
  [[gnu::noinline]] void retier() {
    const Tier want = desired();
    if (want == tier_) return;
    auto copy = [](const Entry& e, void* dst) { return static_cast<MatchQueue*>(dst)->append(e); };
    try {
      if (want == Tier::kList) {
        if (!big_->visit(copy, &list_)) {
          list_.clear();
          return;
        }
        big_.reset();
      } else {
        std::unique_ptr<MatchQueue> next =
            want == Tier::kSimd ? make_node_queue(LOOM_MATCH_BACKEND_SIMD, side_, isa_, cfg_)
                                : make_hash_queue(cfg_);
        if (!current().visit(copy, next.get())) return;
        list_.clear();
        big_ = std::move(next);
      }
      tier_ = want;
      ++switches_;
      set_thresholds();
    } catch (const std::bad_alloc&) {
    }
  }

  Side side_;
  loom_match_isa isa_;
  loom_match_config cfg_;
  ListQueue list_;                   // the queue while tier_ is kList, else empty
  std::unique_ptr<MatchQueue> big_;  // the queue otherwise
  Tier tier_ = Tier::kList;
  size_t size_ = 0;
  size_t grow_at_ = 0, shrink_at_ = 0;
  uint32_t wild_share_ = 0;
  uint64_t switches_ = 0;
};

}  // namespace

std::unique_ptr<MatchQueue> make_adaptive_queue(Side side, loom_match_isa isa,
                                                const loom_match_config& cfg) {
  return std::make_unique<AdaptiveQueue>(side, isa, cfg);
}

}  // namespace loom::match
