// The (launch stack, GPU part) pairs of a report's attributed samples, each with its two frame lists
// and, while it alone feeds them, their weights (frame_aggregation.cpp).
//
// Why not DenseIndex with a vector of entries: every attributed sample (tens of millions in a long
// profile) looks its pair up among 10^5-10^6 pairs, so each lookup misses the cache; a table of ids
// into a vector of entries misses twice (the slot, then the entry). Here the entries are the slots,
// 32 bytes each: one line read per lookup.
#pragma once
#include <cstdint>
#include <stdexcept>
#include <vector>

#include "attribute/dense_index.h"

namespace aiflame {

class PairTable {
 public:
  static constexpr uint32_t kNoList = ~0u;
  struct Entry {
    uint64_t key;       // the caller's (stack << 32 | GPU part id); kEmpty in a free slot
    uint32_t list[2];   // kNoList until made; the caller's flags in the high bit
    double weight[2];
  };
  static constexpr uint64_t kEmpty = ~0ull;

  // The entry of `key`, added with no lists and zero weights when new. A reference stays valid until
  // the next find_or_add.
  Entry& find_or_add(uint64_t key) {
    if (key == kEmpty) throw std::length_error("pair key out of range");
    if ((size_ + 1) * 8 > slots_.size() * 7) grow();
    const size_t mask = slots_.size() - 1;
    for (size_t i = hash(key) & mask;; i = (i + 1) & mask) {
      Entry& e = slots_[i];
      if (e.key == key) return e;
      if (e.key == kEmpty) {
        e = {key, {kNoList, kNoList}, {0.0, 0.0}};
        size_++;
        return e;
      }
    }
  }
  // The entry of `key`, or null.
  Entry* find(uint64_t key) {
    if (slots_.empty()) return nullptr;
    const size_t mask = slots_.size() - 1;
    for (size_t i = hash(key) & mask;; i = (i + 1) & mask) {
      Entry& e = slots_[i];
      if (e.key == key) return &e;
      if (e.key == kEmpty) return nullptr;
    }
  }
  size_t size() const { return size_; }
  template <class F>
  void for_each(F&& f) const {
    for (const Entry& e : slots_)
      if (e.key != kEmpty) f(e);
  }

 private:
  static uint64_t hash(uint64_t key) { return dense_hash_mix(0, key); }
  void grow() {
    std::vector<Entry> old(slots_.empty() ? 1024 : slots_.size() * 2, Entry{kEmpty, {kNoList, kNoList}, {0.0, 0.0}});
    old.swap(slots_);
    const size_t mask = slots_.size() - 1;
    for (const Entry& e : old) {
      if (e.key == kEmpty) continue;
      size_t i = hash(e.key) & mask;
      while (slots_[i].key != kEmpty) i = (i + 1) & mask;
      slots_[i] = e;
    }
  }
  std::vector<Entry> slots_;
  size_t size_ = 0;
};

}  // namespace aiflame
