// Hashes of a launch's stack: WordHash of its content's words (record/stack_capture.cpp), LaneHash of
// its Python frames, computed by the Python walk as it reads them (record/python_frames.cpp).
#pragma once
#include <cstddef>
#include <cstdint>

#include "util/splitmix.h"

namespace aiflame {

// 64-bit multiplicative mixing (splitmix64 finaliser) over a running hash.
inline uint64_t mix(uint64_t h, uint64_t v) {
  h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
  return splitmix64_mix(h);
}

// Two independent multiply-rotate chains over alternate words (a full mix per word was a third of the
// launch), finished by mix().
struct WordHash {
  uint64_t a = 0x243f6a8885a308d3ULL, b = 0x13198a2e03707344ULL;
  void pair(uint64_t even, uint64_t odd) {
    a = (a ^ even) * 0x9e3779b97f4a7c15ULL;
    b = (b ^ odd) * 0xff51afd7ed558ccdULL;
    a = (a << 29) | (a >> 35);
    b = (b << 31) | (b >> 33);
  }
  uint64_t finish(size_t n) const { return mix(mix(a, b), n); }
};

// The Python frames' hash (record/python_frames.cpp): each lane a polynomial in an odd multiplier
// (lane = lane * K + word), one multiply-add a word where WordHash takes a multiply, a xor and a rotate
// (the walk computes it inside its loop, where every instruction counts: issue 22). As the native
// memo's fingerprint (unwind/unwinder.cpp), one differing word always changes a lane (odd multipliers
// are invertible mod 2^64). The finish sums the lanes (b times an odd weight, so a lane that moved
// moves the sum) and the count, then mixes the sum once: a bijection, so a sum that moved moves the
// hash. Two mix() calls were 40 of a launch's instructions (callgrind).
struct LaneHash {
  static constexpr uint64_t kA = 0x9e3779b97f4a7c15ULL, kB = 0xff51afd7ed558ccdULL;
  static constexpr uint64_t kWeight = 0xc2b2ae3d27d4eb4fULL, kCount = 0x165667b19e3779f9ULL;
  uint64_t a = 0x243f6a8885a308d3ULL, b = 0x13198a2e03707344ULL;
  void pair(uint64_t even, uint64_t odd) {
    a = a * kA + even;
    b = b * kB + odd;
  }
  uint64_t finish(size_t n) const { return splitmix64_mix(a + b * kWeight + static_cast<uint64_t>(n) * kCount); }
};
static_assert((LaneHash::kA & LaneHash::kB & LaneHash::kWeight & 1) != 0,
              "odd multipliers and weight: one differing word always changes the hash");

}  // namespace aiflame
