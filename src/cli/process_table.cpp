#include "cli/process_table.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <map>
#include <set>

namespace aiflame {

ProcessRow process_row(const Profile& p, const AttributionStats& stats, const std::string& file) {
  ProcessRow r;
  r.file = file;
  if (p.process) {
    r.pid = p.process->pid;
    r.rank = p.process->rank;
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

void print_process_table(std::vector<ProcessRow> rows, std::ostream& out) {
  if (rows.empty()) return;
  std::sort(rows.begin(), rows.end(), [](const ProcessRow& a, const ProcessRow& b) {
    return std::make_pair(a.rank, a.pid) < std::make_pair(b.rank, b.pid);
  });
  uint64_t samples = 0;
  for (const auto& r : rows) {
    samples += r.samples;
    std::string who = r.rank >= 0 ? fmt::format("rank {} (pid {})", r.rank, r.pid) : fmt::format("pid {}", r.pid);
    out << fmt::format("aiflame:   {:<22} GPU {:<5} {:>10} samples ({:.2f}% attributed), {:>8} kernels, GPU busy {:5.1f}% of {:.2f} s  {}\n",
                       who, fmt::format("{}", fmt::join(r.devices, ",")), r.samples, r.attributed_percent, r.kernels,
                       100 * r.busy_fraction(), r.seconds, r.file);
  }
  // The imbalance is between the processes that ran kernels: a launcher (torchrun's agent) that only
  // initialised CUDA is listed but not compared.
  std::vector<ProcessRow> workers;
  for (const auto& r : rows)
    if (r.kernels) workers.push_back(r);
  auto [lo, hi] = std::minmax_element(workers.begin(), workers.end(), [](const ProcessRow& a, const ProcessRow& b) {
    return a.busy_fraction() < b.busy_fraction();
  });
  out << fmt::format("aiflame: {} processes, {} GPU samples in all", rows.size(), samples);
  if (workers.size() > 1)
    out << fmt::format("; GPU busy from {:.1f}% ({}) to {:.1f}% ({})", 100 * lo->busy_fraction(),
                       lo->rank >= 0 ? fmt::format("rank {}", lo->rank) : fmt::format("pid {}", lo->pid),
                       100 * hi->busy_fraction(),
                       hi->rank >= 0 ? fmt::format("rank {}", hi->rank) : fmt::format("pid {}", hi->pid));
  out << "\n";
}

}  // namespace aiflame
