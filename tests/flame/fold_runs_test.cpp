// Folding runs of unsymbolized library frames (flame/fold_runs.h).
#include "flame/fold_runs.h"

#include <gtest/gtest.h>

namespace aiflame {
namespace {

std::vector<Frame> native(std::initializer_list<const char*> names) {
  std::vector<Frame> v;
  for (const char* n : names) v.push_back({n, FrameKind::Native});
  return v;
}

TEST(FoldRuns, LibraryOfAnUnsymbolizedFrame) {
  EXPECT_EQ(unsymbolized_library("[libcublasLt.so.13+0x715819d]"), "libcublasLt.so.13");
  EXPECT_EQ(unsymbolized_library("[libstdc++.so.6+0xecdb3]"), "libstdc++.so.6");
  EXPECT_EQ(unsymbolized_library("cublasLtMatmul"), "");
  EXPECT_EQ(unsymbolized_library("[libx.so+0x]"), "");
  EXPECT_EQ(unsymbolized_library("[libx.so+0xzz]"), "");
  EXPECT_EQ(unsymbolized_library("[cuda graph]"), "");
}

TEST(FoldRuns, RunsOfThreeOrMoreOfOneLibraryBecomeOneFrame) {
  auto got = fold_library_runs(native({"main", "[libA.so+0x1]", "[libA.so+0x2]", "[libA.so+0x3]", "[libB.so+0x4]",
                                       "[libB.so+0x5]", "[libA.so+0x6]", "[libA.so+0x7]", "[libA.so+0x8]",
                                       "[libA.so+0x9]", "leaf"}));
  std::vector<std::string> names;
  for (const auto& f : got) names.push_back(f.name);
  EXPECT_EQ(names, (std::vector<std::string>{"main", "[libA.so: 3 frames]", "[libB.so+0x4]", "[libB.so+0x5]",
                                             "[libA.so: 4 frames]", "leaf"}));
  // Frames of other kinds (GPU, Python) are never folded, nor runs across kinds.
  std::vector<Frame> mixed = native({"[libA.so+0x1]", "[libA.so+0x2]"});
  mixed.push_back({"[libA.so+0x3]", FrameKind::Runtime});
  EXPECT_EQ(fold_library_runs(mixed).size(), 3u);
}

TEST(FoldRuns, StacksThatDifferOnlyInOffsetsBecomeEqualAndKeepTheirCounts) {
  FlameData d;
  d.stacks.push_back({native({"p", "[libA.so+0x1]", "[libA.so+0x2]", "[libA.so+0x3]", "k"}), 5});
  d.stacks.push_back({native({"p", "[libA.so+0x7]", "[libA.so+0x8]", "[libA.so+0x9]", "k"}), 2});
  d.cpu_stacks.push_back(native({"p", "[libA.so+0x1]", "[libA.so+0x2]", "[libA.so+0x3]"}));
  fold_library_runs(d);
  EXPECT_EQ(d.stacks[0].frames, d.stacks[1].frames);
  EXPECT_EQ(d.stacks[0].frames.size(), 3u);
  EXPECT_EQ(d.total(), 7u);
  EXPECT_EQ(d.cpu_stacks[0].size(), 2u);
}

}  // namespace
}  // namespace aiflame
