// splitmix64's finalizer (Steele, Lea and Flood): a cheap bijection of 64-bit words whose output bits
// each depend on every input bit. Used to spread hashes (output/svg_writer.cpp, the stack contents'
// hash in record/stack_capture.cpp) and to pick the launch and callback A/Bs' slices
// (record/measure/launch_ab.h, record/measure/callback_ab.h).
#pragma once
#include <cstdint>

namespace aiflame {

constexpr uint64_t splitmix64_mix(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

}  // namespace aiflame
