// PairTable against a std::unordered_map, and the FrameBuilder's weights of lists that several pairs
// feed (a pair sums its list's weight itself only while it alone feeds it).
#include "attribute/pair_table.h"

#include <gtest/gtest.h>

#include <map>
#include <random>
#include <unordered_map>

#include "attribute/frame_builder.h"

namespace aiflame {
namespace {

TEST(PairTable, FindsWhatItAddedAcrossGrowth) {
  PairTable t;
  std::unordered_map<uint64_t, double> want;
  std::mt19937_64 rng(3);
  for (int i = 0; i < 200000; i++) {
    // Keys as the report makes them (stack << 32 | GPU part), clustered so that probes collide.
    uint64_t key = (rng() % 3000) << 32 | (rng() % 64);
    PairTable::Entry& e = t.find_or_add(key);
    EXPECT_EQ(e.key, key);
    e.weight[1] += 1;
    want[key] += 1;
  }
  EXPECT_EQ(t.size(), want.size());
  size_t seen = 0;
  t.for_each([&](const PairTable::Entry& e) {
    seen++;
    EXPECT_EQ(e.weight[1], want.at(e.key));
    EXPECT_EQ(e.list[0], PairTable::kNoList);
  });
  EXPECT_EQ(seen, want.size());
  for (const auto& [key, w] : want) {
    ASSERT_NE(t.find(key), nullptr);
    EXPECT_EQ(t.find(key)->weight[1], w);
  }
  EXPECT_EQ(t.find(uint64_t{5000} << 32), nullptr);
  EXPECT_THROW(t.find_or_add(PairTable::kEmpty), std::length_error);
}

// Three cubins hold the same kernel: the same instruction of each spells the same frames, so three
// pairs feed one list. Counts must equal the weights summed per list, whichever pair came first and
// however the samples interleave, in both lists of a pair (the stall leaf's and the plain one).
TEST(PairTable, ListsFedBySeveralPairsKeepEveryWeight) {
  Profile p;
  p.strings = {{4, "_Z4gemmPf"}};
  p.stall_reasons.push_back({0, {{3, "smsp__pcsamp_warps_issue_stalled_long_scoreboard"}}});
  std::mt19937 rng(5);
  for (int round = 0; round < 20; round++) {
    Symbolizer sym(p.modules);
    FrameOptions opt;
    opt.stalls = StallLeaves::Issued;  // issued samples end in the stall leaf, the rest at the instruction
    opt.times = false;
    FrameBuilder fb(p, sym, opt);
    AttributionResult r;
    std::map<std::pair<uint64_t, bool>, uint64_t> want;  // (PC, with stall leaf) -> samples
    for (int i = 0; i < 300; i++) {
      AttributedSample a;
      a.function = 4;
      a.code_object_id = 0xA0 + rng() % 3;
      a.pc_offset = 0x10 * (1 + rng() % 2);
      a.stall_reason = 3;
      a.weight = 1 + rng() % 4;
      a.not_issued = rng() % 3 == 0 ? rng() % static_cast<unsigned>(a.weight + 1) : 0;
      if (a.weight - a.not_issued > 0) want[{a.pc_offset, true}] += static_cast<uint64_t>(a.weight - a.not_issued);
      if (a.not_issued > 0) want[{a.pc_offset, false}] += static_cast<uint64_t>(a.not_issued);
      r.samples.push_back(a);
    }
    FlameData d = fb.build(r);
    std::map<std::pair<uint64_t, bool>, uint64_t> got;
    for (const auto& s : d.stacks) {
      if (!s.count) continue;
      bool stall = s.frames.back().kind == FrameKind::Stall;
      std::string ins = s.frames[s.frames.size() - (stall ? 2 : 1)].name;
      uint64_t pc = ins.find("0x10") != std::string::npos ? 0x10 : ins.find("0x20") != std::string::npos ? 0x20 : 0;
      ASSERT_NE(pc, 0u) << ins;
      EXPECT_EQ(got.count({pc, stall}), 0u) << "one line per PC and leaf: " << ins;
      got[{pc, stall}] += s.count;
    }
    EXPECT_EQ(got, want) << "round " << round;
  }
}

}  // namespace
}  // namespace aiflame
