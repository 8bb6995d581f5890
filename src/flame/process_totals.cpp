#include "flame/process_totals.h"

#include <fmt/format.h>

#include <tuple>

namespace aiflame {

std::string process_label(const ProcessRow& r) {
  return r.rank >= 0 ? fmt::format("rank {}", r.rank) : fmt::format("pid {}", r.pid);
}

std::optional<BusyImbalance> busy_imbalance(const std::vector<ProcessRow>& rows) {
  auto key = [&](size_t i) { return std::make_tuple(rows[i].busy_fraction(), rows[i].rank, rows[i].pid); };
  std::optional<BusyImbalance> out;
  size_t workers = 0;
  for (size_t i = 0; i < rows.size(); i++) {
    if (!rows[i].kernels) continue;
    if (!workers++) out = BusyImbalance{i, i};
    if (key(i) < key(out->least)) out->least = i;
    // The most busy: highest fraction, the lower (rank, pid) among equals.
    auto [f, r, p] = key(i);
    auto [mf, mr, mp] = key(out->most);
    if (f > mf || (f == mf && std::make_pair(r, p) < std::make_pair(mr, mp))) out->most = i;
  }
  if (workers < 2) out.reset();
  return out;
}

std::string process_totals_line(const std::vector<ProcessRow>& rows) {
  uint64_t samples = 0;
  for (const auto& r : rows) samples += r.samples;
  std::string line = fmt::format("{} processes, {} GPU samples in all", rows.size(), samples);
  if (auto b = busy_imbalance(rows))
    line += fmt::format("; GPU busy from {:.1f}% ({}) to {:.1f}% ({})", 100 * rows[b->least].busy_fraction(),
                        process_label(rows[b->least]), 100 * rows[b->most].busy_fraction(), process_label(rows[b->most]));
  return line;
}

}  // namespace aiflame
