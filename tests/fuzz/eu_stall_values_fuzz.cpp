// libFuzzer: the Level Zero backend's EU-stall decoding (record/levelzero/eu_stall_values.h): a metric
// group's names and the driver's calculated values, as any driver might return them (columns in any
// order, no IP column, several, values of every type, a partial last row). Never a crash; every count
// it gives names a reason of the layout.
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "record/levelzero/eu_stall_values.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const char* const names[] = {"IP",        "Active",    "ControlStall", "PipeStall",       "SendStall", "DistStall",
                                      "SbidStall", "SyncStall", "InstrFetchStall", "OtherStall", "Unknown", ""};
  if (size < 1) return 0;
  size_t columns = data[0] % 17;
  size_t pos = 1;
  std::vector<std::string> metrics;
  for (size_t i = 0; i < columns && pos < size; i++) metrics.push_back(names[data[pos++] % (sizeof names / sizeof *names)]);
  aiflame::EuStallLayout layout = aiflame::eu_stall_layout(metrics);
  std::vector<zet_typed_value_t> values;
  while (pos + 9 <= size) {
    zet_typed_value_t v{};
    v.type = static_cast<zet_value_type_t>(data[pos] % 6);
    std::memcpy(&v.value, data + pos + 1, 8);
    values.push_back(v);
    pos += 9;
  }
  for (const auto& c : aiflame::decode_eu_stall_values(layout, values))
    if (c.reason >= layout.reasons.size() || c.count == 0 || c.ip >> 29) __builtin_trap();
  return 0;
}
