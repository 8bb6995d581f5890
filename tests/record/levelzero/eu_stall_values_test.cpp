// The EU-stall decoding of the Level Zero backend: columns found by the metric group's names, iaprof's
// reason names, the address-shift rule.
#include "record/levelzero/eu_stall_values.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace aiflame {
namespace {

zet_typed_value_t u64(uint64_t v) {
  zet_typed_value_t t{};
  t.type = ZET_VALUE_TYPE_UINT64;
  t.value.ui64 = v;
  return t;
}

TEST(EuStallValues, ReasonsAreNamedAsIaprofNamesThem) {
  const std::vector<std::string> metrics = {"IP",        "Active",    "ControlStall", "PipeStall",       "SendStall",
                                            "DistStall", "SbidStall", "SyncStall",    "InstrFetchStall", "OtherStall"};
  EuStallLayout l = eu_stall_layout(metrics);
  EXPECT_EQ(l.ip_column, 0);
  EXPECT_EQ(l.reasons, (std::vector<std::string>{"active", "control", "pipestall", "send", "dist_acc", "sbid", "sync",
                                                  "inst_fetch", "other"}));
  EXPECT_EQ(eu_stall_reason_name("NewStall"), "newstall");
}

TEST(EuStallValues, ColumnsComeFromTheNamesInAnyOrder) {
  EuStallLayout l = eu_stall_layout(std::vector<std::string>{"SbidStall", "IP", "SendStall"});
  ASSERT_EQ(l.ip_column, 1);
  // Two rows: IP 0x100 with 3 sbid, IP 0x1fffffff (29 bits kept) with 2 send; a partial third row.
  std::vector<zet_typed_value_t> v = {u64(3), u64(0x100), u64(0), u64(0), u64(0xffffffffull), u64(2), u64(7)};
  auto c = decode_eu_stall_values(l, v);
  ASSERT_EQ(c.size(), 2u);
  EXPECT_EQ(c[0].ip, 0x100u);
  EXPECT_EQ(l.reasons[c[0].reason], "sbid");
  EXPECT_EQ(c[0].count, 3u);
  EXPECT_EQ(c[1].ip, 0x1fffffffu);
  EXPECT_EQ(l.reasons[c[1].reason], "send");
  EXPECT_EQ(c[1].count, 2u);
}

TEST(EuStallValues, AGroupWithoutAnIpMetricGivesNothing) {
  EuStallLayout l = eu_stall_layout(std::vector<std::string>{"Active", "SendStall"});
  EXPECT_LT(l.ip_column, 0);
  EXPECT_TRUE(decode_eu_stall_values(l, std::vector<zet_typed_value_t>{u64(1), u64(2)}).empty());
}

TEST(EuStallValues, AddressShiftComparesOn29BitsOf8ByteUnits) {
  // A kernel at a full 64-bit GPU address; an IP is that address's bits 3..31.
  const uint64_t base = 0x00007ff812340000ull;
  EXPECT_EQ(ip_of_address(base), (base >> 3) & 0x1fffffff);
  EXPECT_EQ(ip_offset(ip_of_address(base), ip_of_address(base + 0x30)), 0x30u);
  // The IP counter wraps at 2^29 units: a kernel across the wrap keeps its offsets.
  const uint64_t near_wrap = (0x1fffffffull << 3);
  EXPECT_EQ(ip_offset(ip_of_address(near_wrap), ip_of_address(near_wrap + 0x20)), 0x20u);
}

}  // namespace
}  // namespace aiflame
