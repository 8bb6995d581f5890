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

EndRecord end_of(uint64_t launches, uint64_t capture_ns, uint64_t walked_launches = 0, uint64_t walked_ns = 0) {
  EndRecord e;
  e.launches = launches;
  e.capture_ns = capture_ns;
  e.walked_launches = walked_launches;
  e.walked_ns = walked_ns;
  return e;
}

// The line of 900 ns a launch without the split.
constexpr const char* kNoSplit = "aiflame: stack capture cost 0.90 us per launch on the launching threads";

TEST(Summary, TheCaptureLineSplitsWalkedLaunchesFromTheRest) {
  // 1,000 launches at 0.90 us; 10 walked, 30 us each (0.30 us of the figure); the other 990 launches
  // 600,000 ns, 0.606 us each.
  EXPECT_EQ(capture_line(end_of(1000, 900'000, 10, 300'000)),
            "aiflame: stack capture cost 0.90 us per launch on the launching threads; 10 launches (1.00%) had no memo of "
            "their call path (mostly paths new to their thread: walked, or given another path's walk), 30.0 us each (0.30 us of the figure), the other "
            "launches 0.61 us each");
}

TEST(Summary, AProfileWithoutTheSplitKeepsTheLineAsBefore) {
  EXPECT_EQ(capture_line(end_of(1000, 900'000)), kNoSplit);
}

TEST(Summary, ASplitThatCannotBeRightIsLeftOut) {
  // A damaged End record: more walked launches than launches, or more of their time than all of it.
  EXPECT_EQ(capture_line(end_of(100, 90'000, 101, 1'000)), kNoSplit);
  EXPECT_EQ(capture_line(end_of(100, 90'000, 10, 90'001)), kNoSplit);
}

TEST(Summary, EveryLaunchWalkedHasNoOtherLaunchesClause) {
  EXPECT_EQ(capture_line(end_of(4, 80'000, 4, 80'000)),
            "aiflame: stack capture cost 20.00 us per launch on the launching threads; 4 launches (100.00%) had no "
            "memo of their call path (mostly paths new to their thread: walked, or given another path's walk), 20.0 us "
            "each (20.00 us of the figure)");
}


// Issue #68: a profile of 0 samples read "100.00% of GPU samples attributed".
TEST(Summary, AProfileWithoutSamplesSaysSoInsteadOfAShare) {
  Profile p;
  std::ostringstream out;
  print_summary(p, AttributionStats{}, "/nonexistent/x.aiflame", out);
  EXPECT_EQ(out.str().find("% of GPU samples attributed"), std::string::npos) << out.str();
  EXPECT_NE(out.str().find("aiflame: no GPU samples in this profile"), std::string::npos) << out.str();
  AttributionStats some;
  some.samples = 4;
  some.attributed = 3;
  some.in_window = 2;
  std::ostringstream with;
  print_summary(p, some, "/nonexistent/x.aiflame", with);
  EXPECT_NE(with.str().find("aiflame: 75.00% of GPU samples attributed to a launch stack (50.00% inside"), std::string::npos)
      << with.str();
}

}  // namespace
}  // namespace aiflame

namespace aiflame {
namespace {

// record's three closing lines (issue 66), on the recorded demo: its three kernels hold every sample,
// matmul_basic the most; the top line is the host function that launched it.
TEST(TopSummary, ThreeLinesOfTheRecordedDemo) {
  std::ostringstream out;
  print_top_summary(std::string(AIFLAME_SOURCE_DIR) + "/tests/data/demo_matmul.aiflame", out);
  std::istringstream lines(out.str());
  std::vector<std::string> got;
  for (std::string line; std::getline(lines, line);) got.push_back(line);
  ASSERT_EQ(got.size(), 3u) << out.str();
  EXPECT_EQ(got[0].rfind("aiflame: 100.0% of GPU samples in 3 kernels: matmul_basic ", 0), 0u) << got[0];
  EXPECT_EQ(got[1].rfind("aiflame: top stall ", 0), 0u) << got[1];
  EXPECT_EQ(got[2].rfind("aiflame: top line multiply_basic", 0), 0u) << got[2];
}

TEST(TopSummary, NothingForAProfileThatCannotBeRead) {
  std::ostringstream out;
  print_top_summary("/nonexistent/x.aiflame", out);
  EXPECT_EQ(out.str(), "");
}

}  // namespace
}  // namespace aiflame

namespace aiflame {
namespace {

// Issue 65: the summary says which share of the samples is tied to its launch exactly and which share
// the model placed between launch stacks.
TEST(Summary, SaysHowMuchTheModelEstimated) {
  AttributionStats s;
  s.samples = 1000;
  s.attributed = 990;
  s.estimated = 31;
  std::ostringstream out;
  print_summary(Profile{}, s, "/nonexistent/x.aiflame", out);
  EXPECT_NE(out.str().find("aiflame: 95.90% of GPU samples tied to their launch exactly (a kernel from one launch "
                           "stack, or a launch id), 3.10% split between launch stacks by the model"),
            std::string::npos)
      << out.str();
}

}  // namespace
}  // namespace aiflame
