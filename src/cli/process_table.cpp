#include "cli/process_table.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

namespace aiflame {

void print_process_table(std::vector<ProcessRow> rows, std::ostream& out) {
  if (rows.empty()) return;
  std::sort(rows.begin(), rows.end(), [](const ProcessRow& a, const ProcessRow& b) {
    return std::make_pair(a.rank, a.pid) < std::make_pair(b.rank, b.pid);
  });
  for (const auto& r : rows) {
    std::string who = r.rank >= 0 ? fmt::format("rank {} (pid {})", r.rank, r.pid) : fmt::format("pid {}", r.pid);
    // No share of no samples (issue #68): "0 samples (100.00% attributed)" read as a good profile.
    std::string attributed = r.samples ? fmt::format("{:.2f}% attributed", r.attributed_percent) : "none to attribute";
    out << fmt::format("aiflame:   {:<22} GPU {:<5} {:>10} samples ({}), {:>8} kernels, GPU busy {:5.1f}% of {:.2f} s  {}\n",
                       who, fmt::format("{}", fmt::join(r.devices, ",")), r.samples, attributed, r.kernels,
                       100 * r.busy_fraction(), r.seconds, r.file);
  }
  out << "aiflame: " << process_totals_line(rows) << "\n";
}

}  // namespace aiflame
