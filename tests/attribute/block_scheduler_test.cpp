#include "attribute/block_scheduler.h"

#include <gtest/gtest.h>

#include <numeric>
#include <random>

namespace aiflame {
namespace {

// An H100 SXM's SM, as cuDeviceGetAttribute gives it.
constexpr SmLimits kH100{132, 2048, 32, 65536, 233472, 1024};
constexpr uint64_t kUs = 1'000, kMs = 1'000'000;

GridRun grid(uint64_t start, uint64_t end, uint32_t blocks, uint32_t threads, uint32_t regs = 32, uint32_t shared = 0) {
  return {start, end, blocks, threads, regs, shared};
}

TEST(BlockScheduler, BlocksPerSmFollowTheScarcestResource) {
  EXPECT_EQ(blocks_per_sm(grid(0, 1, 1, 256), kH100), 8u);             // warps: 64 / 8
  EXPECT_EQ(blocks_per_sm(grid(0, 1, 1, 256, 128), kH100), 2u);        // registers: 65536 / (128 x 256)
  EXPECT_EQ(blocks_per_sm(grid(0, 1, 1, 256, 32, 150'000), kH100), 1u);  // shared memory
  EXPECT_EQ(blocks_per_sm(grid(0, 1, 1, 64), kH100), 32u);             // the block limit
  EXPECT_EQ(blocks_per_sm(grid(0, 1, 1, 1024), kH100), 2u);
  EXPECT_EQ(blocks_per_sm(grid(0, 1, 1, 0, 0), kH100), 32u);           // unknown: one warp, no registers
  EXPECT_EQ(blocks_per_sm(grid(0, 1, 1, 4096), kH100), 1u);            // never less than one
  // Registers go per warp in units of 256: 33 per thread take 40 x 32 per warp.
  EXPECT_EQ(blocks_per_sm(grid(0, 1, 1, 256, 33), kH100), 6u);
}

TEST(BlockScheduler, AnExecutionAloneHoldsTheSmsItsWavesFill) {
  auto w = expected_sm_time({grid(0, 10 * kMs, 1024, 256)}, kH100);  // one wave on every SM
  EXPECT_NEAR(w[0], 132.0 * 10 * kMs, 1.0);
  w = expected_sm_time({grid(0, 10 * kMs, 4, 256)}, kH100);  // 4 SMs
  EXPECT_NEAR(w[0], 4.0 * 10 * kMs, 1.0);
  w = expected_sm_time({grid(0, 10 * kMs, 1056 + 4, 256)}, kH100);  // a full wave, then 4 blocks
  EXPECT_NEAR(w[0], (132.0 + 4) * 5 * kMs, 1.0);
}

// Two identical grids one after another on one stream overlap by a few ns at the hand-over: the
// simulation (not the formula for a lone execution) must still give each its own SM time.
TEST(BlockScheduler, GridsOneAfterAnotherSplitByTheirWork) {
  auto w = expected_sm_time({grid(0, 3 * kMs, 1024, 256), grid(3 * kMs - 5, 4 * kMs, 1024, 256)}, kH100);
  EXPECT_NEAR(w[0] / (w[0] + w[1]), 0.75, 0.002);
}

// Issue 65's arrangement: two full grids of 1,024 blocks of 256 threads, the heavy one (3 ms blocks)
// launched first. It takes 1,024 of the 1,056 slots (8 a SM); the light one (1 ms blocks) gets the
// 32 left, then every SM when the heavy one ends. By hand: heavy 100 SMs x 3 ms + 32 SMs x 7/8 x
// 2.99 ms + 132 x 0.01 ms = 384.04 SM-ms; light 32 x 1/8 x 2.99 + 132 x 1.00 = 143.96 SM-ms.
TEST(BlockScheduler, AFullGridLaunchedFirstKeepsItsSlots) {
  std::vector<uint64_t> ends;
  auto w = expected_sm_time({grid(0, 3 * kMs, 1024, 256), grid(10 * kUs, 4 * kMs, 1024, 256)}, kH100, &ends);
  EXPECT_NEAR(w[0] / 1e6, 384.04, 0.2);
  EXPECT_NEAR(w[1] / 1e6, 143.96, 0.2);
  EXPECT_NEAR(static_cast<double>(ends[0]), 3.0 * kMs, 2 * kUs);
  EXPECT_NEAR(static_cast<double>(ends[1]), 4.0 * kMs, 2 * kUs);
  // The SM-time split that splits shared instants evenly gives the light grid half of its 3 ms beside.
  EXPECT_GT(w[0] / (w[0] + w[1]), 0.72);
}

// The thin arrangement (bench_kernels split thin): path_heavy's grid of one 150-KB block per SM, three
// times, beside path_light's 4 blocks of 33 ms. Light waits for heavy's first grid; heavy's second
// gets 128 SMs, and its last 4 blocks a second wave. Work: 3 x 132 block-ms against 4 x 33: 75%.
TEST(BlockScheduler, ThinBesideFullSplitsByWork) {
  const uint32_t smem = 150'000;
  std::vector<GridRun> runs = {grid(0, 1 * kMs, 132, 256, 32, smem), grid(1 * kMs, 34 * kMs, 4, 256, 32, smem),
                               grid(1 * kMs + 1, 3 * kMs, 132, 256, 32, smem), grid(3 * kMs, 5 * kMs, 132, 256, 32, smem)};
  std::vector<uint64_t> ends;
  auto w = expected_sm_time(runs, kH100, &ends);
  double heavy = w[0] + w[2] + w[3];
  EXPECT_NEAR(heavy / (heavy + w[1]), 0.75, 0.003);
  for (size_t i = 0; i < runs.size(); i++) EXPECT_NEAR(static_cast<double>(ends[i]), static_cast<double>(runs[i].end), 2 * kUs) << i;
}

// Registers decide the slots: 264 blocks of 256 threads at 128 registers hold every SM's registers
// (2 blocks a SM), so a second such grid finds no room until the first ends; at 32 registers the same
// grids hold 2 of 8 slots a SM each and share every SM half and half.
TEST(BlockScheduler, RegistersLimitWhatAnEarlierGridLeaves) {
  auto heavy = expected_sm_time({grid(0, 2 * kMs, 264, 256, 128), grid(10 * kUs, 2 * kMs, 264, 256, 128)}, kH100);
  auto light = expected_sm_time({grid(0, 2 * kMs, 264, 256, 32), grid(10 * kUs, 2 * kMs, 264, 256, 32)}, kH100);
  EXPECT_NEAR(light[0] / (light[0] + light[1]), 0.5, 0.01);
  EXPECT_GT(heavy[0] / (heavy[0] + heavy[1]), 0.99);
}

// Samples are conserved: the runs' expected samples never add up to more than every SM for the
// group's span, nor one run's to more than the SMs its grid can hold for its span; and each fitted end
// is the recorded one when the GPU had room for everything at once.
TEST(BlockScheduler, SharesOfEachSmAddUpAndFitsReproduceTheEnds) {
  std::mt19937 rng(7);
  for (int round = 0; round < 50; round++) {
    std::vector<GridRun> runs;
    uint64_t lo = UINT64_MAX, hi = 0;
    for (int i = 0; i < 6; i++) {
      uint64_t start = rng() % (2 * kMs), span = kMs / 10 + rng() % (3 * kMs);
      runs.push_back(grid(start, start + span, 1 + rng() % 300, 128));  // at most 1,800 of 2,112 slots
      lo = std::min(lo, start), hi = std::max(hi, start + span);
    }
    std::vector<uint64_t> ends;
    auto w = expected_sm_time(runs, kH100, &ends);
    double total = std::accumulate(w.begin(), w.end(), 0.0);
    EXPECT_LE(total, 132.0 * static_cast<double>(hi - lo) * (1 + 1e-9));
    for (size_t i = 0; i < runs.size(); i++) {
      EXPECT_NEAR(static_cast<double>(ends[i]), static_cast<double>(runs[i].end), 1e-3 * static_cast<double>(runs[i].end - runs[i].start) + 1)
          << "round " << round << " run " << i;
      // With room for all, a run holds min(blocks, SMs) SMs... shared with the others' warps.
      EXPECT_LE(w[i], std::min(132.0, double(runs[i].blocks)) * static_cast<double>(runs[i].end - runs[i].start) * 1.002);
    }
  }
}

TEST(BlockScheduler, UnknownLimitsGiveNothing) {
  auto w = expected_sm_time({grid(0, kMs, 10, 256)}, SmLimits{});
  EXPECT_EQ(w[0], 0.0);
}

}  // namespace
}  // namespace aiflame
