// The streaming report path (profile read without its batches, batches streamed through the
// Attributor into the FrameBuilder's aggregator) against the whole-profile path, on the recorded
// fixtures: the same stats, the same stacks with the same counts, the same folded bytes.
#include <gtest/gtest.h>

#include <set>
#include <sstream>

#include "attribute/profile_flame.h"
#include "output/folded_writer.h"
#include "symbolize/symbolizer.h"

namespace aiflame {
namespace {

std::string data_path(const std::string& name) { return std::string(AIFLAME_SOURCE_DIR) + "/tests/data/" + name; }

std::string folded(const FlameData& d) {
  std::ostringstream out;
  FoldedWriter().write(d, out);
  return out.str();
}

struct Case {
  const char* fixture;
  GroupBy group_by;
  StallLeaves stalls;
};

class StreamingReport : public ::testing::TestWithParam<Case> {};

TEST_P(StreamingReport, MatchesTheWholeProfilePath) {
  std::string path = data_path(std::string(GetParam().fixture) + ".aiflame");
  FrameOptions options;
  options.group_by = GetParam().group_by;
  options.stalls = GetParam().stalls;
  auto whole = read_profile(path);
  ASSERT_TRUE(whole.ok()) << whole.error();
  ASSERT_FALSE(whole->batches.empty());
  AttributionResult res = attribute_samples(*whole);
  Symbolizer sym(whole->modules);
  FrameBuilder fb(*whole, sym, options);
  FlameData expected = fb.build(res);

  auto streamed = flame_from_profile_file(path, options);
  ASSERT_TRUE(streamed.ok()) << streamed.error();
  EXPECT_TRUE(streamed->profile.batches.empty());
  EXPECT_EQ(streamed->profile.batch_records, whole->batches.size());
  uint64_t last = 0;
  for (const auto& b : whole->batches) last = std::max(last, b.timestamp);
  EXPECT_EQ(streamed->profile.last_batch_timestamp, last);
  EXPECT_EQ(streamed->stats.samples, res.stats.samples);
  EXPECT_EQ(streamed->stats.dropped, res.stats.dropped);
  EXPECT_EQ(streamed->stats.attributed, res.stats.attributed);  // same additions in the same order
  EXPECT_EQ(streamed->stats.in_window, res.stats.in_window);
  EXPECT_EQ(streamed->gpu.samples, fb.gpu_stats().samples);
  EXPECT_EQ(streamed->gpu.samples_without_lines, fb.gpu_stats().samples_without_lines);
  std::set<uint32_t> devices;
  for (const auto& b : whole->batches) devices.insert(b.device);
  EXPECT_EQ(streamed->batch_devices, devices);

  const FlameData& got = streamed->flame;
  ASSERT_EQ(got.stacks.size(), expected.stacks.size());
  for (size_t i = 0; i < got.stacks.size(); i++) {
    EXPECT_EQ(got.stacks[i].frames, expected.stacks[i].frames) << "stack " << i;
    EXPECT_EQ(got.stacks[i].count, expected.stacks[i].count) << "stack " << i;
  }
  ASSERT_EQ(got.timeline.size(), expected.timeline.size());
  for (size_t i = 0; i < got.timeline.size(); i++) {
    EXPECT_EQ(got.timeline[i].stack, expected.timeline[i].stack);
    EXPECT_EQ(got.timeline[i].device, expected.timeline[i].device);
    EXPECT_EQ(got.timeline[i].time_ns, expected.timeline[i].time_ns);
    EXPECT_EQ(got.timeline[i].weight, expected.timeline[i].weight);
  }
  EXPECT_EQ(got.kernels.size(), expected.kernels.size());
  EXPECT_EQ(got.cpu_stacks, expected.cpu_stacks);
  EXPECT_EQ(got.duration_ns, expected.duration_ns);
  EXPECT_EQ(folded(got), folded(expected));
}

INSTANTIATE_TEST_SUITE_P(Fixtures, StreamingReport,
                         ::testing::Values(Case{"demo_matmul", GroupBy::Process, StallLeaves::All},
                                           Case{"gpt_train", GroupBy::Process, StallLeaves::All},
                                           Case{"graph_replay", GroupBy::Process, StallLeaves::All},
                                           Case{"split_streams", GroupBy::Device, StallLeaves::Issued},
                                           Case{"gpt_train", GroupBy::None, StallLeaves::NotIssued},
                                           Case{"demo_matmul", GroupBy::Rank, StallLeaves::None}));

// Writers that show no time get neither the timeline nor the kernel spans, and the same stacks.
TEST(StreamingReport, WithoutTimesKeepsTheStacks) {
  std::string path = data_path("demo_matmul.aiflame");
  auto with = flame_from_profile_file(path, FrameOptions{});
  FrameOptions no_times;
  no_times.times = false;
  auto without = flame_from_profile_file(path, no_times);
  ASSERT_TRUE(with.ok() && without.ok());
  EXPECT_FALSE(with->flame.timeline.empty());
  EXPECT_TRUE(without->flame.timeline.empty());
  EXPECT_TRUE(without->flame.kernels.empty());
  EXPECT_EQ(folded(with->flame), folded(without->flame));
}

TEST(StreamingReport, MissingFileIsOneLineError) {
  auto r = flame_from_profile_file("/nonexistent/x.aiflame", FrameOptions{});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().find("/nonexistent/x.aiflame"), std::string::npos);
}

}  // namespace
}  // namespace aiflame
