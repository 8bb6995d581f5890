// Numbers distinct keys 0, 1, 2... in the order they are first seen: an open-addressing hash table of
// slots only, while the caller keeps the keys themselves (in a vector by id, or packed in an arena).
//
// Why not std::unordered_map: a report looks up every attributed sample (millions) in tables of
// 10^4-10^5 keys; a node-based map costs an allocation per key and a pointer chase per lookup, which
// made these lookups the largest cost of `aiflame report`.
// Here a lookup reads one 8-byte slot (the key's hash tag and id) and compares the key only when the
// tags agree.
#pragma once
#include <cstdint>
#include <utility>
#include <vector>

namespace aiflame {

class DenseIndex {
 public:
  // The id of the key whose hash is `hash` and for which same(id) holds; or, when there is none, the
  // next id (== size() before the call), with fresh = true: the caller then stores the key under it.
  template <class Same>
  std::pair<uint32_t, bool> find_or_add(uint64_t hash, Same&& same) {
    if ((size_ + 1) * 2 > slots_.size()) grow();
    const uint64_t tag = hash >> 32;
    const size_t mask = slots_.size() - 1;
    for (size_t i = tag & mask;; i = (i + 1) & mask) {
      const uint64_t s = slots_[i];
      if (s == 0) {
        slots_[i] = (tag << 32) | (size_ + 1);
        return {size_++, true};
      }
      if ((s >> 32) == tag && same(static_cast<uint32_t>(s) - 1)) return {static_cast<uint32_t>(s) - 1, false};
    }
  }
  uint32_t size() const { return size_; }

 private:
  // The slot's position comes from the tag alone, so growing needs no key and no hash again.
  void grow() {
    std::vector<uint64_t> old(slots_.empty() ? 64 : slots_.size() * 2, 0);
    old.swap(slots_);
    const size_t mask = slots_.size() - 1;
    for (uint64_t s : old) {
      if (!s) continue;
      size_t i = (s >> 32) & mask;
      while (slots_[i]) i = (i + 1) & mask;
      slots_[i] = s;
    }
  }
  std::vector<uint64_t> slots_;  // 0: empty; else (hash >> 32) << 32 | (id + 1)
  uint32_t size_ = 0;
};

// A 64-bit mix whose high half depends on every input bit (DenseIndex places keys by the high half).
inline uint64_t dense_hash_mix(uint64_t h, uint64_t v) {
  h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
  h *= 0xbf58476d1ce4e5b9ULL;
  h ^= h >> 29;
  h *= 0x94d049bb133111ebULL;
  return h ^ (h >> 32);
}

}  // namespace aiflame
