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

// Two paths at one depth share a site key; once that is seen, the key is refined by the return
// addresses in the learned stack slots: each path is unwound about as often as a stable site, and
// every launch still gets its own path's stack.
TEST(StackCapture, ASiteReachedFromTwoPathsIsToldApartByItsReturnSlots) {
  Fixture f(UnwindPolicy::Sampled);
  const Path paths[2] = {path_a, path_b};
  std::vector<StackCapture::Result> r;
  const int n = 4000;
  for (int i = 0; i < n; i++) r.push_back(via(paths[i % 4 == 3 ? 1 : 0], f.capture));  // A A A B ...
  uint32_t a = r[0].stack_id, b = r[3].stack_id;
  EXPECT_NE(a, b);
  int unwound = 0;
  for (int i = 0; i < n; i++) {
    EXPECT_EQ(r[i].stack_id, i % 4 == 3 ? b : a) << i;
    unwound += r[i].unwound;
  }
  EXPECT_LT(unwound, 40);  // powers of two per path, not every launch
  EXPECT_EQ(f.capture.stacks(), 2u);
}

// The always policy ignores the site cache: every launch of either path is unwound.
TEST(StackCapture, AlwaysPolicyUnwindsEveryLaunchOfBothPaths) {
  Fixture f(UnwindPolicy::Always);
  const Path paths[2] = {path_a, path_b};
  for (int i = 0; i < 100; i++) {
    auto r = via(paths[i % 2], f.capture);
    EXPECT_TRUE(r.unwound);
  }
  EXPECT_EQ(f.capture.stacks(), 2u);
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
