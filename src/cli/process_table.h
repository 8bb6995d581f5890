// Per-process totals of a multi-process (distributed) run: one row per profile, and the imbalance
// between the busiest and the least busy GPU.
#pragma once
#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "attribute/attribution.h"
#include "profile/profile.h"

namespace aiflame {

struct ProcessRow {
  std::string file;
  uint32_t pid = 0;
  int32_t rank = -1;
  std::vector<uint32_t> devices;
  uint64_t samples = 0;
  double attributed_percent = 0;
  uint64_t launches = 0;
  uint64_t kernels = 0;
  double seconds = 0;       // the profile's span
  double busy_seconds = 0;  // union of the kernels' execution intervals, over all its devices
  double busy_fraction() const { return seconds > 0 ? busy_seconds / seconds : 0; }
};

ProcessRow process_row(const Profile& p, const AttributionStats& stats, const std::string& file);
// Rows sorted by rank (then pid) and a closing line: total samples and GPU-busy imbalance.
void print_process_table(std::vector<ProcessRow> rows, std::ostream& out);

}  // namespace aiflame
