// The end-of-run summary's stack capture line: the launches that walked their stack told apart from
// those that took their memo (issue 22), and profiles written before that split.
#include "cli/summary.h"

#include <gtest/gtest.h>

#include <sstream>
#include <string>

namespace aiflame {
namespace {

std::string capture_line(const EndRecord& end) {
  Profile p;
  p.end = end;
  std::ostringstream out;
  print_summary(p, AttributionStats{}, "/nonexistent/x.aiflame", out);
  std::istringstream lines(out.str());
  for (std::string line; std::getline(lines, line);)
    if (line.find("stack capture cost") != std::string::npos) return line;
  return "";
}

TEST(Summary, TheCaptureLineSplitsWalkedLaunchesFromTheRest) {
  EndRecord e;
  e.launches = 1000;
  e.capture_ns = 900'000;     // 0.90 us a launch
  e.walked_launches = 10;
  e.walked_ns = 300'000;      // 30 us each, 0.30 us of the figure
  // The other 990 launches: 600,000 ns, 0.606 us each.
  EXPECT_EQ(capture_line(e),
            "aiflame: stack capture cost 0.90 us per launch on the launching threads; 10 launches (1.00%) walked their "
            "stack (no memo held: mostly call paths new to their thread), 30.0 us each (0.30 us of the figure), the other "
            "launches 0.61 us each");
}

TEST(Summary, AProfileWithoutTheSplitKeepsTheLineAsBefore) {
  EndRecord e;
  e.launches = 1000;
  e.capture_ns = 900'000;
  EXPECT_EQ(capture_line(e), "aiflame: stack capture cost 0.90 us per launch on the launching threads");
}

TEST(Summary, ASplitThatCannotBeRightIsLeftOut) {
  // A damaged End record: more walked launches than launches, or more of their time than all of it.
  EndRecord e;
  e.launches = 100;
  e.capture_ns = 90'000;
  e.walked_launches = 101;
  e.walked_ns = 1'000;
  EXPECT_EQ(capture_line(e), "aiflame: stack capture cost 0.90 us per launch on the launching threads");
  e.walked_launches = 10;
  e.walked_ns = 90'001;
  EXPECT_EQ(capture_line(e), "aiflame: stack capture cost 0.90 us per launch on the launching threads");
}

TEST(Summary, EveryLaunchWalkedHasNoOtherLaunchesClause) {
  EndRecord e;
  e.launches = 4;
  e.capture_ns = 80'000;
  e.walked_launches = 4;
  e.walked_ns = 80'000;
  EXPECT_EQ(capture_line(e),
            "aiflame: stack capture cost 20.00 us per launch on the launching threads; 4 launches (100.00%) walked "
            "their stack (no memo held: mostly call paths new to their thread), 20.0 us each (20.00 us of the figure)");
}

}  // namespace
}  // namespace aiflame
