// The windows of a duty-cycled recording merged into one picture: the time between them is kept as
// "not recorded" (FlameData::recorded), and the heatmap draws it grey rather than as an idle GPU.
#include <gtest/gtest.h>

#include <sstream>

#include "flame/flame_merge.h"
#include "output/heatmap_writer.h"

namespace aiflame {
namespace {

FlameData window(uint64_t start_ns, uint64_t duration_ns) {
  FlameData d;
  d.stacks.push_back({{{"p", FrameKind::Process}, {"-", FrameKind::Separator}, {"k", FrameKind::GpuKernel}}, 5});
  d.timeline.push_back({0, 0, duration_ns / 2, 5});
  d.start_ns = start_ns;
  d.duration_ns = duration_ns;
  return d;
}

TEST(RecordedGaps, MergedWindowsKeepTheirSpans) {
  const uint64_t s = 1'000'000'000;
  FlameData all;
  merge_flame(all, window(100 * s, s / 2));  // 0 - 0.5 s
  merge_flame(all, window(103 * s, s));      // 3 - 4 s
  merge_flame(all, window(106 * s, s));      // 6 - 7 s
  ASSERT_EQ(all.recorded.size(), 3u);
  EXPECT_EQ(all.recorded[0], (std::pair<uint64_t, uint64_t>{0, s / 2}));
  EXPECT_EQ(all.recorded[1], (std::pair<uint64_t, uint64_t>{3 * s, 4 * s}));
  EXPECT_EQ(all.recorded[2], (std::pair<uint64_t, uint64_t>{6 * s, 7 * s}));
  EXPECT_EQ(all.duration_ns, 7 * s);

  std::ostringstream out;
  HeatmapWriter().write(all, out);
  const std::string svg = out.str();
  // Seconds 1, 2, 4 and 5 are whole columns no window touched; second 0's second half is unrecorded.
  for (const char* t : {">1 s: not recorded", ">2 s: not recorded", ">4 s: not recorded", ">5 s: not recorded",
                        ">0 s + 500-1000 ms: not recorded"})
    EXPECT_NE(svg.find(t), std::string::npos) << t;
  EXPECT_EQ(svg.find(">3 s: not recorded"), std::string::npos);
  EXPECT_EQ(svg.find(">6 s: not recorded"), std::string::npos);
}

TEST(RecordedGaps, OverlappingProfilesLeaveNoGap) {
  const uint64_t s = 1'000'000'000;
  FlameData all;
  merge_flame(all, window(100 * s, 4 * s));
  merge_flame(all, window(102 * s, 4 * s));  // two processes of one job, side by side
  EXPECT_TRUE(all.recorded.empty());
  std::ostringstream out;
  HeatmapWriter().write(all, out);
  EXPECT_EQ(out.str().find("unrecorded"), std::string::npos);
}

}  // namespace
}  // namespace aiflame
