#include "record/measure/callback_ab.h"

#include <gtest/gtest.h>

#include <set>

namespace aiflame {
namespace {

// The schedule: off at the first tick, then on and off in turn, each slice 100-300 ms, of varied
// lengths, and no switch inside a slice.
TEST(CallbackAB, SlicesAlternateAndLastOneToThreeTenthsOfASecond) {
  CallbackAB ab(42);
  bool on = true;
  ASSERT_TRUE(ab.tick(1'000'000, &on));
  EXPECT_FALSE(on) << "the first slice is off";
  uint64_t last_switch = 1'000'000;
  bool expect = true;
  std::set<uint64_t> lengths;
  int switches = 0;
  for (uint64_t t = 1'000'000; t < 60'000'000'000ull; t += 1'000'000) {  // a tick every ms, for a minute
    bool now_on = !expect;
    if (!ab.tick(t, &now_on)) continue;
    const uint64_t len = t - last_switch;
    EXPECT_GE(len, CallbackAB::kMinSliceNs) << "switch " << switches;
    EXPECT_LE(len, CallbackAB::kMaxSliceNs) << "switch " << switches;
    EXPECT_EQ(now_on, expect) << "switch " << switches;
    expect = !expect;
    lengths.insert(len / 10'000'000);  // in 10-ms bins
    last_switch = t;
    switches++;
  }
  EXPECT_GT(switches, 200);
  EXPECT_GT(lengths.size(), 15u) << "slice lengths vary";
}

// PC sampling's slices (=4): 2-4 s each, alternating, as long as asked.
TEST(CallbackAB, SamplingSlicesLastTwoToFourSeconds) {
  CallbackAB ab(7, CallbackAB::kMinSamplingSliceNs, CallbackAB::kMaxSamplingSliceNs);
  bool on = true;
  ASSERT_TRUE(ab.tick(0, &on));
  EXPECT_FALSE(on);
  uint64_t last = 0;
  int switches = 0;
  for (uint64_t t = 0; t < 600'000'000'000ull; t += 10'000'000) {  // every 10 ms, for ten minutes
    bool now_on = on;
    if (!ab.tick(t, &now_on)) continue;
    EXPECT_GE(t - last, CallbackAB::kMinSamplingSliceNs);
    EXPECT_LE(t - last, CallbackAB::kMaxSamplingSliceNs + 10'000'000);
    EXPECT_NE(now_on, on);
    on = now_on;
    last = t;
    switches++;
  }
  EXPECT_GT(switches, 150);
  EXPECT_LT(switches, 300);
}

}  // namespace
}  // namespace aiflame
