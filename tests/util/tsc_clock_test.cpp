#include "util/tsc_clock.h"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

namespace aiflame {
namespace {

TEST(TscClock, TicksConvertToTheWallClocksNanoseconds) {
  TscClock c;
  const uint64_t t0 = c.now();
  const uint64_t ns0 = TscClock::mono_ns();
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  const uint64_t t1 = c.now();
  const double ns = static_cast<double>(t1 - t0) * c.ns_per_tick();
  const double wall = static_cast<double>(TscClock::mono_ns() - ns0);
  EXPECT_NEAR(ns, wall, 0.1 * wall);
  EXPECT_GT(ns, 45e6);
}

TEST(TscClock, IsTheTimeStampCounterWhereTheCpuSaysItIsInvariant) {
  TscClock c;
  EXPECT_EQ(c.invariant_tsc(), TscClock::has_invariant_tsc());
  if (!c.invariant_tsc()) {
    EXPECT_EQ(c.ns_per_tick(), 1.0);
    return;
  }
  // Ticks run at the TSC's rate (GHz), not at one per nanosecond.
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  EXPECT_LT(c.ns_per_tick(), 0.9);
}

}  // namespace
}  // namespace aiflame
