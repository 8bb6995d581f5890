// RecordArray: a plain-record array that grows through malloc, then a mapping grown by mremap.
#include <gtest/gtest.h>

#include <cstdint>

#include "profile/profile.h"
#include "profile/record_array.h"

namespace aiflame {
namespace {

struct Rec {
  uint64_t a;
  uint32_t b;
  uint32_t c;
};

// Past the 1 MB switch to a mapping and through several mremap doublings, every record stays.
TEST(RecordArray, KeepsEveryRecordAcrossMallocAndMappedGrowth) {
  RecordArray<Rec> r;
  constexpr uint32_t n = 300'000;  // 4.8 MB of 16-byte records
  for (uint32_t i = 0; i < n; i++) r.push_back({uint64_t{i} * 3, i, ~i});
  ASSERT_EQ(r.size(), n);
  for (uint32_t i = 0; i < n; i++) {
    ASSERT_EQ(r[i].a, uint64_t{i} * 3) << i;
    ASSERT_EQ(r[i].b, i) << i;
    ASSERT_EQ(r[i].c, ~i) << i;
  }
  uint64_t sum = 0;
  for (const Rec& x : r) sum += x.b;
  EXPECT_EQ(sum, uint64_t{n} * (n - 1) / 2);
  EXPECT_EQ(r.back().b, n - 1);
}

TEST(RecordArray, CopyMoveAndAssignmentKeepTheirOwnRecords) {
  RecordArray<Rec> big;
  for (uint32_t i = 0; i < 100'000; i++) big.push_back({i, i, i});
  RecordArray<Rec> copy = big;
  copy[5].b = 99;
  EXPECT_EQ(big[5].b, 5u);  // a copy, not a shared buffer
  RecordArray<Rec> moved = std::move(big);
  EXPECT_EQ(moved.size(), 100'000u);
  EXPECT_TRUE(big.empty());  // NOLINT(bugprone-use-after-move): moved-from is empty by contract
  moved = {{1, 2, 3}, {4, 5, 6}};
  ASSERT_EQ(moved.size(), 2u);
  EXPECT_EQ(moved[1].c, 6u);
  copy.clear();
  EXPECT_TRUE(copy.empty());
  copy.push_back({7, 8, 9});  // usable again after clear
  EXPECT_EQ(copy[0].a, 7u);
}

// The profile's rows convert from the records, so records can be pushed where rows are kept.
TEST(RecordArray, ProfileRowsTakeRecords) {
  Profile p;
  KernelRecord k;
  k.correlation_id = 4; k.start = 10; k.end = 20; k.device = 1; k.name = 3; k.graph_node_id = 77;
  p.kernels.push_back(k);
  p.launches = {LaunchRecord{4, 1, 5, 9, 307, true, 1}, LaunchRecord{5, 1, 6, 9, 307, false, 1}};
  EXPECT_EQ(p.kernels[0].graph_node_id, 77u);
  EXPECT_EQ(p.launch_count(), 2u);
  EXPECT_EQ(p.launches_unwound(), 1u);
  p.drop_launch_rows();
  EXPECT_TRUE(p.launches.empty());
  EXPECT_EQ(p.launch_count(), 2u);  // still counted
  EXPECT_EQ(p.launches_unwound(), 1u);
}

}  // namespace
}  // namespace aiflame
