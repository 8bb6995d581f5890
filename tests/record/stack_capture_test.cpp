#include "record/stack_capture.h"

#include <gtest/gtest.h>

#include <vector>

#include "profile/profile.h"
#include "test_util.h"

namespace aiflame {
namespace {

struct Fixture {
  std::string path = test::temp_path("stacks.aiflame");
  ProfileWriter writer;
  StringTable strings{writer};
  StackCapture capture{writer, strings};
  Fixture(UnwindPolicy policy, uint32_t unstable_sample = 1) {
    std::string err;
    EXPECT_TRUE(writer.open(path, false, &err));
    capture.init(policy, /*python=*/false, unstable_sample);
  }
  ~Fixture() { std::remove(path.c_str()); }
};

__attribute__((noinline)) StackCapture::Result path_a(StackCapture& c, uint64_t site) {
  auto r = c.capture(site);
  asm volatile("");
  return r;
}
__attribute__((noinline)) StackCapture::Result path_b(StackCapture& c, uint64_t site) {
  auto r = c.capture(site);
  asm volatile("");
  return r;
}

TEST(StackCapture, SampledPolicyUnwindsAtPowersOfTwo) {
  Fixture f(UnwindPolicy::Sampled);
  int unwound = 0;
  uint32_t id = 0;
  for (int i = 1; i <= 100; i++) {
    auto r = path_a(f.capture, 7);
    unwound += r.unwound;
    if (id) {
      EXPECT_EQ(r.stack_id, id);
    }
    id = r.stack_id;
  }
  EXPECT_EQ(unwound, 7);  // hits 1, 2, 4, 8, 16, 32, 64
  EXPECT_EQ(f.capture.stacks(), 1u);
}

using Path = StackCapture::Result (*)(StackCapture&, uint64_t);
// One call site for both paths: path_a and path_b have identical frames, so the launch site key
// (site, stack depth) is the same and only the unwound return addresses tell them apart.
__attribute__((noinline)) StackCapture::Result via(Path p, StackCapture& c) {
  auto r = p(c, 9);
  asm volatile("");
  return r;
}

TEST(StackCapture, ASiteReachedFromTwoPathsBecomesUnstableAndIsUnwoundEveryTime) {
  Fixture f(UnwindPolicy::Sampled);
  const Path paths[2] = {path_a, path_b};
  std::vector<StackCapture::Result> r;
  for (int i = 0; i < 22; i++) r.push_back(via(paths[i % 2], f.capture));  // one call site for all
  EXPECT_NE(r[0].stack_id, r[1].stack_id);  // hit 2 was re-checked and differed
  for (size_t i = 2; i < r.size(); i++) {
    EXPECT_TRUE(r[i].unwound) << i;
    EXPECT_EQ(r[i].stack_id, r[i % 2].stack_id) << i;
  }
}

// With unstable sites sampled (one unwind in 8 on average), the launches between take the last stack
// seen: each path's share of the launches is still estimated without bias, at an eighth of the cost.
TEST(StackCapture, SampledUnstableSiteKeepsThePathsShares) {
  Fixture f(UnwindPolicy::Sampled, 8);
  const Path paths[2] = {path_a, path_b};
  std::vector<StackCapture::Result> r;
  const int n = 16000;
  for (int i = 0; i < n; i++) r.push_back(via(paths[i % 4 == 3 ? 1 : 0], f.capture));  // A A A B ...
  uint32_t a_id = r[0].stack_id;
  int unwound = 0, as = 0;
  for (const auto& x : r) {
    unwound += x.unwound;
    as += x.stack_id == a_id;
  }
  EXPECT_GT(unwound, n / 8 / 2);
  EXPECT_LT(unwound, n / 8 * 2);
  EXPECT_NEAR(static_cast<double>(as) / n, 0.75, 0.06);
}

TEST(StackCapture, StacksAreWrittenOnceAndHoldThisTestsFrames) {
  Fixture f(UnwindPolicy::Always);
  for (int i = 0; i < 5; i++) path_a(f.capture, 1);
  ASSERT_TRUE(f.writer.close());
  auto p = read_profile(f.path);
  ASSERT_TRUE(p.ok()) << p.error();
  ASSERT_EQ(p->stacks.size(), 1u);
  EXPECT_GT(p->stacks.begin()->second.native.size(), 3u);
}

TEST(StackCapture, OffPolicyRecordsNoNativeFrames) {
  Fixture f(UnwindPolicy::Off);
  auto r = path_a(f.capture, 1);
  EXPECT_FALSE(r.unwound);
  ASSERT_TRUE(f.writer.close());
  auto p = read_profile(f.path);
  ASSERT_TRUE(p.ok());
  EXPECT_TRUE(p->stacks.at(r.stack_id).native.empty());
}

}  // namespace
}  // namespace aiflame
