// The HTML report's size is bounded whatever the length of the run: the timeline is one entry per
// stack, device and heatmap cell, and at most kMaxHtmlTimelineEntries (the thinnest stacks leave
// the timeline first, never the picture).
#include <gtest/gtest.h>

#include <sstream>

#include "output/html_writer.h"

namespace aiflame {
namespace {

FlameData many_cells(uint32_t stacks, uint32_t seconds) {
  FlameData d;
  d.summary.interval_ms = 10;
  for (uint32_t s = 0; s < stacks; s++) d.stacks.push_back({{{"p", FrameKind::Process}, {"f" + std::to_string(s), FrameKind::Native}}, 0});
  for (uint64_t ms = 0; ms < uint64_t{seconds} * 1000; ms++)
    for (uint32_t s = 0; s < stacks; s++) {
      double w = s + 1.0;  // stack s weighs s + 1 per ms: stack 0 is the thinnest
      d.timeline.push_back({s, 0, ms * 1000000 + 250000, w});
      d.stacks[s].count += static_cast<uint64_t>(w);
    }
  return d;
}

TEST(HtmlBound, SamplesOfOneCellAreOneEntry) {
  FlameData d = many_cells(2, 1);  // 1000 ms x 2 stacks = 2000 timeline entries
  HtmlTimeline t = html_timeline(d);
  ASSERT_EQ(t.quadruples.size(), 4u * 2 * 100);  // 100 cells of 10 ms
  EXPECT_EQ(t.left_out_stacks, 0u);
  // The first entry: stack 0, GPU 0, cell 0 ms, 10 samples of 1 ms each.
  EXPECT_EQ(t.quadruples[0], 0);
  EXPECT_EQ(t.quadruples[2], 0);
  EXPECT_EQ(t.quadruples[3], 10);
  EXPECT_EQ(t.quadruples[4 * 2 + 2], 10);  // the next cell starts at 10 ms
  double sum = 0;
  for (size_t i = 3; i < t.quadruples.size(); i += 4) sum += t.quadruples[i];
  EXPECT_EQ(sum, 1000 * (1 + 2));
}

TEST(HtmlBound, ThinnestStacksLeaveTheTimelineFirst) {
  FlameData d = many_cells(10, 1);  // 10 stacks x 100 cells = 1000 entries
  HtmlTimeline t = html_timeline(d, {}, 450);
  EXPECT_LE(t.quadruples.size() / 4, 450u);
  EXPECT_EQ(t.left_out_stacks, 6u);  // stacks 0..5 (100 entries each) leave: 400 are left
  for (size_t i = 0; i < t.quadruples.size(); i += 4) EXPECT_GE(t.quadruples[i], 6);
  EXPECT_NEAR(t.left_out_share, (1 + 2 + 3 + 4 + 5 + 6) / 55.0, 1e-9);
}

// Past kMaxHtmlTimelineEntries (1-ms cells here: 1001 stacks x 1000 ms) the page says what it left out.
TEST(HtmlBound, PageSaysWhatTheTimelineLeavesOut) {
  FlameData d;
  d.summary.interval_ms = 1;
  const uint32_t stacks = kMaxHtmlTimelineEntries / 1000 + 1;
  for (uint32_t s = 0; s < stacks; s++) d.stacks.push_back({{{"f" + std::to_string(s), FrameKind::Native}}, 1000});
  d.timeline.reserve(size_t{stacks} * 1000);
  for (uint64_t ms = 0; ms < 1000; ms++)
    for (uint32_t s = 0; s < stacks; s++) d.timeline.push_back({s, 0, ms * 1000000, 1});
  std::ostringstream out;
  HtmlWriter().write(d, out);
  EXPECT_NE(out.str().find("time ranges leave out the 1 thinnest stacks"), std::string::npos);
}

// 20 s of 100 stacks sampled every ms: 2 million timeline entries at 1 ms, 200,000 once per cell.
TEST(HtmlBound, PageSizeFollowsCellsNotSamples) {
  FlameData d = many_cells(100, 20);
  std::ostringstream out;
  HtmlWriter().write(d, out);
  EXPECT_LT(out.str().size(), size_t{8} << 20);  // was about 80 MB
}

// Frames under the minimum share merge into their parent, as the SVG draws them: A;B;D and A;E are
// thin below B and A; A;B;C is not, and A;B;C;F ends at a node (C) where a stack ends.
TEST(HtmlBound, ThinFramesMergeIntoTheirParent) {
  //                                     A  B  C      A  B  D     A  E     A  B  C  F
  std::vector<std::vector<uint32_t>> ids = {{0, 1, 2}, {0, 1, 3}, {0, 4}, {0, 1, 2, 5}};
  std::vector<uint64_t> counts = {100000, 1, 1, 2};
  std::vector<uint32_t> order = {0, 3, 1, 2};  // sorted by ids
  ThinStacks t = merge_thin_stacks(ids, order, counts, 1e-3);
  ASSERT_EQ(t.of.size(), 4u);
  EXPECT_EQ(t.of[0], 0u);
  EXPECT_EQ(t.of[3], 0u);  // F is thin: cut after C, where stack 0 ends
  ASSERT_EQ(t.added.size(), 2u);
  EXPECT_EQ(t.added[0], (std::vector<uint32_t>{0, 1}));  // D is thin: cut after B
  EXPECT_EQ(t.of[1], 4u);
  EXPECT_EQ(t.added[1], (std::vector<uint32_t>{0}));  // E is thin: cut after A
  EXPECT_EQ(t.of[2], 5u);
  EXPECT_EQ(t.added_from, (std::vector<uint32_t>{1, 2}));
  // Nothing thin at a share of 0: every stack is its own.
  ThinStacks all = merge_thin_stacks(ids, order, counts, 0);
  EXPECT_EQ(all.of, (std::vector<uint32_t>{0, 1, 2, 3}));
  EXPECT_TRUE(all.added.empty());
}

}  // namespace
}  // namespace aiflame
