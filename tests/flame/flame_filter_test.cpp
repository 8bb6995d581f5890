// The --kernels and --exclude-kernels regexes: a pattern is a user's typing, so no pattern may make
// the report hang (filter_fuzz found '(..?+)+x', which libstdc++'s backtracking std::regex never
// finished on a kernel name) and a bad one is one error line.
#include "flame/flame_filter.h"

#include <chrono>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace aiflame {
namespace {

FlameData kernels(const std::vector<std::string>& names) {
  FlameData d;
  for (const auto& n : names) d.stacks.push_back({{{"p", FrameKind::Process}, {n, FrameKind::GpuKernel}}, 3});
  return d;
}

std::vector<uint64_t> counts(const FlameData& d) {
  std::vector<uint64_t> c;
  for (const auto& s : d.stacks) c.push_back(s.count);
  return c;
}

// Nested quantifiers over a name with no match: 2^n ways to split the a's for a backtracking
// matcher (libstdc++'s std::regex: 0.07 s at 20 a's; this test took 11 s with it, release build);
// linear for RE2.
TEST(FlameFilter, NestedQuantifiersTakeLinearTime) {
  FlameData d = kernels({std::string(28, 'a'), "aab"});
  auto f = make_flame_filter("(a+)+b", "", "", "", "");
  ASSERT_TRUE(f.ok()) << f.error();
  auto t0 = std::chrono::steady_clock::now();
  apply_filter(*f, d);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(1));
  EXPECT_EQ(counts(d), (std::vector<uint64_t>{0, 3}));

  d = kernels({std::string(28, 'a'), "aab"});
  auto x = make_flame_filter("", "(a|aa)+b", "", "", "");
  ASSERT_TRUE(x.ok()) << x.error();
  t0 = std::chrono::steady_clock::now();
  apply_filter(*x, d);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(1));
  EXPECT_EQ(counts(d), (std::vector<uint64_t>{3, 0}));
}

// filter_fuzz's hang (tests/fuzz/corpus/filter/possessive_nested.txt): a possessive quantifier,
// which std::regex took as a plain one and then backtracked without end, is one error line naming
// the option.
TEST(FlameFilter, PossessiveNestedQuantifierIsOneErrorLine) {
  auto f = make_flame_filter("(..?+)+x", "", "", "", "");
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.error().rfind("bad --kernels regex: ", 0), 0u) << f.error();
  auto x = make_flame_filter("", "a\n(", "", "", "");
  ASSERT_FALSE(x.ok());
  EXPECT_EQ(x.error().rfind("bad --exclude-kernels regex: ", 0), 0u) << x.error();
  EXPECT_EQ(x.error().find('\n'), std::string::npos) << x.error();
}

// What users write keeps working: alternation, anchors, classes, case-insensitivity by (?i).
TEST(FlameFilter, EverydayPatterns) {
  const std::vector<std::string> names = {"ncclDevKernel_AllReduce_Sum_f32", "sm90_xmma_gemm_bf16", "Kernel2", "elementwise_add"};
  auto kept = [&](const std::string& re) {
    FlameData d = kernels(names);
    auto f = make_flame_filter(re, "", "", "", "");
    EXPECT_TRUE(f.ok()) << re << ": " << f.error();
    if (f.ok()) apply_filter(*f, d);
    return counts(d);
  };
  EXPECT_EQ(kept("nccl|gemm"), (std::vector<uint64_t>{3, 3, 0, 0}));
  EXPECT_EQ(kept("^sm90_"), (std::vector<uint64_t>{0, 3, 0, 0}));
  EXPECT_EQ(kept("_add$"), (std::vector<uint64_t>{0, 0, 0, 3}));
  EXPECT_EQ(kept("^Kernel[0-9]$"), (std::vector<uint64_t>{0, 0, 3, 0}));
  EXPECT_EQ(kept("(?i)allreduce"), (std::vector<uint64_t>{3, 0, 0, 0}));
  EXPECT_EQ(kept("\\d{2}_"), (std::vector<uint64_t>{0, 3, 0, 0}));
}

}  // namespace
}  // namespace aiflame
