#include "record/measure/launch_histogram.h"

#include <gtest/gtest.h>

#include <memory>
#include <algorithm>
#include <random>
#include <vector>

namespace aiflame {
namespace {

// Every tick count falls in the bucket whose range holds it, and buckets are in order.
TEST(LaunchHistogram, EveryCountFallsInTheBucketWhoseRangeHoldsIt) {
  std::mt19937_64 rng(7);
  for (int i = 0; i < 200000; i++) {
    const uint64_t t = rng() >> (rng() % 64);
    const int b = LaunchHistogram::bucket(t);
    ASSERT_GE(b, 0);
    ASSERT_LT(b, LaunchHistogram::kBuckets);
    if (b == LaunchHistogram::kBuckets - 1) continue;  // the last bucket takes everything above it
    ASSERT_LE(LaunchHistogram::bucket_low(b), t) << t;
    ASSERT_LT(t, LaunchHistogram::bucket_low(b + 1)) << t;
  }
  for (int b = 1; b < LaunchHistogram::kBuckets; b++)
    ASSERT_LT(LaunchHistogram::bucket_low(b - 1), LaunchHistogram::bucket_low(b)) << b;
}

// Quantiles within a bucket's width (a quarter octave: 25%), the mean exact, and the launches of 2 us or more with
// their share of the time, over several threads' counts.
TEST(LaunchHistogram, QuantilesMeanAndTheSlowLaunchesShare) {
  auto threads = std::make_unique<LaunchHistogram::Thread[]>(3);
  // 1 tick = 1 ns. 900 launches at 300 ns on thread 0, 85 at 1,000 and 5 at 2,500 on thread 1, 10 at
  // 50,000 on thread 2.
  for (int i = 0; i < 900; i++) threads[0].add(LaunchHistogram::Memo, 300);
  for (int i = 0; i < 85; i++) threads[1].add(LaunchHistogram::Memo, 1000);
  for (int i = 0; i < 5; i++) threads[1].add(LaunchHistogram::Memo, 2500);
  for (int i = 0; i < 10; i++) threads[2].add(LaunchHistogram::Memo, 50000);
  threads[2].add(LaunchHistogram::Walked, 7);  // another kind: not counted
  const auto s = LaunchHistogram::summarize(threads.get(), 3, LaunchHistogram::Memo, 1.0);
  EXPECT_EQ(s.n, 1000u);
  EXPECT_NEAR(s.mean_us, (900 * 0.3 + 85 * 1.0 + 5 * 2.5 + 10 * 50.0) / 1000, 1e-9);
  EXPECT_GT(s.p50_us, 0.3 / 1.25);
  EXPECT_LE(s.p50_us, 0.3);
  EXPECT_GT(s.p90_us, 0.3 / 1.25);  // the 900th launch is still at 300 ns
  EXPECT_LE(s.p90_us, 0.3);
  EXPECT_GT(s.p99_us, 2.5 / 1.25);  // the 990th launch is the last at 2,500 ns
  EXPECT_LE(s.p99_us, 2.5);
  EXPECT_NEAR(s.over_2us_launches, 0.015, 1e-12);
  EXPECT_NEAR(s.over_2us_share, 512.5 / 867.5, 1e-12);
  // The clock's rate scales every figure.
  const auto half = LaunchHistogram::summarize(threads.get(), 3, LaunchHistogram::Memo, 0.5);
  EXPECT_NEAR(half.mean_us, s.mean_us / 2, 1e-9);
  // 2,500 ticks are 1.25 us now, 50,000 still over 2.
  EXPECT_NEAR(half.over_2us_share, 500.0 / 867.5, 1e-12);
  EXPECT_NEAR(half.over_2us_launches, 0.01, 1e-12);
  EXPECT_EQ(LaunchHistogram::summarize(threads.get(), 3, LaunchHistogram::CaptureAgain, 1.0).n, 0u);
}

// The kKeep slowest of many launches, slowest first; a launch no slower than the slowest kept is not
// worth the lock once kKeep are kept.
TEST(LaunchOutliers, KeepsTheSlowestLaunchesSlowestFirst) {
  LaunchOutliers out;
  std::mt19937_64 rng(3);
  std::vector<uint64_t> all;
  for (uint32_t i = 0; i < 1000; i++) {
    const uint64_t t = 100 + rng() % 100000;
    all.push_back(t);
    LaunchOutlier o;
    o.ticks = t;
    o.nth = i + 1;
    if (out.worth(t)) out.add(o);
  }
  std::sort(all.rbegin(), all.rend());
  const auto kept = out.slowest();
  ASSERT_EQ(kept.size(), LaunchOutliers::kKeep);
  for (size_t i = 0; i < kept.size(); i++) EXPECT_EQ(kept[i].ticks, all[i]) << i;
  EXPECT_FALSE(out.worth(all[LaunchOutliers::kKeep - 1]));
  EXPECT_TRUE(out.worth(all[LaunchOutliers::kKeep - 1] + 1));
}

TEST(LaunchOutliers, TheLineSaysWhatEachDid) {
  LaunchOutlier a;
  a.ticks = 2000000, a.at_ticks = 1500000000, a.tid = 42, a.nth = 1, a.walked = true, a.new_stack = true, a.fallback = true;
  LaunchOutlier b;
  b.ticks = 3000, b.at_ticks = 2000000000, b.tid = 43, b.nth = 900;
  EXPECT_EQ(LaunchOutliers::line({a, b}, 1.0),
            "2000.0 us at 1.500 s (thread 42's launch 1: walked, a new stack, a backtrace() fallback); "
            "3.0 us at 2.000 s (thread 43's launch 900: from its memo)");
  EXPECT_EQ(LaunchOutliers::line({}, 1.0), "none");
}

}  // namespace
}  // namespace aiflame
