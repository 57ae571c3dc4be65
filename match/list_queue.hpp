// The baseline queue: one doubly linked list searched front to back, as MPICH CH3 does it.
// In a header so the adaptive backend can embed it and call it without virtual dispatch.
#pragma once

#include "match/flat_map.hpp"
#include "match/queue.hpp"

namespace loom::match {

struct ListNode {
  Entry e;
  uint64_t seq = 0;
  ListNode* next = nullptr;
  ListNode* prev = nullptr;
};

struct List {
  ListNode* head = nullptr;
  ListNode* tail = nullptr;

  void push_back(ListNode* n) {
    n->prev = tail;
    n->next = nullptr;
    (tail ? tail->next : head) = n;
    tail = n;
  }
  void unlink(ListNode* n) {
    (n->prev ? n->prev->next : head) = n->next;
    (n->next ? n->next->prev : tail) = n->prev;
  }
  ListNode* first_match(const Key& probe, uint32_t* depth) const {
    for (ListNode* n = head; n; n = n->next) {
      ++*depth;
      if (key_matches(n->e.key, probe)) return n;
    }
    return nullptr;
  }
  ListNode* find_exact(const Key& key, void* user) const {
    for (ListNode* n = head; n; n = n->next)
      if (n->e.user == user && key_equal(n->e.key, key)) return n;
    return nullptr;
  }
  uint64_t touch() const {
    uint64_t sum = 0;
    for (const ListNode* n = head; n; n = n->next) sum += touch_lines(n, sizeof *n);
    return sum;
  }
};

class ListQueue final : public MatchQueue {
 public:
  explicit ListQueue(const loom_match_config& cfg) : MatchQueue(cfg), pool_(mem_) {}
  ~ListQueue() override { clear(); }

  bool append(const Entry& e) override {
    ListNode* n = pool_.get();
    if (!n) return false;
    n->e = e;
    list_.push_back(n);
    ++size_;
    return true;
  }
  bool find(const Key& probe, bool remove, Entry* out, uint32_t* depth) override {
    ListNode* n = list_.first_match(probe, depth);
    if (!n) return false;
    *out = n->e;
    if (remove) erase(n);
    return true;
  }
  bool cancel(const Key& key, void* user) override {
    ListNode* n = list_.find_exact(key, user);
    if (n) erase(n);
    return n != nullptr;
  }
  bool visit(VisitFn fn, void* arg) const override {
    for (const ListNode* n = list_.head; n; n = n->next)
      if (!fn(n->e, arg)) return false;
    return true;
  }
  uint64_t touch() const override { return list_.touch(); }
  size_t size() const override { return size_; }
  void clear() {
    while (list_.head) erase(list_.head);
  }

 private:
  void erase(ListNode* n) {
    list_.unlink(n);
    pool_.put(n);
    --size_;
  }
  Pool<ListNode> pool_;
  List list_;
  size_t size_ = 0;
};

}  // namespace loom::match
