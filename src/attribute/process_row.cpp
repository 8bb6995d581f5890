#include "attribute/process_row.h"

#include <algorithm>
#include <map>

#include "attribute/frame_builder.h"

namespace aiflame {

ProcessRow process_row(const Profile& p, const AttributionStats& stats, const std::string& file) {
  ProcessRow r;
  r.file = file;
  r.name = program_name(p);
  if (p.process) {
    r.pid = p.process->pid;
    r.rank = p.process->rank;
    r.host = p.process->hostname;
  }
  r.samples = stats.samples;
  r.attributed_percent = stats.percent_attributed();
  r.launches = p.launches.size();
  r.kernels = p.kernels.size();
  uint64_t start = p.process ? p.process->start_timestamp : 0, end = p.end ? p.end->timestamp : 0;
  std::map<uint32_t, std::vector<std::pair<uint64_t, uint64_t>>> by_device;
  for (const auto& k : p.kernels) {
    by_device[k.device].emplace_back(k.start, k.end);
    if (!start || k.start < start) start = k.start;
    end = std::max(end, k.end);
  }
  r.seconds = end > start ? static_cast<double>(end - start) / 1e9 : 0;
  for (auto& [device, spans] : by_device) {
    r.devices.push_back(device);
    std::sort(spans.begin(), spans.end());
    uint64_t busy = 0, lo = 0, hi = 0;
    for (const auto& [a, b] : spans) {  // union of intervals: concurrent kernels count once
      if (a > hi) {
        busy += hi - lo;
        lo = a;
        hi = b;
      } else {
        hi = std::max(hi, b);
      }
    }
    busy += hi - lo;
    r.busy_seconds += static_cast<double>(busy) / 1e9;
  }
  return r;
}

}  // namespace aiflame
