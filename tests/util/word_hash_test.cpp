// LaneHash (the Python frames' hash that a launch's memo and key rest on): one differing word always
// changes it, and frame lists of different lengths get different hashes.
#include "util/word_hash.h"

#include <gtest/gtest.h>

#include <random>
#include <vector>

namespace aiflame {
namespace {

uint64_t lane_hash(const std::vector<uint64_t>& words) {
  LaneHash h;
  for (size_t i = 0; i + 1 < words.size(); i += 2) h.pair(words[i], words[i + 1]);
  return h.finish(words.size());
}

// The pairs a walk hashes: a code object's address (8-aligned) and a byte offset.
std::vector<uint64_t> frames(std::mt19937_64& rng, size_t n) {
  std::vector<uint64_t> w;
  for (size_t i = 0; i < n; i++) {
    w.push_back(0x7f0000000000ull + (rng() & 0xffffffff0ull));
    w.push_back(rng() & 0xfffe);
  }
  return w;
}

TEST(LaneHash, OneDifferingWordAlwaysChangesIt) {
  std::mt19937_64 rng(22);
  for (int trial = 0; trial < 20000; trial++) {
    std::vector<uint64_t> a = frames(rng, 1 + rng() % 40);
    std::vector<uint64_t> b = a;
    const size_t at = rng() % a.size();
    // Differences of every size, with up to 63 trailing zero bits (a lane's sum multiplied by an even
    // number would lose them).
    uint64_t delta = rng() << (rng() % 64);
    if (!delta) delta = uint64_t{1} << 63;
    b[at] += delta;
    ASSERT_NE(lane_hash(a), lane_hash(b)) << "word " << at << " of " << a.size() << ", delta " << delta;
  }
}

TEST(LaneHash, ListsOfOtherLengthsDiffer) {
  std::mt19937_64 rng(23);
  for (int trial = 0; trial < 20000; trial++) {
    std::vector<uint64_t> a = frames(rng, 1 + rng() % 40);
    std::vector<uint64_t> b = a;
    b.resize(b.size() - 2);  // the outermost frame dropped
    ASSERT_NE(lane_hash(a), lane_hash(b));
    b = a;
    b.insert(b.end(), {0, 0});  // a frame of zeros added: the lanes move only by their multiplier
    ASSERT_NE(lane_hash(a), lane_hash(b));
  }
  EXPECT_NE(LaneHash{}.finish(0), LaneHash{}.finish(2));
}

}  // namespace
}  // namespace aiflame
