// An open-addressing hash table whose slots are the entries themselves (linear probing, at most 7/8
// full), for the report's per-sample lookups: the pair table (pair_table.h) and the GPU parts
// (frame_aggregation.cpp).
//
// Why not DenseIndex (dense_index.h): its slots hold ids into the caller's own vector of keys, so a
// lookup that finds its key reads two cache lines (the slot, then the key); here it reads one. The
// price is a slot as large as the entry, so it suits small entries (32 bytes) looked up tens of
// millions of times.
//
// Slot: default-constructed, it is free; `bool free() const` says whether it is; `uint64_t hash()
// const` gives its key's hash again when the table grows.
#pragma once
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace aiflame {

template <class Slot>
class SlotTable {
 public:
  // The slot for which match(slot) holds, probing from `hash`; or, when there is none, a free slot
  // set to make(), with fresh = true. A reference stays valid until the next find_or_add.
  template <class Match, class Make>
  std::pair<Slot&, bool> find_or_add(uint64_t hash, Match&& match, Make&& make) {
    if ((size_ + 1) * 8 > slots_.size() * 7) grow();
    const size_t mask = slots_.size() - 1;
    for (size_t i = hash & mask;; i = (i + 1) & mask) {
      Slot& s = slots_[i];
      if (s.free()) {
        s = make();
        size_++;
        return {s, true};
      }
      if (match(s)) return {s, false};
    }
  }
  // The slot for which match(slot) holds, or null.
  template <class Match>
  Slot* find(uint64_t hash, Match&& match) {
    if (slots_.empty()) return nullptr;
    const size_t mask = slots_.size() - 1;
    for (size_t i = hash & mask;; i = (i + 1) & mask) {
      Slot& s = slots_[i];
      if (s.free()) return nullptr;
      if (match(s)) return &s;
    }
  }
  size_t size() const { return size_; }
  template <class F>
  void for_each(F&& f) const {
    for (const Slot& s : slots_)
      if (!s.free()) f(s);
  }

 private:
  void grow() {
    std::vector<Slot> old(slots_.empty() ? 1024 : slots_.size() * 2);
    old.swap(slots_);
    const size_t mask = slots_.size() - 1;
    for (const Slot& s : old) {
      if (s.free()) continue;
      size_t i = s.hash() & mask;
      while (!slots_[i].free()) i = (i + 1) & mask;
      slots_[i] = s;
    }
  }
  std::vector<Slot> slots_;
  size_t size_ = 0;
};

}  // namespace aiflame
