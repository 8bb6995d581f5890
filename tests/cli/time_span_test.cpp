// `report --since/--until`: the bounds it takes and which window profiles they keep.
#include "cli/time_span.h"

#include <gtest/gtest.h>

namespace aiflame {
namespace {

TEST(TimeSpan, ParsesDurationsBothWaysAndUtcTimes) {
  auto b = parse_time_bound("10m");
  ASSERT_TRUE(b);
  EXPECT_EQ(b->kind, TimeBound::FromFirst);
  EXPECT_EQ(b->ns, 600'000'000'000);
  b = parse_time_bound("-90s");
  ASSERT_TRUE(b);
  EXPECT_EQ(b->kind, TimeBound::FromLast);
  EXPECT_EQ(b->ns, 90'000'000'000);
  b = parse_time_bound("2026-12-07T23:10:05Z");
  ASSERT_TRUE(b);
  EXPECT_EQ(b->kind, TimeBound::Absolute);
  EXPECT_EQ(b->ns, 1796685005'000'000'000);
  b = parse_time_bound("2026-12-07T23:10");
  ASSERT_TRUE(b);
  EXPECT_EQ(b->ns, 1796685000'000'000'000);
  EXPECT_EQ(parse_time_bound("")->kind, TimeBound::None);
  for (const char* bad : {"yesterday", "10 m", "--5s", "2026-13-07T23:10", "2026-12-07T23:10:5x", "2026-12-07T25:00",
                          "3094-12-07T23:10:05Z", "1000000h"})
    EXPECT_FALSE(parse_time_bound(bad)) << bad;
}

TEST(TimeSpan, KeepsTheFilesThatStartedInTheSpan) {
  const int64_t s = 1'000'000'000;
  std::vector<TimedFile> files = {{"a", 100 * s}, {"b", 190 * s}, {"c", 280 * s}, {"d", 370 * s}};
  auto keep = [&](const char* since, const char* until) {
    auto r = select_by_time(files, *parse_time_bound(since), *parse_time_bound(until));
    std::string out;
    if (r)
      for (const auto& f : *r) out += f;
    return r ? out : "error: " + r.error();
  };
  EXPECT_EQ(keep("", ""), "abcd");
  EXPECT_EQ(keep("90s", ""), "bcd");     // from the first's start: b starts 90 s after it
  EXPECT_EQ(keep("", "90s"), "a");       // until is exclusive
  EXPECT_EQ(keep("-90s", ""), "cd");     // back from the last's start
  EXPECT_EQ(keep("1m", "-1m"), "bc");
  EXPECT_EQ(keep("1970-01-01T00:03:00", "1970-01-01T00:06:00"), "bc");  // 180 s and 360 s
  std::string none = keep("10m", "");
  EXPECT_NE(none.find("error: no profile started in the span"), std::string::npos) << none;
  EXPECT_NE(none.find("from 0.0 s to 270.0 s"), std::string::npos) << none;
}

}  // namespace
}  // namespace aiflame
