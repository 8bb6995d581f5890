// The GPU part of a stack: kernel, source lines and inlined functions, instruction, stall reason.
#include <gtest/gtest.h>

#include "attribute/frame_builder.h"

#include <map>
#include <set>

namespace aiflame {
namespace {

constexpr uint64_t kCubin = 0xc0b1;
constexpr uint32_t kKernel = 4, kLongScoreboard = 3, kSelected = 5;

Profile gpu_profile() {
  Profile p;
  ProcessRecord pr;
  pr.command = "./app";
  p.process = pr;
  p.strings = {{kKernel, "_Z4gemmPf"}};
  p.stall_reasons.push_back({0, {{kLongScoreboard, "smsp__pcsamp_warps_issue_stalled_long_scoreboard"},
                                 {kSelected, "smsp__pcsamp_warps_issue_stalled_selected"}}});
  // 0x1a0: inside outer() inlined at gemm.cu:11, at line 6 of it; 0x1b0: no line; 0x1c0: plain line.
  p.gpu_lines[{kCubin, kKernel, 0x1a0}] = {{"", "/src/gemm.cu", 11}, {"_Z5outerf", "/src/gemm.cu", 6}};
  p.gpu_lines[{kCubin, kKernel, 0x1b0}] = {};
  p.gpu_lines[{kCubin, kKernel, 0x1c0}] = {{"", "/src/gemm.cu", 12}};
  p.gpu_sass[{kCubin, kKernel, 0x1a0}] = "LDG.E.128";
  return p;
}

std::vector<std::string> gpu_part(const WeightedStack& s) {
  std::vector<std::string> n;
  bool after = false;
  for (const auto& f : s.frames) {
    if (after) n.push_back(f.name);
    if (f.kind == FrameKind::Separator) after = true;
  }
  return n;
}

AttributedSample sample(uint64_t pc, uint32_t reason, double weight, double not_issued = 0) {
  AttributedSample a{0, kKernel, kCubin, pc, reason, 0, weight};
  a.not_issued = not_issued;
  return a;
}

TEST(GpuFrames, LinesInlinedFunctionsAndMnemonicBetweenKernelAndStall) {
  Profile p = gpu_profile();
  Symbolizer sym({});
  FrameBuilder fb(p, sym, {});
  AttributionResult r;
  r.samples = {sample(0x1a0, kLongScoreboard, 3), sample(0x1b0, kSelected, 2), sample(0x1c0, kSelected, 1)};
  FlameData d = fb.build(r);
  std::set<std::vector<std::string>> got;
  for (const auto& s : d.stacks) got.insert(gpu_part(s));
  EXPECT_EQ(got, (std::set<std::vector<std::string>>{
                     {"gemm", "gemm.cu:11", "outer", "gemm.cu:6", "LDG.E.128 0x1a0", "long_scoreboard"},
                     {"gemm", "0x1b0", "selected"},
                     {"gemm", "gemm.cu:12", "0x1c0", "selected"}}));
  for (const auto& s : d.stacks)
    for (size_t i = 0; i < s.frames.size(); i++) {
      const auto& f = s.frames[i];
      if (f.name.find("gemm.cu") == 0 || f.name == "outer") {
        EXPECT_EQ(f.kind, FrameKind::GpuSource) << f.name;
      }
      if (f.name.find("0x") != std::string::npos) {
        EXPECT_EQ(f.kind, FrameKind::GpuInstruction) << f.name;
      }
    }
  EXPECT_EQ(fb.gpu_stats().samples, 6u);
  EXPECT_EQ(fb.gpu_stats().samples_without_lines, 2u);
}

// What each --stall-reasons choice puts at the leaf; the totals never change.
TEST(GpuFrames, StallLeavesSplitIssuedFromNotIssued) {
  Profile p = gpu_profile();
  AttributionResult r;
  r.samples = {sample(0x1c0, kLongScoreboard, 10, 4), sample(0x1c0, kSelected, 6, 0)};
  auto leaves = [&](StallLeaves mode) {
    Symbolizer sym({});
    FrameOptions opt;
    opt.stalls = mode;
    FrameBuilder fb(p, sym, opt);
    FlameData d = fb.build(r);
    EXPECT_EQ(d.total(), 16u);
    std::map<std::string, uint64_t> m;
    for (const auto& s : d.stacks)
      if (s.count) m[s.frames.back().name] += s.count;
    return m;
  };
  using M = std::map<std::string, uint64_t>;
  EXPECT_EQ(leaves(StallLeaves::All), (M{{"long_scoreboard", 10}, {"selected", 6}}));
  EXPECT_EQ(leaves(StallLeaves::NotIssued), (M{{"long_scoreboard", 4}, {"0x1c0", 12}}));
  EXPECT_EQ(leaves(StallLeaves::Issued), (M{{"long_scoreboard", 6}, {"selected", 6}, {"0x1c0", 4}}));
  EXPECT_EQ(leaves(StallLeaves::None), (M{{"0x1c0", 16}}));
  EXPECT_EQ(parse_stall_leaves("not-issued"), StallLeaves::NotIssued);
  EXPECT_FALSE(parse_stall_leaves("some").has_value());
}

// Without stored records, lines come from the cubin image kept in the profile.
TEST(GpuFrames, DerivedFromTheCubinImageWhenNothingIsStored) {
  // The demo as recorded before GpuLine and SASS records existed (cubins only).
  auto p = read_profile(std::string(AIFLAME_SOURCE_DIR) + "/tests/data/demo_matmul_unfinalized.aiflame");
  ASSERT_TRUE(p.ok());
  ASSERT_TRUE(p->gpu_lines.empty());
  AttributionResult r = attribute_samples(*p);
  Symbolizer sym({});
  FrameBuilder fb(*p, sym, {});
  FlameData d = fb.build(r);
  EXPECT_EQ(fb.gpu_stats().samples_without_lines, 0u);
  for (const auto& s : d.stacks) {
    auto g = gpu_part(s);
    ASSERT_EQ(g.size(), 4u);  // kernel, line, offset, stall
    EXPECT_EQ(g[1].rfind("matmul.cu:", 0), 0u) << g[1];
  }
}

}  // namespace
}  // namespace aiflame
