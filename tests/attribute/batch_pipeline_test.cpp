// attribute_batches: the two-thread pipeline hands the caller the same batches, in the same order,
// with the same samples as the one-thread loop; errors and exceptions on either side reach the caller.
#include <gtest/gtest.h>

#include <stdexcept>

#include "attribute/batch_pipeline.h"
#include "profile/profile.h"
#include "profile/profile_writer.h"
#include "test_util.h"

namespace aiflame {
namespace {

std::string fixture(const std::string& name) { return std::string(AIFLAME_SOURCE_DIR) + "/tests/data/" + name; }

// A profile of `batches` PC batches, 10 ms apart, with kernel "_Z1kv" run from two launch stacks in
// turn: many more batches than the pipeline keeps in flight.
std::string many_batches(int batches) {
  std::string path = test::temp_path("many_batches.aiflame");
  ProfileWriter w;
  std::string error;
  EXPECT_TRUE(w.open(path, true, &error)) << error;
  ProcessRecord pr;
  pr.pid = 7;
  pr.command = "train";
  pr.start_timestamp = 1'000'000;
  pr.interval_ms = 10;
  w.add(pr);
  for (auto [id, text] : std::vector<std::pair<uint32_t, std::string>>{{1, "_Z1kv"}, {2, "t.py"}, {3, "a"}, {4, "b"}})
    w.add(StringRecord{id, text});
  w.add(StallReasonsRecord{0, {{1, "smsp__pcsamp_warps_issue_stalled_selected"}}});
  w.add(StackRecord{1, {}, {{2, 3, 10}}});
  w.add(StackRecord{2, {}, {{2, 4, 20}}});
  uint64_t t = 2'000'000;
  for (int i = 0; i < batches; i++) {
    for (uint32_t j = 0; j < 4; j++) {  // four 2-ms kernels per 10 ms, stacks 1 2 1 2
      uint32_t corr = static_cast<uint32_t>(4 * i) + j + 1;
      w.add(LaunchRecord{corr, 1, t, 1 + j % 2, 307, false, 0});
      KernelRecord k;
      k.correlation_id = corr;
      k.start = t + 100'000;
      k.end = k.start + 2'000'000;
      k.name = 1;
      w.add(k);
      t += 2'500'000;
    }
    PcBatchRecord b;
    b.prev_timestamp = t - 10'000'000;
    b.timestamp = t;
    b.samples = {{1, 0, 0x10, 1, static_cast<uint32_t>(3 + i % 5), 0}, {1, 0, 0x20, 1, 2, 0}};
    w.add(b);
  }
  w.add(EndRecord{t + 1'000'000});
  EXPECT_TRUE(w.close()) << w.error();
  return path;
}

struct Seen {
  std::vector<uint32_t> devices;
  std::vector<size_t> sizes;
  std::vector<AttributedSample> samples;
  AttributionStats stats;
};

Seen run(const std::string& path, unsigned threads) {
  auto p = read_profile(path, BatchReading::Skip);
  EXPECT_TRUE(p.ok()) << p.error();
  Attributor attributor(*p);
  Seen seen;
  Status st = attribute_batches(
      path, attributor,
      [&](uint32_t device, std::span<const AttributedSample> samples) {
        seen.devices.push_back(device);
        seen.sizes.push_back(samples.size());
        seen.samples.insert(seen.samples.end(), samples.begin(), samples.end());
      },
      threads);
  EXPECT_TRUE(st.ok()) << st.error();
  seen.stats = attributor.stats();
  return seen;
}

class BatchPipeline : public ::testing::TestWithParam<const char*> {};

TEST_P(BatchPipeline, TwoThreadsGiveWhatOneThreadGives) {
  const std::string path = fixture(GetParam());
  Seen one = run(path, 1), two = run(path, 2);
  ASSERT_GT(one.devices.size(), 0u);
  EXPECT_EQ(two.devices, one.devices);
  EXPECT_EQ(two.sizes, one.sizes);
  ASSERT_EQ(two.samples.size(), one.samples.size());
  for (size_t i = 0; i < one.samples.size(); i++) {
    const AttributedSample &a = one.samples[i], &b = two.samples[i];
    ASSERT_EQ(b.stack_id, a.stack_id) << i;
    ASSERT_EQ(b.function, a.function) << i;
    ASSERT_EQ(b.code_object_id, a.code_object_id) << i;
    ASSERT_EQ(b.pc_offset, a.pc_offset) << i;
    ASSERT_EQ(b.stall_reason, a.stall_reason) << i;
    ASSERT_EQ(b.device, a.device) << i;
    ASSERT_EQ(b.weight, a.weight) << i;
    ASSERT_EQ(b.not_issued, a.not_issued) << i;
    ASSERT_EQ(b.time_ns, a.time_ns) << i;
  }
  EXPECT_EQ(two.stats.samples, one.stats.samples);
  EXPECT_EQ(two.stats.attributed, one.stats.attributed);
  EXPECT_EQ(two.stats.in_window, one.stats.in_window);
}

// Recorded fixtures (multigpu has batches of two devices).
INSTANTIATE_TEST_SUITE_P(Fixtures, BatchPipeline, ::testing::Values("gpt_train.aiflame", "multigpu.aiflame",
                                                                     "demo_matmul.aiflame"));

// 1,000 batches: the worker runs ahead until the hand-over queue is full and then waits for room.
TEST(BatchPipelineMany, TwoThreadsGiveWhatOneThreadGives) {
  const std::string path = many_batches(1000);
  Seen one = run(path, 1), two = run(path, 2);
  ASSERT_EQ(one.devices.size(), 1000u);
  ASSERT_EQ(one.samples.size(), two.samples.size());
  double w1 = 0;
  for (size_t i = 0; i < one.samples.size(); i++) {
    ASSERT_EQ(two.samples[i].stack_id, one.samples[i].stack_id) << i;
    ASSERT_EQ(two.samples[i].weight, one.samples[i].weight) << i;
    ASSERT_EQ(two.samples[i].time_ns, one.samples[i].time_ns) << i;
    if (one.samples[i].stack_id == 1) w1 += one.samples[i].weight;
  }
  EXPECT_GT(w1, 0);  // both stacks got samples: the split is real, not one stack's
  EXPECT_LT(w1, one.stats.attributed);
  EXPECT_EQ(two.stats.attributed, one.stats.attributed);
  std::remove(path.c_str());
}

TEST(BatchPipelineErrors, AConsumerExceptionStopsTheWorkerAndReachesTheCaller) {
  const std::string path = many_batches(1000);
  auto p = read_profile(path, BatchReading::Skip);
  ASSERT_TRUE(p.ok()) << p.error();
  for (unsigned threads : {1u, 2u}) {
    Attributor attributor(*p);
    int calls = 0;
    EXPECT_THROW(attribute_batches(
                     path, attributor,
                     [&](uint32_t, std::span<const AttributedSample>) {
                       if (++calls == 3) throw std::runtime_error("consumer failed");
                     },
                     threads),
                 std::runtime_error)
        << threads << " threads";
    EXPECT_EQ(calls, 3);
  }
  std::remove(path.c_str());
}

TEST(BatchPipelineErrors, AnUnreadableFileIsAnErrorOnBothPaths) {
  auto p = read_profile(fixture("demo_matmul.aiflame"), BatchReading::Skip);
  ASSERT_TRUE(p.ok());
  for (unsigned threads : {1u, 2u}) {
    Attributor attributor(*p);
    Status st = attribute_batches(
        fixture("no_such_profile.aiflame"), attributor, [](uint32_t, std::span<const AttributedSample>) {},
        threads);
    EXPECT_FALSE(st.ok()) << threads << " threads";
  }
}

}  // namespace
}  // namespace aiflame
