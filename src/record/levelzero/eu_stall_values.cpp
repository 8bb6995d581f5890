#include "record/levelzero/eu_stall_values.h"

#include <algorithm>
#include <cctype>

namespace aiflame {

std::string eu_stall_reason_name(const std::string& metric) {
  static const std::pair<const char*, const char*> names[] = {
      {"Active", "active"},       {"ControlStall", "control"}, {"PipeStall", "pipestall"},
      {"SendStall", "send"},      {"DistStall", "dist_acc"},   {"DistAccStall", "dist_acc"},
      {"SbidStall", "sbid"},      {"SyncStall", "sync"},       {"InstrFetchStall", "inst_fetch"},
      {"InstFetchStall", "inst_fetch"}, {"OtherStall", "other"}};
  if (metric == "IP") return "";
  for (const auto& [from, to] : names)
    if (metric == from) return to;
  std::string s = metric;
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

EuStallLayout eu_stall_layout(std::span<const std::string> metric_names) {
  EuStallLayout l;
  for (size_t i = 0; i < metric_names.size(); i++) {
    if (metric_names[i] == "IP" && l.ip_column < 0) {
      l.ip_column = static_cast<int>(i);
      l.reason_of.push_back(-1);
      continue;
    }
    l.reason_of.push_back(static_cast<int>(l.reasons.size()));
    l.reasons.push_back(eu_stall_reason_name(metric_names[i]));
  }
  return l;
}

namespace {
uint64_t integer(const zet_typed_value_t& v) {
  switch (v.type) {
    case ZET_VALUE_TYPE_UINT32: return v.value.ui32;
    case ZET_VALUE_TYPE_UINT64: return v.value.ui64;
    default: return 0;
  }
}
}  // namespace

std::vector<EuStallCount> decode_eu_stall_values(const EuStallLayout& layout, std::span<const zet_typed_value_t> values) {
  std::vector<EuStallCount> out;
  const size_t cols = layout.columns();
  if (layout.ip_column < 0 || cols == 0) return out;
  for (size_t row = 0; row + cols <= values.size(); row += cols) {
    const uint32_t ip = static_cast<uint32_t>(integer(values[row + static_cast<size_t>(layout.ip_column)]) & 0x1fffffff);
    for (size_t c = 0; c < cols; c++) {
      if (layout.reason_of[c] < 0) continue;
      uint64_t n = integer(values[row + c]);
      if (n) out.push_back({ip, static_cast<uint32_t>(layout.reason_of[c]), n});
    }
  }
  return out;
}

}  // namespace aiflame
