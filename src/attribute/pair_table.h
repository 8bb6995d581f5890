// The (launch stack, GPU part) pairs of a report's attributed samples, each with its two frame lists
// and, while it alone feeds them, their weights (frame_aggregation.cpp).
//
// Every attributed sample (tens of millions in a long profile) looks its pair up among 10^5-10^6
// pairs, so each lookup misses the cache: the entries are the slots of a SlotTable, 32 bytes each,
// one line read per lookup (slot_table.h).
#pragma once
#include <cstdint>
#include <stdexcept>

#include "attribute/dense_index.h"
#include "attribute/slot_table.h"

namespace aiflame {

class PairTable {
 public:
  static constexpr uint32_t kNoList = ~0u;
  static constexpr uint64_t kEmpty = ~0ull;
  struct Entry {
    uint64_t key = kEmpty;  // the caller's (stack << 32 | GPU part id); kEmpty in a free slot
    uint32_t list[2] = {kNoList, kNoList};  // kNoList until made; the caller's flags in the high bit
    double weight[2] = {0.0, 0.0};
    bool free() const { return key == kEmpty; }
    uint64_t hash() const { return PairTable::hash(key); }
  };

  // The entry of `key`, added with no lists and zero weights when new. A reference stays valid until
  // the next find_or_add.
  Entry& find_or_add(uint64_t key) {
    if (key == kEmpty) throw std::length_error("pair key out of range");
    return table_.find_or_add(hash(key), [key](const Entry& e) { return e.key == key; }, [key] { return Entry{key}; })
        .first;
  }
  // The entry of `key`, or null.
  Entry* find(uint64_t key) {
    return table_.find(hash(key), [key](const Entry& e) { return e.key == key; });
  }
  size_t size() const { return table_.size(); }
  template <class F>
  void for_each(F&& f) const {
    table_.for_each(f);
  }

 private:
  static uint64_t hash(uint64_t key) { return dense_hash_mix(0, key); }
  SlotTable<Entry> table_;
};

}  // namespace aiflame
