// splitmix64's finalizer (Steele, Lea and Flood): a cheap bijection of 64-bit words whose output bits
// each depend on every input bit. Used to spread hashes (output/svg_writer.cpp), to derive the walk
// memos' fingerprint keys (record/unwind/unwinder.cpp) and to pick the launch A/B's slices
// (record/launch_ab.h).
#pragma once
#include <cstdint>

namespace aiflame {

constexpr uint64_t splitmix64_mix(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

}  // namespace aiflame
