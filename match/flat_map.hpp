// Open-addressing hash map from a 16-byte key to a pointer, allocated through Memory.
// Linear probing with backward-shift deletion, so erasing leaves no tombstones and bins
// created by one-off tags do not accumulate.
#pragma once

#include <cstdint>

#include "match/queue.hpp"

namespace loom::match {

struct MapKey {
  uint32_t a = 0, b = 0, c = 0, d = 0;
  bool operator==(const MapKey&) const = default;
};

template <class V>
class FlatMap {
 public:
  explicit FlatMap(Memory& mem) : mem_(mem) {}
  ~FlatMap() { mem_.release(slots_, capacity_ * sizeof(Slot)); }
  FlatMap(const FlatMap&) = delete;
  FlatMap& operator=(const FlatMap&) = delete;

  V* find(const MapKey& k) const {
    if (!size_) return nullptr;
    for (size_t i = index(k);; i = (i + 1) & (capacity_ - 1)) {
      if (!slots_[i].value) return nullptr;
      if (slots_[i].key == k) return slots_[i].value;
    }
  }
  // Inserts k -> v (k must be absent). False when growing the table failed.
  bool insert(const MapKey& k, V* v) {
    if ((size_ + 1) * 2 > capacity_ && !grow()) return false;
    place(k, v);
    ++size_;
    return true;
  }
  void erase(const MapKey& k) {
    size_t i = index(k);
    while (!(slots_[i].key == k)) i = (i + 1) & (capacity_ - 1);
    // Backward shift: pull later members of the probe run into the gap.
    for (size_t j = (i + 1) & (capacity_ - 1); slots_[j].value; j = (j + 1) & (capacity_ - 1)) {
      const size_t home = index(slots_[j].key);
      const bool movable = ((j - home) & (capacity_ - 1)) >= ((j - i) & (capacity_ - 1));
      if (movable) {
        slots_[i] = slots_[j];
        i = j;
      }
    }
    slots_[i] = Slot{};
    --size_;
  }
  template <class Fn>
  void for_each(Fn&& fn) const {
    for (size_t i = 0; i < capacity_; ++i)
      if (slots_[i].value) fn(slots_[i].value);
  }
  size_t size() const { return size_; }
  uint64_t touch() const { return touch_lines(slots_, capacity_ * sizeof(Slot)); }

 private:
  struct Slot {
    MapKey key;
    V* value = nullptr;
  };
  size_t index(const MapKey& k) const {
    uint64_t h = (uint64_t{k.a} << 32 | k.b) * 0x9E3779B97F4A7C15ull;
    h ^= (uint64_t{k.c} << 32 | k.d) * 0xC2B2AE3D27D4EB4Full;
    h ^= h >> 29;
    return static_cast<size_t>(h) & (capacity_ - 1);
  }
  void place(const MapKey& k, V* v) {
    size_t i = index(k);
    while (slots_[i].value) i = (i + 1) & (capacity_ - 1);
    slots_[i] = Slot{k, v};
  }
  bool grow() {
    const size_t new_cap = capacity_ ? capacity_ * 2 : 16;
    auto* fresh = static_cast<Slot*>(mem_.allocate(new_cap * sizeof(Slot)));
    if (!fresh) return false;
    for (size_t i = 0; i < new_cap; ++i) new (&fresh[i]) Slot();
    Slot* old = slots_;
    const size_t old_cap = capacity_;
    slots_ = fresh;
    capacity_ = new_cap;
    for (size_t i = 0; i < old_cap; ++i)
      if (old[i].value) place(old[i].key, old[i].value);
    mem_.release(old, old_cap * sizeof(Slot));
    return true;
  }

  Memory& mem_;
  Slot* slots_ = nullptr;
  size_t capacity_ = 0;
  size_t size_ = 0;
};

// Free list of fixed-size objects; keeps hot paths away from the allocator.
template <class T>
class Pool {
 public:
  explicit Pool(Memory& mem) : mem_(mem) {}
  ~Pool() {
    while (free_) {
      Link* next = free_->next;
      mem_.release(free_, sizeof(Storage));
      free_ = next;
    }
  }
  Pool(const Pool&) = delete;
  Pool& operator=(const Pool&) = delete;
  T* get() {
    void* p;
    if (free_) {
      p = free_;
      free_ = free_->next;
      --cached_;
    } else {
      p = mem_.allocate(sizeof(Storage));
      if (!p) return nullptr;
    }
    return new (p) T();
  }
  void put(T* t) {
    t->~T();
    if (cached_ >= kMaxCached) {
      mem_.release(t, sizeof(Storage));
      return;
    }
    auto* l = new (static_cast<void*>(t)) Link{free_};
    free_ = l;
    ++cached_;
  }

 private:
  struct Link {
    Link* next;
  };
  union Storage {
    Link link;
    alignas(T) unsigned char bytes[sizeof(T)];
  };
  static constexpr size_t kMaxCached = 256;
  Memory& mem_;
  Link* free_ = nullptr;
  size_t cached_ = 0;
};

}  // namespace loom::match
