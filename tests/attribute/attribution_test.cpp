#include "attribute/attribution.h"

#include <gtest/gtest.h>

#include <map>
#include <random>

namespace aiflame {
namespace {

constexpr uint32_t kLongScoreboard = 3, kLongScoreboardNotIssued = 4;

Profile base_profile() {
  Profile p;
  ProcessRecord pr;
  pr.interval_ms = 10;
  p.process = pr;
  p.strings = {{1, "_Z4gemmv"}, {2, "_Z4reluv"}};
  p.stall_reasons.push_back({0, {{kLongScoreboard, "smsp__pcsamp_warps_issue_stalled_long_scoreboard"},
                                 {kLongScoreboardNotIssued, "smsp__pcsamp_warps_issue_stalled_long_scoreboard_not_issued"}}});
  return p;
}

void add_launch(Profile& p, uint32_t corr, uint32_t stack, uint32_t fn, uint64_t start, uint64_t end, uint32_t device = 0,
                int32_t blocks = 0) {
  p.launches.push_back(LaunchRecord{corr, 1, start, stack, 307, true});
  KernelRecord k;
  k.correlation_id = corr; k.start = start; k.end = end; k.device = device; k.name = fn;
  k.grid[0] = blocks; k.grid[1] = k.grid[2] = blocks ? 1 : 0;
  p.kernels.push_back(k);
}

std::map<uint32_t, double> by_stack(const AttributionResult& r) {
  std::map<uint32_t, double> m;
  for (const auto& s : r.samples) m[s.stack_id] += s.weight;
  return m;
}

TEST(Attribution, SplitsByGpuTimeInsideTheWindow) {
  Profile p = base_profile();
  // Inside the batch window [100ms, 200ms]: stack 1 runs 30 ms, stack 2 runs 10 ms of gemm.
  add_launch(p, 1, 1, 1, 110'000'000, 140'000'000);
  add_launch(p, 2, 2, 1, 150'000'000, 160'000'000);
  PcBatchRecord b;
  b.prev_timestamp = 120'000'000;  // window starts 20 ms (the lag) earlier: 100 ms
  b.timestamp = 200'000'000;
  b.samples = {{1, 0, 0x10, kLongScoreboard, 400, 0}};
  p.batches.push_back(b);
  auto r = attribute_samples(p);
  auto m = by_stack(r);
  EXPECT_NEAR(m[1], 300.0, 1e-9);
  EXPECT_NEAR(m[2], 100.0, 1e-9);
  EXPECT_EQ(r.stats.samples, 400u);
  EXPECT_NEAR(r.stats.percent_attributed(), 100.0, 1e-9);
  EXPECT_NEAR(r.stats.in_window, 400.0, 1e-9);
}

TEST(Attribution, ClipsExecutionsToTheWindow) {
  Profile p = base_profile();
  add_launch(p, 1, 1, 1, 0, 150'000'000);            // overlaps the window [100, 200] by 50 ms
  add_launch(p, 2, 2, 1, 150'000'000, 200'000'000);  // 50 ms
  add_launch(p, 3, 3, 1, 300'000'000, 400'000'000);  // after the window: no share
  PcBatchRecord b;
  b.prev_timestamp = 120'000'000;
  b.timestamp = 200'000'000;
  b.samples = {{1, 0, 0x10, kLongScoreboard, 10, 0}};
  p.batches.push_back(b);
  auto m = by_stack(attribute_samples(p, 20'000'000));  // a lag of 20 ms: the window is [100, 200]
  EXPECT_NEAR(m[1], 5.0, 1e-9);
  EXPECT_NEAR(m[2], 5.0, 1e-9);
  EXPECT_EQ(m.count(3), 0u);
}

TEST(Attribution, NotIssuedReasonsAreNeverCountedTwice) {
  Profile p = base_profile();
  add_launch(p, 1, 1, 1, 100'000'000, 200'000'000);
  PcBatchRecord b;
  b.prev_timestamp = 120'000'000;
  b.timestamp = 200'000'000;
  b.samples = {{1, 0, 0x10, kLongScoreboard, 50, 0}, {1, 0, 0x10, kLongScoreboardNotIssued, 20, 0}};
  p.batches.push_back(b);
  auto r = attribute_samples(p);
  EXPECT_EQ(r.stats.samples, 50u);
  EXPECT_NEAR(by_stack(r)[1], 50.0, 1e-9);
}

// Each count keeps its not-issued subset (same kernel, PC and reason) beside it, split like the count.
TEST(Attribution, NotIssuedSubsetTravelsWithItsReason) {
  Profile p = base_profile();
  add_launch(p, 1, 1, 1, 100'000'000, 150'000'000);
  add_launch(p, 2, 2, 1, 150'000'000, 200'000'000);
  PcBatchRecord b;
  b.prev_timestamp = 120'000'000;
  b.timestamp = 200'000'000;
  b.samples = {{1, 0, 0x10, kLongScoreboard, 50, 0}, {1, 0, 0x10, kLongScoreboardNotIssued, 20, 0},
               {1, 0, 0x20, kLongScoreboard, 8, 0}};  // another PC: no not-issued samples
  p.batches.push_back(b);
  auto r = attribute_samples(p);
  double at_10 = 0, idle_10 = 0, idle_20 = 0;
  for (const auto& s : r.samples) {
    EXPECT_LE(s.not_issued, s.weight + 1e-9);
    if (s.pc_offset == 0x10) { at_10 += s.weight; idle_10 += s.not_issued; }
    if (s.pc_offset == 0x20) idle_20 += s.not_issued;
    if (s.pc_offset == 0x10) {
      EXPECT_NEAR(s.not_issued / s.weight, 20.0 / 50.0, 1e-9);
    }
  }
  EXPECT_NEAR(at_10, 50.0, 1e-9);
  EXPECT_NEAR(idle_10, 20.0, 1e-9);
  EXPECT_EQ(idle_20, 0.0);
}

TEST(Attribution, NoExecutionInTheWindowFallsBackToTheWholeRun) {
  Profile p = base_profile();
  add_launch(p, 1, 1, 1, 0, 3'000'000);              // 3 ms
  add_launch(p, 2, 2, 1, 900'000'000, 901'000'000);  // 1 ms
  PcBatchRecord b;
  b.prev_timestamp = 500'000'000;
  b.timestamp = 510'000'000;
  b.samples = {{1, 0, 0x10, kLongScoreboard, 8, 0}};
  p.batches.push_back(b);
  auto r = attribute_samples(p, 20'000'000);  // the window [480, 510] ms holds no execution
  auto m = by_stack(r);
  EXPECT_NEAR(m[1], 6.0, 1e-9);
  EXPECT_NEAR(m[2], 2.0, 1e-9);
  EXPECT_NEAR(r.stats.attributed, 8.0, 1e-9);
  EXPECT_NEAR(r.stats.in_window, 0.0, 1e-9);
}

// profile_reader_fuzz under UBSan (tests/fuzz/corpus/profile_reader/nan_share.aiflame): a kernel at
// the clock's last nanosecond (start = end = 2^64-1) has no duration, so its stack's share of the
// whole run was 0 and its time 0/0, a NaN cast to an integer (undefined behaviour; the ASan+UBSan
// build stops there), and a zero-weight sample of that stack came out.
TEST(Attribution, KernelWithoutDurationHasNoShare) {
  Profile p = base_profile();
  add_launch(p, 1, 1, 1, 0, 3'000'000);
  add_launch(p, 2, 2, 1, UINT64_MAX, UINT64_MAX);
  PcBatchRecord b;
  b.prev_timestamp = 500'000'000;
  b.timestamp = 510'000'000;
  b.samples = {{1, 0, 0x10, kLongScoreboard, 8, 0}};
  p.batches.push_back(b);
  auto r = attribute_samples(p, 20'000'000);  // no execution in the window: the whole run's shares
  auto m = by_stack(r);
  EXPECT_NEAR(m[1], 8.0, 1e-9);
  EXPECT_EQ(m.count(2), 0u);
  for (const auto& s : r.samples) EXPECT_GT(s.weight, 0) << s.stack_id;
}

// CUPTI hands samples out about every 100 ms while aiflame polls every 10 ms: the polls in between
// come back empty. A batch's samples ran since the previous batch that had samples (minus the lag),
// not since the previous poll.
TEST(Attribution, WindowStartsAtThePreviousBatchThatHadSamples) {
  Profile p = base_profile();
  add_launch(p, 1, 1, 1, 20'000'000, 60'000'000);    // stack 1: 40 ms, early in the 100 ms
  add_launch(p, 2, 2, 1, 190'000'000, 200'000'000);  // stack 2: 10 ms, just before the delivery
  PcBatchRecord first;  // a delivery at 0 ms, then empty polls every 10 ms
  first.prev_timestamp = 0;
  first.timestamp = 1;
  first.samples = {{2, 0, 0x20, kLongScoreboard, 1, 0}};
  p.batches.push_back(first);
  PcBatchRecord b;
  b.prev_timestamp = 190'000'000;  // the empty poll before it
  b.timestamp = 200'000'000;
  b.samples = {{1, 0, 0x10, kLongScoreboard, 50, 0}};
  p.batches.push_back(b);
  auto m = by_stack(attribute_samples(p, 5'000'000));
  // Window [0, 200]: 40 ms against 10 ms. From the last poll it would have been [185, 200]: all to stack 2.
  EXPECT_NEAR(m[1], 40.0, 1e-9);
  EXPECT_NEAR(m[2], 10.0, 1e-9);
  EXPECT_NEAR(m[0], 1.0, 1e-9);  // relu: no execution, unattributed
}

// Without a lag given, a batch reaches 200 ms back (two of CUPTI's 100-ms decode periods).
TEST(Attribution, DefaultLagCoversTwoDecodePeriods) {
  Profile p = base_profile();
  add_launch(p, 1, 1, 1, 400'000'000, 410'000'000);  // 190-180 ms before the batch's window
  add_launch(p, 2, 2, 1, 600'000'000, 610'000'000);
  PcBatchRecord b;
  b.prev_timestamp = 590'000'000;
  b.timestamp = 620'000'000;
  b.samples = {{1, 0, 0x10, kLongScoreboard, 20, 0}};
  p.batches.push_back(b);
  auto m = by_stack(attribute_samples(p));
  EXPECT_NEAR(m[1], 10.0, 1e-9);
  EXPECT_NEAR(m[2], 10.0, 1e-9);
}

// The same kernel on two streams at once shares the GPU: each instant counts half for each of the two
// running, so the overlap does not count twice against the kernel running alone.
TEST(Attribution, ConcurrentExecutionsOfOneKernelShareTheirOverlap) {
  Profile p = base_profile();
  add_launch(p, 1, 1, 1, 100'000'000, 140'000'000);  // stack 1: 40 ms, alone for 20 of them
  add_launch(p, 2, 2, 1, 120'000'000, 140'000'000);  // stack 2: 20 ms, all beside stack 1
  add_launch(p, 3, 3, 1, 150'000'000, 170'000'000);  // stack 3: 20 ms alone
  PcBatchRecord b;
  b.prev_timestamp = 100'000'000;
  b.timestamp = 200'000'000;
  b.samples = {{1, 0, 0x10, kLongScoreboard, 60, 0}};
  p.batches.push_back(b);
  auto m = by_stack(attribute_samples(p, 1));
  // GPU time: stack 1 20 + 10 = 30 ms, stack 2 10 ms, stack 3 20 ms (by duration: 40, 20, 20).
  EXPECT_NEAR(m[1], 30.0, 1e-9);
  EXPECT_NEAR(m[2], 10.0, 1e-9);
  EXPECT_NEAR(m[3], 20.0, 1e-9);
}

// The thin arrangement (issue #24; bench_kernels split thin): path_heavy's grid of one block per SM
// runs three times beside path_light's 4-block grid, which lasts 33 times as long on another stream.
// Samples follow SMs held x time, so with the SM count recorded the heavy path gets 3 x 132 parts to
// the light path's 4 x 33 less what the overlap takes (the 136 SMs wanted get 132); by time alone it
// would get 1.5 ms of 33.
constexpr uint32_t kSms = 132;
constexpr uint64_t kMs = 1'000'000;

Profile thin_round(uint32_t sm_count, uint64_t light_start) {
  Profile p = base_profile();
  p.stall_reasons[0].sm_count = sm_count;
  for (uint32_t i = 0; i < 3; i++) add_launch(p, 1 + i, 1, 1, 100 * kMs + i * kMs, 101 * kMs + i * kMs, 0, kSms);
  add_launch(p, 4, 2, 1, light_start, light_start + 33 * kMs, 0, 4);
  PcBatchRecord b;
  b.prev_timestamp = 100 * kMs;
  b.timestamp = 300 * kMs;
  b.samples = {{1, 0, 0x10, kLongScoreboard, 1000, 0}};
  p.batches.push_back(b);
  return p;
}

TEST(Attribution, ThinExecutionsBesideAFullGridCountTheirSMs) {
  auto m = by_stack(attribute_samples(thin_round(kSms, 100 * kMs), 1));
  double shared = kSms / 136.0;  // 132 + 4 SMs wanted for the 3 ms they overlap
  double heavy = 3 * kSms * shared, light = 3 * 4 * shared + 30 * 4;
  EXPECT_NEAR(m[1], 1000 * heavy / (heavy + light), 1e-4);  // share is a float
  EXPECT_NEAR(m[1] / 1000, 0.745, 0.005);
  EXPECT_NEAR(m[1] + m[2], 1000.0, 1e-6);
}

TEST(Attribution, ThinExecutionsApartCountTheirSMs) {
  auto m = by_stack(attribute_samples(thin_round(kSms, 110 * kMs), 1));
  EXPECT_NEAR(m[1], 1000.0 * 3 * kSms / (3 * kSms + 33 * 4), 1e-6);  // 75 : 25
}

TEST(Attribution, WithoutTheSmCountTimeAloneSplitsAsBefore) {
  auto m = by_stack(attribute_samples(thin_round(0, 100 * kMs), 1));
  EXPECT_NEAR(m[1], 1000.0 * 1.5 / 33, 1e-6);  // 3 ms shared half and half of light's 33
  m = by_stack(attribute_samples(thin_round(0, 110 * kMs), 1));
  EXPECT_NEAR(m[1], 1000.0 * 3 / 36, 1e-6);
}

// With the device's SM limits and each kernel's block recorded, the block-scheduler model weighs the
// executions (block_scheduler.h). Issue 65's arrangement: two full grids of 1,024 blocks of 256
// threads on two streams, the heavy one (3x the work per block) launched first; the light one gets
// the 32 slots the heavy one leaves, then the GPU. The SMs x time rule read 62% on the H100 for it.
Profile with_h100_limits(Profile p) {
  StallReasonsRecord& d = p.stall_reasons[0];
  d.sm_count = kSms, d.max_threads_per_sm = 2048, d.max_blocks_per_sm = 32, d.registers_per_sm = 65536;
  d.shared_per_sm = 233472, d.shared_reserved_per_block = 1024;
  return p;
}
void add_grid(Profile& p, uint32_t corr, uint32_t stack, uint64_t start, uint64_t end, int32_t blocks, int32_t threads,
              uint32_t shared = 0) {
  add_launch(p, corr, stack, 1, start, end, 0, blocks);
  KernelRecord k;
  k.correlation_id = corr; k.start = start; k.end = end; k.name = 1;
  k.grid[0] = blocks; k.grid[1] = k.grid[2] = 1;
  k.block[0] = threads; k.block[1] = k.block[2] = 1;
  k.registers = 32; k.dynamic_shared = shared;
  p.kernels[p.kernels.size() - 1] = k;
}

TEST(Attribution, AFullGridLaunchedFirstKeepsItsShareBesideAnother) {
  Profile p = with_h100_limits(base_profile());
  add_grid(p, 1, 1, 100 * kMs, 103 * kMs, 1024, 256);            // heavy: 3 ms blocks
  add_grid(p, 2, 2, 100 * kMs + 10'000, 104 * kMs, 1024, 256);   // light: 1 ms blocks, after it
  PcBatchRecord b;
  b.prev_timestamp = 100 * kMs;
  b.timestamp = 300 * kMs;
  b.samples = {{1, 0, 0x10, kLongScoreboard, 1000, 0}};
  p.batches.push_back(b);
  auto r = attribute_samples(p, 1);
  auto m = by_stack(r);
  // By hand (block_scheduler_test): 384.04 : 143.96 SM-ms. Without the limits: about two thirds.
  EXPECT_NEAR(m[1], 1000 * 384.04 / 528.0, 1.0);
  EXPECT_NEAR(m[1] + m[2], 1000.0, 1e-6);
  p.stall_reasons[0].max_threads_per_sm = 0;
  EXPECT_LT(by_stack(attribute_samples(p, 1))[1], 680.0);
}

// The thin arrangement with the model: path_light's 4 blocks of 150 KB wait for path_heavy's first
// grid, then hold 4 SMs for 33 ms, and path_heavy's next grids run their last 4 blocks in a second wave.
TEST(Attribution, ThinBesideFullWithTheModelSplitsByWork) {
  Profile p = with_h100_limits(base_profile());
  add_grid(p, 1, 1, 100 * kMs, 101 * kMs, kSms, 256, 150'000);
  add_grid(p, 2, 2, 101 * kMs, 134 * kMs, 4, 256, 150'000);
  add_grid(p, 3, 1, 101 * kMs + 1, 103 * kMs, kSms, 256, 150'000);
  add_grid(p, 4, 1, 103 * kMs, 105 * kMs, kSms, 256, 150'000);
  PcBatchRecord b;
  b.prev_timestamp = 100 * kMs;
  b.timestamp = 300 * kMs;
  b.samples = {{1, 0, 0x10, kLongScoreboard, 1000, 0}};
  p.batches.push_back(b);
  EXPECT_NEAR(by_stack(attribute_samples(p, 1))[1], 750.0, 3.0);
}

// Every estimate is counted: a kernel from one stack is exact whatever overlaps it; a kernel from two
// stacks sharing the window is the model's, sample for sample.
TEST(Attribution, SamplesSplitBetweenStacksAreCountedAsEstimated) {
  Profile p = base_profile();
  add_launch(p, 1, 1, 1, 110 * kMs, 140 * kMs);
  add_launch(p, 2, 2, 1, 150 * kMs, 160 * kMs);
  add_launch(p, 3, 1, 2, 110 * kMs, 160 * kMs);  // relu: stack 1 only
  PcBatchRecord b;
  b.prev_timestamp = 120 * kMs;
  b.timestamp = 200 * kMs;
  b.samples = {{1, 0, 0x10, kLongScoreboard, 400, 0}, {2, 0, 0x20, kLongScoreboard, 100, 0}};
  p.batches.push_back(b);
  auto r = attribute_samples(p);
  EXPECT_NEAR(r.stats.estimated, 400.0, 1e-9);
  EXPECT_NEAR(r.stats.attributed, 500.0, 1e-9);
  for (const auto& s : r.samples) EXPECT_EQ(s.estimated, s.function == 1) << s.function;
}

// Step 3 of sm_time: beside path_light, path_heavy's grid runs in two waves and takes twice as long;
// it does no more work than alone, so each stretched execution weighs 132 SMs x its 1 ms alone.
TEST(Attribution, AStretchedExecutionWeighsNoMoreThanItsWorkAlone) {
  Profile p = base_profile();
  p.stall_reasons[0].sm_count = kSms;
  add_launch(p, 1, 1, 1, 100 * kMs, 101 * kMs, 0, kSms);  // alone: 1 ms
  for (uint32_t i = 0; i < 3; i++) add_launch(p, 2 + i, 1, 1, 102 * kMs + 2 * i * kMs, 104 * kMs + 2 * i * kMs, 0, kSms);
  add_launch(p, 5, 2, 1, 102 * kMs, 135 * kMs, 0, 4);  // 33 ms on 4 SMs
  PcBatchRecord b;
  b.prev_timestamp = 100 * kMs;
  b.timestamp = 300 * kMs;
  b.samples = {{1, 0, 0x10, kLongScoreboard, 1000, 0}};
  p.batches.push_back(b);
  auto m = by_stack(attribute_samples(p, 1));
  double shared = kSms / 136.0;
  double heavy = kSms * 1.0 + 3 * kSms * 1.0, light = 6 * 4 * shared + 27 * 4;  // capped: 1 ms each
  EXPECT_NEAR(m[1], 1000 * heavy / (heavy + light), 1e-3);
}

// Samples come out of CUPTI in the order they ran. Stacks 1 and 2 alternate 1-ms executions for 40 ms,
// then stack 2's go on alone for 100 ms, all at one rate of samples: the first batch (at 200 ms) holds
// the first 60 ms of samples, the second (at 300 ms) the last 80, stack 2's alone. Its lag window
// still holds stack 1's executions, which by weight alone would take a seventh of it; in order it is
// all stack 2's.
TEST(Attribution, BatchesTakeTheirFunctionsExecutionsInOrder) {
  Profile p = base_profile();
  uint32_t corr = 1;
  for (uint64_t t = 0; t < 40; t++) add_launch(p, corr++, 1 + t % 2, 1, 100 * kMs + t * kMs, 101 * kMs + t * kMs);
  for (uint64_t t = 40; t < 140; t++) add_launch(p, corr++, 2, 1, 100 * kMs + t * kMs, 101 * kMs + t * kMs);
  PcBatchRecord b1;
  b1.prev_timestamp = 190 * kMs;
  b1.timestamp = 200 * kMs;
  b1.samples = {{1, 0, 0x10, kLongScoreboard, 60, 0}};  // 20 of stack 1, 40 of stack 2
  PcBatchRecord b2 = b1;
  b2.prev_timestamp = 290 * kMs;
  b2.timestamp = 300 * kMs;
  b2.samples = {{1, 0, 0x10, kLongScoreboard, 80, 0}};  // stack 2's last 80
  p.batches = {b1, b2};
  Attributor a(p);  // the default lag: the second batch's window reaches back to 0
  std::vector<AttributedSample> first, second;
  a.add_batch(b1, first);
  a.add_batch(b2, second);
  auto sum = [](const std::vector<AttributedSample>& v) {
    std::map<uint32_t, double> m;
    for (const auto& s : v) m[s.stack_id] += s.weight;
    return m;
  };
  auto m1 = sum(first), m2 = sum(second);
  EXPECT_NEAR(m1[1], 20.0, 1e-6);
  EXPECT_NEAR(m1[2], 40.0, 1e-6);
  EXPECT_NEAR(m2[1], 0.0, 1e-6);
  EXPECT_NEAR(m2[2], 80.0, 1e-6);
  for (const auto& s : second) EXPECT_GE(s.time_ns, 160 * kMs);  // placed over the executions it took
}

// Property: grids that fill the device (or whose size is unknown) all want every SM, so recording the
// SM count changes no split among executions that do not overlap: the sequential and size arrangements
// of the 3:1 test keep the shares they had.
TEST(Attribution, PropertyFullGridsApartSplitAsWithoutTheSmCount) {
  std::mt19937_64 rng(777);
  for (int trial = 0; trial < 100; trial++) {
    Profile p = base_profile();
    uint64_t t = 0;
    for (uint32_t corr = 1; corr <= 30; corr++) {
      t += rng() % 10'000'000;
      int32_t blocks = rng() % 4 == 0 ? 0 : static_cast<int32_t>(kSms + rng() % 5000);
      uint64_t end = t + 1 + rng() % 20'000'000;
      add_launch(p, corr, static_cast<uint32_t>(1 + rng() % 4), 1, t, end, 0, blocks);
      t = end;
    }
    for (int i = 0; i < 10; i++) {
      PcBatchRecord b;
      b.prev_timestamp = rng() % 500'000'000;
      b.timestamp = b.prev_timestamp + rng() % 60'000'000;
      b.samples = {{1, 0, 0x10, kLongScoreboard, static_cast<uint32_t>(1 + rng() % 1000), 0}};
      p.batches.push_back(b);
    }
    auto before = by_stack(attribute_samples(p, 1));
    p.stall_reasons[0].sm_count = kSms;
    auto after = by_stack(attribute_samples(p, 1));
    for (const auto& [stack, w] : before) ASSERT_NEAR(after[stack], w, 1e-6 * (1 + w)) << "trial " << trial;
  }
}

TEST(Attribution, UnknownKernelIsKeptUnattributed) {
  Profile p = base_profile();
  add_launch(p, 1, 1, 1, 100'000'000, 200'000'000);
  PcBatchRecord b;
  b.prev_timestamp = 120'000'000;
  b.timestamp = 200'000'000;
  b.samples = {{2, 0, 0x20, kLongScoreboard, 7, 0}};  // relu never had an activity record
  p.batches.push_back(b);
  auto r = attribute_samples(p);
  ASSERT_EQ(r.samples.size(), 1u);
  EXPECT_EQ(r.samples[0].stack_id, 0u);
  EXPECT_EQ(r.samples[0].weight, 7.0);
  EXPECT_NEAR(r.stats.percent_attributed(), 0.0, 1e-9);
}

TEST(Attribution, DevicesAreKeptApart) {
  Profile p = base_profile();
  add_launch(p, 1, 1, 1, 100'000'000, 200'000'000, 0);
  add_launch(p, 2, 2, 1, 100'000'000, 200'000'000, 1);
  PcBatchRecord b;
  b.prev_timestamp = 120'000'000;
  b.timestamp = 200'000'000;
  b.device = 1;
  b.samples = {{1, 0, 0x10, kLongScoreboard, 9, 0}};
  p.batches.push_back(b);
  auto m = by_stack(attribute_samples(p));
  EXPECT_EQ(m.count(1), 0u);
  EXPECT_NEAR(m[2], 9.0, 1e-9);
}

// Property: for random runs, attribution never creates or loses samples, and every weight is
// non-negative.
TEST(Attribution, PropertyTotalsArePreserved) {
  std::mt19937_64 rng(12345);
  for (int trial = 0; trial < 200; trial++) {
    Profile p = base_profile();
    uint32_t corr = 1;
    int kernels = static_cast<int>(rng() % 40);
    for (int i = 0; i < kernels; i++) {
      uint64_t start = rng() % 1'000'000'000;
      add_launch(p, corr, static_cast<uint32_t>(1 + rng() % 5), static_cast<uint32_t>(1 + rng() % 2), start,
                 start + rng() % 50'000'000, static_cast<uint32_t>(rng() % 2));
      corr++;
    }
    uint64_t expected = 0;
    for (int i = 0; i < 20; i++) {
      PcBatchRecord b;
      b.prev_timestamp = rng() % 1'000'000'000;
      b.timestamp = b.prev_timestamp + rng() % 30'000'000;
      b.device = static_cast<uint32_t>(rng() % 2);
      for (int s = 0; s < 5; s++) {
        uint32_t count = static_cast<uint32_t>(rng() % 100);
        uint32_t reason = rng() % 3 == 0 ? kLongScoreboardNotIssued : kLongScoreboard;
        if (reason == kLongScoreboard) expected += count;
        b.samples.push_back({static_cast<uint32_t>(1 + rng() % 2), 0, rng() % 64 * 16, reason, count, 0});
      }
      p.batches.push_back(b);
    }
    auto r = attribute_samples(p);
    double total = 0;
    for (const auto& s : r.samples) {
      ASSERT_GE(s.weight, 0.0);
      total += s.weight;
    }
    ASSERT_NEAR(total, static_cast<double>(expected), 1e-6 * (1 + expected)) << "trial " << trial;
    ASSERT_EQ(r.stats.samples, expected);
    ASSERT_LE(r.stats.attributed, static_cast<double>(expected) + 1e-6);
  }
}

}  // namespace
}  // namespace aiflame

namespace aiflame {
namespace {

// Windows mode: samples carrying a correlation id go to that launch only, whatever the time split
// would say, and take that execution's time; a lost kernel record still finds the launch record.
TEST(AttributionWindows, CorrelationIdsAttributeExactly) {
  Profile p = base_profile();
  add_launch(p, 1, 1, 1, 110'000'000, 140'000'000);  // 30 ms of gemm from stack 1
  add_launch(p, 2, 2, 1, 150'000'000, 160'000'000);  // 10 ms of gemm from stack 2
  p.launches.push_back(LaunchRecord{3, 1, 165'000'000, 3, 307, true});  // a launch whose kernel record was lost
  PcBatchRecord b;
  b.prev_timestamp = 120'000'000;
  b.timestamp = 200'000'000;
  // All 400 samples were taken in launch 2's kernel; 50 in launch 3's; 7 of an unknown launch.
  b.samples = {{1, 0, 0x10, kLongScoreboard, 400, 2},
               {1, 0, 0x10, kLongScoreboardNotIssued, 100, 2},
               {1, 0, 0x20, kLongScoreboard, 50, 3},
               {1, 0, 0x30, kLongScoreboard, 7, 99}};
  p.batches.push_back(b);
  auto r = attribute_samples(p);
  auto m = by_stack(r);
  EXPECT_EQ(m.count(1), 0u);
  EXPECT_NEAR(m[2], 400.0, 1e-9);
  EXPECT_NEAR(m[3], 50.0, 1e-9);
  EXPECT_NEAR(m[0], 7.0, 1e-9);
  EXPECT_EQ(r.stats.samples, 457u);
  EXPECT_NEAR(r.stats.exact, 450.0, 1e-9);
  EXPECT_NEAR(r.stats.attributed, 450.0, 1e-9);
  for (const auto& s : r.samples) {
    if (s.stack_id == 2) {
      EXPECT_EQ(s.time_ns, 155'000'000u);  // the middle of its own execution
      EXPECT_NEAR(s.not_issued, 100.0, 1e-9);
    }
  }
}

}  // namespace
}  // namespace aiflame
