// LaunchAB (AIFLAME_LAB=launch_ab): the launch path's wall-time cost per launch, from slices with and
// without it in one run. A simulated program on a nanosecond clock: each launch takes `base` ns, plus
// `extra` in slices with the launch path; every `burst` launches it waits `idle` ns (a synchronize).
#include "record/measure/launch_ab.h"

#include <gtest/gtest.h>

#include <cmath>

namespace aiflame {
namespace {

LaunchAB::Result simulate(double base, double extra, int burst, double idle, double seconds) {
  LaunchAB ab;
  LaunchAB::ThreadState last;
  double t = 1e9;  // ns
  for (int i = 1; t < 1e9 + seconds * 1e9; i++) {
    const bool off = ab.off(static_cast<uint64_t>(t), 1, last);
    t += base + (off ? 0 : extra);
    if (burst && i % burst == 0) t += idle;
  }
  return ab.result(1.0);
}

TEST(LaunchAB, MeasuresWhatTheLaunchPathAddsPerLaunch) {
  const LaunchAB::Result r = simulate(5000, 1500, 0, 0, 20);
  ASSERT_TRUE(r.valid);
  EXPECT_NEAR(r.cost_us, 1.5, 0.05);
  EXPECT_NEAR(r.off_us, 5.0, 0.05);
  EXPECT_NEAR(r.on_us, 6.5, 0.05);
  EXPECT_NEAR(r.half_us[0], 1.5, 0.1);
  EXPECT_NEAR(r.half_us[1], 1.5, 0.1);
}

// A step of 300 launches: 200 of a kernel the program follows with 5 us of its own work, then 100 of
// one it follows with 100 us (a step of ~11 ms, about one slice). How many of each a slice holds
// varies with where the step falls in it, so the mean interval of a kind swings with its mix of
// kernels; compared kernel by kernel, the cost comes out.
TEST(LaunchAB, ComparesKernelByKernel) {
  LaunchAB ab;
  LaunchAB::ThreadState last;
  double t = 1e9;
  for (int i = 0; t < 1e9 + 30e9; i++) {
    const int k = i % 300 < 200 ? 0 : 1;
    const bool off = ab.off(static_cast<uint64_t>(t), k + 1, last);
    t += (k ? 100000 : 5000) + (off ? 0 : 1000);
  }
  const LaunchAB::Result r = ab.result(1.0);
  ASSERT_TRUE(r.valid);
  EXPECT_NEAR(r.cost_us, 1.0, 0.05);
  EXPECT_NEAR(r.compared, 1.0, 1e-9);
  EXPECT_GT(std::fabs(r.raw_us - 1.0), 0.2) << "all launches together: the kernels' mix (if this fails, the "
                                               "condition this test guards no longer arises)";
}

TEST(LaunchAB, ReadsNoCostWhereThereIsNone) {
  const LaunchAB::Result r = simulate(5000, 0, 0, 0, 20);
  ASSERT_TRUE(r.valid);
  EXPECT_NEAR(r.cost_us, 0.0, 0.02);
}

// A training loop's steps: 1,000 launches, then a 20-ms wait for the GPU. The waits are left out
// (counted), so the cost per launch still comes out.
TEST(LaunchAB, WaitsForTheGpuAreLeftOut) {
  const LaunchAB::Result r = simulate(5000, 1000, 1000, 20e6, 60);
  ASSERT_TRUE(r.valid);
  EXPECT_NEAR(r.cost_us, 1.0, 0.02);
  EXPECT_GT(r.long_intervals, 2000u);
}

// Two launching threads (the forward thread and autograd's engine thread): each thread's intervals
// are its own, so launches of the other thread in between do not cut them.
TEST(LaunchAB, EachThreadsIntervalsAreItsOwn) {
  LaunchAB ab;
  LaunchAB::ThreadState a, b;
  double ta = 1e9, tb = 1e9 + 1234;
  while (ta < 1e9 + 20e9) {
    ta += 5000 + (ab.off(static_cast<uint64_t>(ta), 1, a) ? 0 : 2000);
    tb += 7000 + (ab.off(static_cast<uint64_t>(tb), 2, b) ? 0 : 2000);
  }
  const LaunchAB::Result r = ab.result(1.0);
  EXPECT_NEAR(r.cost_us, 2.0, 0.05);
  EXPECT_EQ(r.long_intervals, 0u);
}

// The slices' kinds come from a hash of their index: about half of each, and no strict alternation
// (a step as long as two slices would otherwise always put its forward pass in one kind).
TEST(LaunchAB, SliceKindsAreBalancedAndNotAlternating) {
  int off = 0, same_as_next = 0;
  const int n = 10000;
  for (uint64_t s = 0; s < n; s++) {
    const bool a = splitmix64_mix(s) & 1, b = splitmix64_mix(s + 1) & 1;
    off += a;
    same_as_next += a == b;
  }
  EXPECT_NEAR(off, n / 2, n / 20);
  EXPECT_NEAR(same_as_next, n / 2, n / 20);
}

TEST(LaunchAB, NoFigureWithoutBothKinds) {
  LaunchAB ab;
  LaunchAB::ThreadState last;
  ab.off(uint64_t{5} << LaunchAB::kSliceShift, 1, last);
  EXPECT_FALSE(ab.result(1.0).valid) << "one launch: no interval";
}

}  // namespace
}  // namespace aiflame
