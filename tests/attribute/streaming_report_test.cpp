// The streaming report path (profile read without its batches, batches streamed through the
// Attributor into the FrameBuilder's aggregator) against the whole-profile path, on the recorded
// fixtures: the same stats, the same stacks with the same counts, the same folded bytes.
#include <gtest/gtest.h>

#include <set>
#include <sstream>

#include "attribute/profile_flame.h"
#include "output/folded_writer.h"
#include "profile/profile_writer.h"
#include "symbolize/symbolizer.h"
#include "test_util.h"

namespace aiflame {
namespace {

std::string data_path(const std::string& name) { return std::string(AIFLAME_SOURCE_DIR) + "/tests/data/" + name; }

// "demo_matmul" -> demo_matmul.aiflame; names of a job's profiles ("mpi/mpi.aiflame.643") stay as they are.
std::string fixture_path(const std::string& name) {
  return data_path(name.find(".aiflame") == std::string::npos ? name + ".aiflame" : name);
}

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

// The streamed picture of the profile file at `path` against the whole-profile path.
void expect_same_as_whole(const std::string& path, const FrameOptions& options) {
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
  EXPECT_EQ(streamed->stats.exact, res.stats.exact);
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
    EXPECT_EQ(got.stacks[i].process, expected.stacks[i].process) << "stack " << i;
  }
  ASSERT_EQ(got.timeline.size(), expected.timeline.size());
  for (size_t i = 0; i < got.timeline.size(); i++) {
    EXPECT_EQ(got.timeline[i].stack, expected.timeline[i].stack);
    EXPECT_EQ(got.timeline[i].device, expected.timeline[i].device);
    EXPECT_EQ(got.timeline[i].time_ns, expected.timeline[i].time_ns);
    EXPECT_EQ(got.timeline[i].weight, expected.timeline[i].weight);
  }
  ASSERT_EQ(got.kernels.size(), expected.kernels.size());
  for (size_t i = 0; i < got.kernels.size(); i++) {
    EXPECT_EQ(got.kernels[i].name, expected.kernels[i].name);
    EXPECT_EQ(got.kernels[i].device, expected.kernels[i].device);
    EXPECT_EQ(got.kernels[i].start_ns, expected.kernels[i].start_ns);
    EXPECT_EQ(got.kernels[i].cpu_stack, expected.kernels[i].cpu_stack);
    EXPECT_EQ(got.kernels[i].process, expected.kernels[i].process);
  }
  EXPECT_EQ(got.cpu_stacks, expected.cpu_stacks);
  EXPECT_EQ(got.duration_ns, expected.duration_ns);
  // The profile's process row (main's per-process table and HTML rows).
  ASSERT_EQ(got.processes.size(), 1u);
  ASSERT_EQ(expected.processes.size(), 1u);
  const ProcessRow &gr = got.processes[0], &er = expected.processes[0];
  EXPECT_EQ(gr.name, er.name);
  EXPECT_EQ(gr.host, er.host);
  EXPECT_EQ(gr.pid, er.pid);
  EXPECT_EQ(gr.rank, er.rank);
  EXPECT_EQ(gr.devices, er.devices);
  EXPECT_EQ(gr.samples, er.samples);
  EXPECT_EQ(gr.attributed_percent, er.attributed_percent);
  EXPECT_EQ(gr.launches, er.launches);
  EXPECT_EQ(gr.kernels, er.kernels);
  EXPECT_EQ(gr.seconds, er.seconds);
  EXPECT_EQ(gr.busy_seconds, er.busy_seconds);
  EXPECT_EQ(folded(got), folded(expected));
}

TEST_P(StreamingReport, MatchesTheWholeProfilePath) {
  FrameOptions options;
  options.group_by = GetParam().group_by;
  options.stalls = GetParam().stalls;
  expect_same_as_whole(fixture_path(GetParam().fixture), options);
}

INSTANTIATE_TEST_SUITE_P(Fixtures, StreamingReport,
                         ::testing::Values(Case{"demo_matmul", GroupBy::Process, StallLeaves::All},
                                           Case{"gpt_train", GroupBy::Process, StallLeaves::All},
                                           Case{"graph_replay", GroupBy::Process, StallLeaves::All},
                                           Case{"split_streams", GroupBy::Device, StallLeaves::Issued},
                                           Case{"gpt_train", GroupBy::None, StallLeaves::NotIssued},
                                           Case{"demo_matmul", GroupBy::Rank, StallLeaves::None},
                                           // Fixtures recorded later: with SASS, source lines, 2 GPUs, ranks.
                                           Case{"demo_matmul_unfinalized", GroupBy::Process, StallLeaves::All},
                                           Case{"triton_loop", GroupBy::Process, StallLeaves::All},
                                           Case{"multigpu", GroupBy::Device, StallLeaves::All},
                                           Case{"multigpu", GroupBy::Process, StallLeaves::Issued},
                                           Case{"mpi/mpi.aiflame.643", GroupBy::Rank, StallLeaves::All},
                                           Case{"mpi/mpi.aiflame.644", GroupBy::Rank, StallLeaves::NotIssued},
                                           Case{"ddp/ddp.aiflame.607", GroupBy::Rank, StallLeaves::All}));

// Windows mode: samples that carry their launch's correlation id are attributed exactly, by the
// streaming Attributor as by the whole-profile path (no recorded fixture has such samples).
TEST(StreamingReport, ExactAttributionByCorrelationId) {
  constexpr uint32_t kLongScoreboard = 3, kLongScoreboardNotIssued = 4;
  std::string path = test::temp_path("windows.aiflame");
  ProfileWriter w;
  std::string error;
  ASSERT_TRUE(w.open(path, true, &error)) << error;
  ProcessRecord pr;
  pr.pid = 42;
  pr.command = "python train.py";
  pr.start_timestamp = 100'000'000;
  pr.interval_ms = 10;
  pr.pc_mode = 1;
  w.add(pr);
  for (auto [id, text] : std::vector<std::pair<uint32_t, std::string>>{
           {1, "_Z4gemmv"}, {2, "train.py"}, {3, "forward"}, {4, "backward"}, {5, "step"}})
    w.add(StringRecord{id, text});
  w.add(StallReasonsRecord{0, {{kLongScoreboard, "smsp__pcsamp_warps_issue_stalled_long_scoreboard"},
                               {kLongScoreboardNotIssued, "smsp__pcsamp_warps_issue_stalled_long_scoreboard_not_issued"}}});
  w.add(StackRecord{1, {}, {{2, 3, 10}}});
  w.add(StackRecord{2, {}, {{2, 4, 20}}});
  w.add(StackRecord{3, {}, {{2, 5, 30}}});
  auto launch = [&](uint32_t corr, uint32_t stack, uint64_t start, uint64_t end, bool kernel) {
    w.add(LaunchRecord{corr, 1, start, stack, 307, true, 0});
    if (!kernel) return;  // its kernel record was lost
    KernelRecord k;
    k.correlation_id = corr;
    k.start = start;
    k.end = end;
    k.name = 1;
    w.add(k);
  };
  launch(1, 1, 110'000'000, 140'000'000, true);   // 30 ms of gemm from stack 1
  launch(2, 2, 150'000'000, 160'000'000, true);   // 10 ms of gemm from stack 2
  launch(3, 3, 165'000'000, 170'000'000, false);  // a launch whose kernel record was lost
  PcBatchRecord b;
  b.prev_timestamp = 120'000'000;
  b.timestamp = 200'000'000;
  // Launch 2's kernel took 400 samples, launch 3's 50; 7 of an unknown launch; 30 without an id.
  b.samples = {{1, 0, 0x10, kLongScoreboard, 400, 2},
               {1, 0, 0x10, kLongScoreboardNotIssued, 100, 2},
               {1, 0, 0x20, kLongScoreboard, 50, 3},
               {1, 0, 0x30, kLongScoreboard, 7, 99},
               {1, 0, 0x40, kLongScoreboard, 30, 0}};
  w.add(b);
  w.add(EndRecord{210'000'000});
  ASSERT_TRUE(w.close()) << w.error();

  for (StallLeaves stalls : {StallLeaves::All, StallLeaves::NotIssued}) {
    FrameOptions options;
    options.stalls = stalls;
    expect_same_as_whole(path, options);
  }
  auto streamed = flame_from_profile_file(path, FrameOptions{});
  ASSERT_TRUE(streamed.ok()) << streamed.error();
  EXPECT_EQ(streamed->stats.samples, 487u);
  EXPECT_NEAR(streamed->stats.exact, 450.0, 1e-9);
  EXPECT_NEAR(streamed->stats.attributed, 480.0, 1e-9);  // the 30 without an id split over stacks 1 and 2
  std::string f = folded(streamed->flame);
  EXPECT_NE(f.find("backward"), std::string::npos) << f;
  EXPECT_NE(f.find("step"), std::string::npos) << f;
  std::remove(path.c_str());
}

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
