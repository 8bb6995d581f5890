#include "attribute/process_row.h"

#include <algorithm>
#include <map>

#include "attribute/frame_naming.h"

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
  r.launches = p.launch_count();
  r.kernels = p.kernels.size();
  uint64_t start = p.process ? p.process->start_timestamp : 0, end = p.end ? p.end->timestamp : 0;
  // Kernels by device, as indices sorted by start (4 bytes a kernel, not a copy of every span: a long
  // run has millions).
  std::map<uint32_t, std::vector<uint32_t>> by_device;
  for (uint32_t i = 0; i < p.kernels.size(); i++) {
    const KernelRow& k = p.kernels[i];
    by_device[k.device].push_back(i);
    if (!start || k.start < start) start = k.start;
    end = std::max(end, k.end);
  }
  r.seconds = end > start ? static_cast<double>(end - start) / 1e9 : 0;
  for (auto& [device, spans] : by_device) {
    r.devices.push_back(device);
    std::sort(spans.begin(), spans.end(), [&](uint32_t x, uint32_t y) {
      const KernelRow &a = p.kernels[x], &b = p.kernels[y];
      return a.start != b.start ? a.start < b.start : a.end < b.end;
    });
    uint64_t busy = 0, lo = 0, hi = 0;
    for (uint32_t i : spans) {  // union of intervals: concurrent kernels count once
      const uint64_t a = p.kernels[i].start, b = p.kernels[i].end;
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
