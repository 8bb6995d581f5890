// How many mutants of a profile get past the reader (profile_mutator.h against single bit flips): not a test,
// a measurement. Build after run_fuzzers.sh:
//   clang++ -std=c++20 -O1 -fsanitize=address,undefined -DFMT_HEADER_ONLY=1 -Isrc -Itests/fuzz -I/usr/local/cuda/include \
//     tests/fuzz/mutator_yield.cpp build-fuzz/libcore_fuzz.a -ldw -lelf -lzstd -lz -o build-fuzz/mutator_yield
//   build-fuzz/mutator_yield tests/data/demo_matmul.aiflame
#include <cstdio>
#include <fstream>
#include <sstream>
#include <random>
#include "profile/profile.h"
#include "profile_mutator.h"
static std::mt19937 g(1);
extern "C" size_t LLVMFuzzerMutate(uint8_t* d, size_t n, size_t max) {  // one bit flip: the stand-in for libFuzzer's byte mutators
  if (n) d[g() % n] ^= 1u << (g() % 8);
  return n;
}
int main(int argc, char** argv) {
  std::ifstream f(argv[1]);
  std::stringstream ss; ss << f.rdbuf();
  std::string seed = ss.str();
  int ok_struct = 0, ok_flip = 0, n = 1000, differ = 0;
  for (int i = 0; i < n; i++) {
    std::string b = seed; b.resize(seed.size() * 2 + 4096);
    size_t len = LLVMFuzzerCustomMutator(reinterpret_cast<uint8_t*>(b.data()), seed.size(), b.size(), i);
    b.resize(len);
    differ += b != seed;
    if (aiflame::parse_profile(b, "x").ok()) ok_struct++;
    std::string c = seed;
    LLVMFuzzerMutate(reinterpret_cast<uint8_t*>(c.data()), c.size(), c.size());
    if (aiflame::parse_profile(c, "x").ok()) ok_flip++;
  }
  printf("structure-aware: %d of %d mutants differ from the seed, %d parse; one bit flip: %d parse\n", differ, n, ok_struct, ok_flip);
}
