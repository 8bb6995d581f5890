// EU-stall samples from the values a driver calculates for the "EuStallSampling" metric group
// (zetMetricGroupCalculateMetricValues): rows of one value per metric of the group, one row per
// sampled instruction pointer, the "IP" metric holding the 29-bit instruction address (in units of 8
// bytes) and each other metric the count of one stall reason there. Which column is which comes from
// the group's metric names; the stall reasons are named as iaprof names them.
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include <level_zero/zet_api.h>

namespace aiflame {

// iaprof's name of an EU-stall metric ("SbidStall" -> "sbid", "InstrFetchStall" -> "inst_fetch"); a
// metric it does not know keeps its own name in lower case. Empty for the IP metric.
std::string eu_stall_reason_name(const std::string& metric);

struct EuStallLayout {
  int ip_column = -1;             // -1: the group has no IP metric (not an EU-stall group)
  std::vector<int> reason_of;     // per column: the stall-reason index, -1 for the IP column
  std::vector<std::string> reasons;  // index -> name
  size_t columns() const { return reason_of.size(); }
};
EuStallLayout eu_stall_layout(std::span<const std::string> metric_names);

struct EuStallCount {
  uint32_t ip = 0;  // 29 bits
  uint32_t reason = 0;
  uint64_t count = 0;
};
// The non-zero counts of `values` (a whole number of rows; a partial last row is ignored). Values of
// a type other than an integer are read as 0.
std::vector<EuStallCount> decode_eu_stall_values(const EuStallLayout& layout, std::span<const zet_typed_value_t> values);

// The address-shift rule of Intel's EU-stall notes: a kernel's base address is a full GPU address and
// an IP holds 29 bits of an address in units of 8 bytes, so both are compared on those 29 bits.
inline uint32_t ip_of_address(uint64_t address) { return static_cast<uint32_t>((address >> 3) & 0x1fffffff); }
// Bytes from `base_ip` to `ip` (both 29-bit IPs), the IP counter wrapping at 2^29.
inline uint64_t ip_offset(uint32_t base_ip, uint32_t ip) { return (uint64_t{(ip - base_ip) & 0x1fffffffu}) << 3; }

}  // namespace aiflame
