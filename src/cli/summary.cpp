#include "cli/summary.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include <sys/stat.h>

#include "attribute/profile_flame.h"
#include "output/text_writer.h"

namespace aiflame {

void print_summary(const Profile& p, const AttributionStats& stats, const std::string& path, std::ostream& out) {
  uint64_t start = p.process ? p.process->start_timestamp : 0;
  uint64_t end = p.end ? p.end->timestamp : 0;
  end = std::max(end, p.last_batch_timestamp);  // also when the batches were streamed, not kept
  for (const auto& b : p.batches) end = std::max(end, b.timestamp);
  for (const auto& k : p.kernels) end = std::max(end, k.end);
  double secs = end > start && start ? static_cast<double>(end - start) / 1e9 : 0.0;
  std::set<uint32_t> devices;
  for (const auto& k : p.kernels) devices.insert(k.device);
  out << fmt::format("aiflame: {}: pid {}, {:.2f} s, {} GPU samples ({} dropped), {} kernels on {} GPU(s), {} launches "
                     "({} unwound), {} stacks, {} cubins\n",
                     path, p.process ? p.process->pid : 0, secs, stats.samples, stats.dropped, p.kernels.size(),
                     devices.size(), p.launch_count(), p.launches_unwound(), p.stacks.size(), p.cubins.size());
  // A share of no samples is no figure: "100.00% attributed" over 0 samples read as a good profile.
  if (stats.samples == 0)
    out << "aiflame: no GPU samples in this profile: nothing to attribute (PC sampling was off or not permitted, "
           "nothing ran on the GPU, or the profile ends before its first samples)\n";
  else
    out << fmt::format("aiflame: {:.2f}% of GPU samples attributed to a launch stack ({:.2f}% inside their drain window)\n",
                       stats.percent_attributed(), 100.0 * stats.in_window / stats.samples);
  // Which placements are facts and which the model's: a kernel launched from one stack, or
  // a sample with its launch id, is tied to its launch exactly; a kernel from several stacks whose
  // executions shared a batch window is split between them by the block-scheduler model.
  if (stats.samples)
    out << fmt::format("aiflame: {:.2f}% of GPU samples tied to their launch exactly (a kernel from one launch stack, "
                       "or a launch id), {:.2f}% split between launch stacks by the model (docs/attribution.md)\n",
                       100.0 * std::max(0.0, stats.attributed - stats.estimated) / static_cast<double>(stats.samples),
                       100.0 * stats.estimated / static_cast<double>(stats.samples));
  if (stats.exact > 0)
    out << fmt::format("aiflame: {:.2f}% of GPU samples matched exactly by launch id (windows mode)\n",
                       100.0 * stats.exact / static_cast<double>(stats.samples));
  if (p.end && p.end->windows && secs > 0) {
    out << fmt::format("aiflame: {} sampling windows ({:.1f} a second), open {:.1f}% of the run\n", p.end->windows,
                       static_cast<double>(p.end->windows) / secs, 100.0 * static_cast<double>(p.end->window_ns) / 1e9 / secs);
    // What a windows-mode profile is (issue 24 item 3): exact inside windows, nothing between them.
    out << "aiflame: windows mode: each GPU sample belongs to a launch inside a window, matched by its launch id (exact); "
           "launches between windows have no stack, no sample and no kernel record, and every figure counts the windows "
           "only (not scaled to the run)\n";
  }
  if (p.end && p.end->launches) {
    const EndRecord& e = *p.end;
    const double n = static_cast<double>(e.launches);
    out << fmt::format("aiflame: stack capture cost {:.2f} us per launch on the launching threads{}",
                       static_cast<double>(e.capture_ns) / 1e3 / n,
                       // A few cold captures (new stacks, unwind tables still being built) make this
                       // average in windows mode: 85-2,500 us over 4-43 window launches on the H200.
                       e.windows ? fmt::format(" ({} launches captured, all inside windows)", e.launches) : "");
    // The launches with no memo of their call path (mostly a call path new to the thread, so a run's
    // first steps: walked, or given another path's walk at their depth)
    // apart from those that took a memo, which is what each launch costs once a loop
    // has been through its paths (issue 22).
    if (e.walked_launches && e.walked_launches <= e.launches && e.walked_ns <= e.capture_ns) {
      const uint64_t memo = e.launches - e.walked_launches;
      out << fmt::format("; {} launches ({:.2f}%) had no memo of their call path (mostly paths new to their thread: "
                         "walked, or given another path's walk), {:.1f} us each ({:.2f} us of the figure)",
                         e.walked_launches, 100.0 * static_cast<double>(e.walked_launches) / n,
                         static_cast<double>(e.walked_ns) / 1e3 / static_cast<double>(e.walked_launches),
                         static_cast<double>(e.walked_ns) / 1e3 / n);
      if (memo)
        out << fmt::format(", the other launches {:.2f} us each",
                           static_cast<double>(e.capture_ns - e.walked_ns) / 1e3 / static_cast<double>(memo));
    }
    out << "\n";
  }
  if (p.autograd && !p.autograd->torch_version.empty()) {
    const AutogradSummaryRecord& a = *p.autograd;
    auto pct = [](uint64_t n, uint64_t of) { return of ? 100.0 * static_cast<double>(n) / static_cast<double>(of) : 0.0; };
    out << fmt::format("aiflame: autograd (torch {}): {}; {} backward launches, {:.1f}% under their backward() call, "
                       "{:.1f}% of those with a node under their forward code\n",
                       a.torch_version, a.state, a.backward_launches, pct(a.with_caller, a.backward_launches),
                       pct(a.with_forward, a.with_node));
  }
  if (p.end && secs > 0) {
    struct stat st = {};
    double mb = stat(path.c_str(), &st) == 0 ? static_cast<double>(st.st_size) / 1e6 : 0.0;
    out << fmt::format("aiflame: {:.0f} GPU samples/s, profile {:.2f} MB ({:.3f} MB/s); aiflame's collector thread used "
                       "{:.3f} s CPU\n",
                       static_cast<double>(stats.samples) / secs, mb, mb / secs,
                       static_cast<double>(p.end->collector_cpu_ns) / 1e9);
  }
  if (p.truncated) out << "aiflame: the profile was cut short (the program was killed or crashed); it is read up to its last flush\n";
  for (const auto& w : p.warnings) out << "aiflame: recorded warning: " << w << "\n";
}

void print_top_summary(const std::string& path, std::ostream& out) {
  FrameOptions fo;
  fo.times = false;  // shares only: no timeline, no kernel spans
  auto pf = flame_from_profile_file(path, fo);
  if (!pf) return;  // the summary above has said what is wrong with the profile
  for (const std::string& line : summary_lines(top_tables(pf->flame))) out << "aiflame: " << line << "\n";
}

void print_gpu_summary(const GpuFrameStats& stats, const std::vector<std::string>& notes, std::ostream& out) {
  if (stats.samples_without_lines)
    out << fmt::format("aiflame: {} of {} GPU samples ({:.1f}%) have no source line (kernels built without -lineinfo, "
                       "or cubins not kept): they show kernel and offset only\n",
                       stats.samples_without_lines, stats.samples,
                       100.0 * static_cast<double>(stats.samples_without_lines) / static_cast<double>(stats.samples));
  for (const auto& n : notes) out << "aiflame: " << n << "\n";
}

}  // namespace aiflame
