#include "output/text_writer.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <unordered_map>
#include <unordered_set>

namespace aiflame {

namespace {

// name -> samples, then sorted heaviest first (ties by name).
using Tally = std::unordered_map<std::string_view, uint64_t>;

std::vector<TopShare> sorted(const Tally& t) {
  std::vector<TopShare> out;
  out.reserve(t.size());
  for (const auto& [name, n] : t) out.push_back({std::string(name), n});
  std::sort(out.begin(), out.end(), [](const TopShare& a, const TopShare& b) {
    return a.samples != b.samples ? a.samples > b.samples : a.name < b.name;
  });
  return out;
}

// nvcc's generated launch stubs are not what a user calls a launch site (as the HTML report's tables).
bool is_stub(std::string_view name) { return name.rfind("__device_stub", 0) == 0; }

struct Lines {
  Tally samples;
  std::unordered_map<std::string_view, Tally> kernels;
  void add(std::string_view line, std::string_view kernel, uint64_t n) {
    samples[line] += n;
    if (!kernel.empty()) kernels[line][kernel] += n;
  }
  std::vector<TopLine> rows() const {
    std::vector<TopLine> out;
    for (auto& s : sorted(samples)) {
      TopLine l{s.name, s.samples, {}};
      if (auto it = kernels.find(s.name); it != kernels.end()) l.kernels = sorted(it->second);
      out.push_back(std::move(l));
    }
    return out;
  }
};

double pct(uint64_t n, uint64_t of) { return of ? 100.0 * static_cast<double>(n) / static_cast<double>(of) : 0.0; }

// A name cut to `width` characters (kernel names of templated C++ run to hundreds) for lists inside a
// row; the rows' own name column is never cut.
std::string cut(std::string_view s, size_t width) {
  if (s.size() <= width) return std::string(s);
  return std::string(s.substr(0, width - 3)) + "...";
}

std::string share_list(const std::vector<TopShare>& v, uint64_t of, size_t n, size_t width) {
  std::string out;
  for (size_t i = 0; i < v.size() && i < n; i++)
    out += fmt::format("{}{} {:.1f}%", i ? ", " : "", cut(v[i].name, width), pct(v[i].samples, of));
  if (v.size() > n) out += fmt::format(", {} more", v.size() - n);
  return out;
}

}  // namespace

TopTables top_tables(const FlameData& data) {
  TopTables t;
  t.user_known = !data.user_frames.empty();
  Tally kernels, stalls, no_site;
  std::unordered_map<std::string_view, Tally> kernel_stalls, kernel_sites;
  std::unordered_set<std::string> names;  // the instructions' names, which no frame holds
  Lines user, gpu, instructions;
  for (const WeightedStack& s : data.stacks) {
    if (!s.count) continue;
    t.total += s.count;
    const FrameList& f = s.frames;
    // The CPU part ends at the separator (or, in inputs without one, at the kernel).
    size_t cpu_end = f.size();
    for (size_t i = 0; i < f.size(); i++)
      if (f[i].kind == FrameKind::Separator || f[i].kind == FrameKind::GpuKernel) {
        cpu_end = i;
        break;
      }
    std::string_view kernel, line, stall, site, instruction;
    for (size_t i = cpu_end; i < f.size(); i++) {
      if (f[i].kind == FrameKind::GpuKernel && kernel.empty()) kernel = f[i].name;
      if (f[i].kind == FrameKind::GpuInstruction) instruction = f[i].name;
      if (f[i].kind == FrameKind::GpuSource) line = f[i].name;  // the deepest: inlined code's own line
      if (f[i].kind == FrameKind::Stall) stall = f[i].name;
    }
    for (size_t i = cpu_end; i-- > 0;) {
      const Frame& fr = f[i];
      bool mine = t.user_known ? data.user_frames.count(fr.name) > 0
                               : fr.kind == FrameKind::Python || fr.kind == FrameKind::Native;
      if (mine && !is_stub(fr.name)) {
        site = fr.name;
        break;
      }
    }
    if (!kernel.empty()) {
      kernels[kernel] += s.count;
      if (!stall.empty()) kernel_stalls[kernel][stall] += s.count;
      if (!site.empty()) kernel_sites[kernel][site] += s.count;
    }
    if (!stall.empty()) stalls[stall] += s.count;
    if (!site.empty()) user.add(site, kernel, s.count);
    if (!line.empty()) gpu.add(line, kernel, s.count);
    // Without source lines an instruction is named by its kernel: "0x1a0 FFMA" of which kernel.
    if (line.empty() && !instruction.empty() && !kernel.empty())
      instructions.add(names.emplace(std::string(kernel) + " " + std::string(instruction)).first->c_str(), kernel, s.count);
  }
  std::unordered_map<std::string_view, std::pair<double, uint64_t>> spans;
  for (const KernelSpan& k : data.kernels) {
    auto& e = spans[k.name];
    const double ms = static_cast<double>(k.end_ns > k.start_ns ? k.end_ns - k.start_ns : 0) / 1e6;
    e.first += ms;
    e.second++;
    t.busy_ms += ms;
  }
  for (TopShare& k : sorted(kernels)) {
    TopKernel row;
    row.name = std::move(k.name);
    row.samples = k.samples;
    if (auto it = spans.find(row.name); it != spans.end()) std::tie(row.gpu_ms, row.launches) = it->second;
    if (auto it = kernel_sites.find(row.name); it != kernel_sites.end()) row.site = sorted(it->second).front();
    if (auto it = kernel_stalls.find(row.name); it != kernel_stalls.end()) row.stalls = sorted(it->second);
    t.kernels.push_back(std::move(row));
  }
  t.kernel_count = t.kernels.size();
  t.stalls = sorted(stalls);
  t.user_lines = user.rows();
  t.gpu_lines = gpu.rows();
  t.gpu_lines_are_instructions = t.gpu_lines.empty();
  if (t.gpu_lines_are_instructions) t.gpu_lines = instructions.rows();
  return t;
}

void write_text_report(const FlameData& data, const TopTables& t, size_t limit, std::ostream& out) {
  const uint64_t total = t.total;
  out << (data.title.empty() ? std::string("aiflame report") : data.title) << "\n";
  if (!data.subtitle.empty()) out << data.subtitle << "\n";
  if (data.summary.samples && !data.processes.empty())  // recorded profiles; folded stacks have no launches
    out << fmt::format("{:.1f}% of {} GPU samples attributed to a launch stack", pct(static_cast<uint64_t>(data.summary.attributed), data.summary.samples),
                       data.summary.samples)
        << (data.duration_ns ? fmt::format(", {:.2f} s recorded", static_cast<double>(data.duration_ns) / 1e9) : "")
        << "\n";
  if (!total) {
    out << "\nNo GPU samples.\n";
    return;
  }
  const char* site_head = t.user_known ? "top launch site in your code" : "top launch site";
  out << fmt::format("\nTop kernels ({} of {}, by GPU samples; each with its {})\n", std::min(limit, t.kernels.size()),
                     t.kernels.size(), site_head);
  out << fmt::format("{:>9} {:>6} {:>10} {:>9}  {}\n", "samples", "%", "GPU ms", "launches", "kernel");
  for (size_t i = 0; i < t.kernels.size() && i < limit; i++) {
    const TopKernel& k = t.kernels[i];
    if (data.kernels.empty())  // an input without kernel executions (folded stacks, iaprof)
      out << fmt::format("{:>9} {:>5.1f}% {:>10} {:>9}  {}\n", k.samples, pct(k.samples, total), "-", "-", k.name);
    else
      out << fmt::format("{:>9} {:>5.1f}% {:>10.3f} {:>9}  {}\n", k.samples, pct(k.samples, total), k.gpu_ms, k.launches, k.name);
    out << fmt::format("{:>39}{}\n", "",
                       k.site.name.empty() ? std::string("from -")
                                           : fmt::format("from {}, {:.1f}% of the kernel", k.site.name,
                                                         pct(k.site.samples, k.samples)));
  }

  out << "\nStall reasons\n";
  out << fmt::format("{:>9} {:>6}  {}\n", "samples", "%", "reason");
  for (size_t i = 0; i < t.stalls.size() && i < limit; i++)
    out << fmt::format("{:>9} {:>5.1f}%  {}\n", t.stalls[i].samples, pct(t.stalls[i].samples, total), t.stalls[i].name);
  if (t.stalls.empty()) out << "  (none: the picture has no stall-reason frames)\n";

  out << "\nStall reasons of the top kernels (share of each kernel's samples)\n";
  for (size_t i = 0; i < t.kernels.size() && i < std::min<size_t>(limit, 5); i++) {
    const TopKernel& k = t.kernels[i];
    out << "  " << cut(k.name, 60) << ": " << (k.stalls.empty() ? "-" : share_list(k.stalls, k.samples, 4, 40)) << "\n";
  }

  out << (t.user_known ? "\nTop lines of your code (the deepest frame of your code in each launch stack), with their kernels\n"
                       : "\nTop launch sites (the deepest Python or native frame of each launch stack), with their kernels\n");
  out << fmt::format("{:>9} {:>6}  {}\n", "samples", "%", "line");
  for (size_t i = 0; i < t.user_lines.size() && i < limit; i++) {
    const TopLine& l = t.user_lines[i];
    out << fmt::format("{:>9} {:>5.1f}%  {}\n", l.samples, pct(l.samples, total), l.name);
    if (!l.kernels.empty()) out << fmt::format("{:>19}{}\n", "", share_list(l.kernels, l.samples, 3, 50));
  }
  if (t.user_lines.empty()) out << "  (none: no launch stack has a frame of your code)\n";

  out << (t.gpu_lines_are_instructions ? "\nTop GPU instructions (the samples have no GPU source lines: kernels built "
                                         "without -lineinfo, or cubins not kept)\n"
                                       : "\nTop GPU source lines, with their kernels\n");
  out << fmt::format("{:>9} {:>6}  {}\n", "samples", "%", t.gpu_lines_are_instructions ? "kernel and instruction" : "line");
  for (size_t i = 0; i < t.gpu_lines.size() && i < limit; i++) {
    const TopLine& l = t.gpu_lines[i];
    out << fmt::format("{:>9} {:>5.1f}%  {}\n", l.samples, pct(l.samples, total), l.name);
    if (!l.kernels.empty() && !t.gpu_lines_are_instructions)
      out << fmt::format("{:>19}{}\n", "", share_list(l.kernels, l.samples, 3, 50));
  }
  if (t.gpu_lines.empty()) out << "  (none: the input has no GPU source lines or instructions)\n";
}

std::vector<std::string> summary_lines(const TopTables& t) {
  if (!t.total) return {};
  std::vector<std::string> out;
  const size_t n = std::min<size_t>(3, t.kernels.size());
  uint64_t in_top = 0;
  for (size_t i = 0; i < n; i++) in_top += t.kernels[i].samples;
  std::string kernels;
  for (size_t i = 0; i < n; i++)
    kernels += fmt::format("{}{} {:.1f}%", i ? ", " : "", cut(t.kernels[i].name, 50), pct(t.kernels[i].samples, t.total));
  out.push_back(fmt::format("{:.1f}% of GPU samples in {} kernel{}{}: {}", pct(in_top, t.total), n, n == 1 ? "" : "s",
                            t.kernels.size() > n ? fmt::format(" (of {})", t.kernels.size()) : "", kernels));
  if (!t.stalls.empty())
    out.push_back(fmt::format("top stall {} {:.1f}%{}", t.stalls[0].name, pct(t.stalls[0].samples, t.total),
                              t.stalls.size() > 1 ? fmt::format(" (then {} {:.1f}%)", t.stalls[1].name, pct(t.stalls[1].samples, t.total))
                                                  : ""));
  if (!t.user_lines.empty())
    out.push_back(fmt::format("top line {} {:.1f}% of GPU samples{}", t.user_lines[0].name,
                              pct(t.user_lines[0].samples, t.total),
                              t.user_lines[0].kernels.empty() ? ""
                                                              : ", mostly " + cut(t.user_lines[0].kernels[0].name, 50)));
  return out;
}

void TextWriter::write(const FlameData& data, std::ostream& out) const {
  write_text_report(data, top_tables(data), 10, out);
}

}  // namespace aiflame
