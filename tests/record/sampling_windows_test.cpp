// The window schedule of windows mode: when windows open and close, and that their rate and length
// are what was asked for, over many windows.
#include "record/sampling_windows.h"

#include <gtest/gtest.h>

namespace aiflame {
namespace {

using Action = SamplingWindows::Action;

TEST(SamplingWindows, FirstTickOpensAndTheFirstTickAfterTheLengthCloses) {
  SamplingWindows w(100, 1000, 7);  // 100 a second, 1 ms long
  EXPECT_TRUE(w.due(5));
  EXPECT_EQ(w.decide(5), Action::Open);
  EXPECT_TRUE(w.open());
  EXPECT_FALSE(w.due(5 + 999999));
  EXPECT_EQ(w.decide(5 + 999999), Action::None);
  EXPECT_EQ(w.decide(5 + 1000000), Action::Close);
  EXPECT_FALSE(w.open());
  EXPECT_EQ(w.windows(), 1u);
  EXPECT_EQ(w.open_ns(), 1000000u);
}

TEST(SamplingWindows, NextEventIsTheOpeningThenTheClosing) {
  SamplingWindows w(100, 1000, 7);
  EXPECT_EQ(w.next_event(), 0u);  // the first window opens at once
  EXPECT_EQ(w.decide(10), Action::Open);
  EXPECT_EQ(w.next_event(), 10u + 1000000u);
  EXPECT_EQ(w.decide(w.next_event()), Action::Close);
  uint64_t gap = w.next_event() - (10u + 1000000u);
  EXPECT_GE(gap, 5'000'000u);  // mean gap 10 ms, drawn in [5, 15] ms
  EXPECT_LE(gap, 15'000'000u);
  EXPECT_EQ(w.decide(w.next_event() - 1), Action::None);
}

TEST(SamplingWindows, GapsAreRandomWithinHalfToOneAndAHalfOfTheMean) {
  SamplingWindows w(100, 10, 42);  // mean gap 10 ms
  uint64_t now = 0, closed_at = 0;
  uint64_t min_gap = UINT64_MAX, max_gap = 0;
  double sum = 0;
  int gaps = 0;
  // A tick every 10 us for 100 s.
  for (; now < 100'000'000'000ull; now += 10000) {
    if (!w.due(now)) continue;
    Action a = w.decide(now);
    if (a == Action::Close) closed_at = now;
    if (a == Action::Open && closed_at) {
      uint64_t gap = now - closed_at;
      min_gap = std::min(min_gap, gap);
      max_gap = std::max(max_gap, gap);
      sum += static_cast<double>(gap);
      gaps++;
    }
  }
  ASSERT_GT(gaps, 9000);
  EXPECT_GE(min_gap, 5'000'000u);
  EXPECT_LE(max_gap, 15'010'000u);  // plus one tick interval
  EXPECT_LT(min_gap, 5'500'000u);   // the range is used, not one fixed gap
  EXPECT_GT(max_gap, 14'500'000u);
  EXPECT_NEAR(sum / gaps, 10'000'000.0, 200'000.0);
  EXPECT_NEAR(static_cast<double>(w.windows()) / 100.0, 100.0, 3.0);  // about 100 windows a second
}

// With a budget, a window's cost spaces the next one (cost / budget); time discounted from it (the wait
// for a busy GPU's queue, AIFLAME_LAB=win_charge_sync=0) does not, and the discount ends with its window.
TEST(SamplingWindows, DiscountedTimeDoesNotSpaceTheNextWindow) {
  auto gap_after = [](uint64_t discount, bool second_too) {
    SamplingWindows w(1000, 1000, 9, 0.02);  // 1 ms windows, 2% budget
    uint64_t now = 0;
    EXPECT_EQ(w.decide(now), Action::Open);  // the first window (charged its length at most)
    now += 1'000'000;
    EXPECT_EQ(w.decide(now), Action::Close);
    now = w.next_event();
    EXPECT_EQ(w.decide(now), Action::Open);
    w.discount(discount);
    now += 11'000'000;  // 10 ms waiting for the GPU's queue, then the 1-ms window
    EXPECT_EQ(w.decide(now), Action::Close);
    if (second_too) {  // a discount does not carry over to the next window
      now = w.next_event();
      EXPECT_EQ(w.decide(now), Action::Open);
      now += 11'000'000;
      const uint64_t closed = now;
      EXPECT_EQ(w.decide(now), Action::Close);
      return w.next_event() - closed;
    }
    return w.next_event() - now;
  };
  // Charged: 11 ms / 2% = 550 ms, drawn in [0.5, 1.5] of it; discounted 10 ms: 1 ms / 2% = 50 ms.
  EXPECT_GE(gap_after(0, false), 275'000'000u);
  EXPECT_LE(gap_after(10'000'000, false), 75'000'000u);
  EXPECT_GE(gap_after(10'000'000, true), 275'000'000u);
  EXPECT_LE(gap_after(50'000'000, false), 75'000'000u);  // never below zero
}

}  // namespace
}  // namespace aiflame
