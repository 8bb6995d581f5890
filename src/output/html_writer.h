// A self-contained HTML report: flame graph (normal and inverted, search, click-zoom, breadcrumbs,
// colours by frame kind), a sub-second heatmap whose dragged range re-draws the flame graph, and
// tables of kernels, GPU source lines, stall reasons and launch sites; with several recorded processes,
// a rank/process and device selector that re-draws all of it from the selected subset, heatmap lanes
// per rank and a per-process totals table. Everything is inlined; the data travels as one JSON block
// with shared strings and stacks as a prefix tree.
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "output/writer.h"

namespace aiflame {

class HtmlWriter : public Writer {
 public:
  std::string_view format() const override { return "html"; }
  void write(const FlameData& data, std::ostream& out) const override;
};

// The timeline's stacks (time ranges re-draw from it): each stack, or, when one of its frames is
// under min_share of all samples (the SVG's minimum width: 0.1 px of 1200), the stack cut after its
// last frame at or over it, as the SVG merges thin frames into their parent. ids are the stacks'
// frame ids, order their sorted order; `of` maps each stack to its timeline stack, an index past the
// stacks for those cut to a prefix no stack ends at (`added`, with the stack each was cut from).
inline constexpr double kHtmlTimelineMinShare = 0.1 / 1200;
struct ThinStacks {
  std::vector<uint32_t> of;
  std::vector<std::vector<uint32_t>> added;
  std::vector<uint32_t> added_from;
};
ThinStacks merge_thin_stacks(const std::vector<std::vector<uint32_t>>& ids, const std::vector<uint32_t>& order,
                             const std::vector<uint64_t>& counts, double min_share);

// The page's timeline: flat quadruples (stack, device, ms since the start, weight), one per timeline
// stack (stack_of: a stack's timeline stack, empty for itself), device and heatmap cell (the collection
// interval), at most max_entries of them (about 20 bytes each in the page): past that the thinnest
// stacks are left out of the timeline (not of the picture), and how many and what share of the
// samples is said.
inline constexpr size_t kMaxHtmlTimelineEntries = 1'000'000;
struct HtmlTimeline {
  std::vector<double> quadruples;
  size_t entries = 0;
  size_t left_out_stacks = 0;
  double left_out_share = 0;
  double min_share = 0;  // the share under which frames were merged (bounded_html_timeline)
};
HtmlTimeline html_timeline(const FlameData& data, const std::vector<uint32_t>& stack_of = {},
                           size_t max_entries = kMaxHtmlTimelineEntries);
// The page's timeline: thin frames merged at the SVG's share (kHtmlTimelineMinShare) and, while the
// timeline is over max_entries, at 4, 16, 64... times it, up to kHtmlTimelineMaxShare; only then are
// the thinnest stacks left out. `thin` receives the merge used.
inline constexpr double kHtmlTimelineMaxShare = 1.0 / 12;
HtmlTimeline bounded_html_timeline(const FlameData& data, const std::vector<std::vector<uint32_t>>& ids,
                                   const std::vector<uint32_t>& order, ThinStacks& thin,
                                   size_t max_entries = kMaxHtmlTimelineEntries);

// The data block the page's script reads (public for the tests).
nlohmann::json html_report_data(const FlameData& data);
// The per-process table: {"rows": [{rank, pid, name, host, devices, samples, kernels, launches,
// seconds, busy}...] in the order of the rows, "line": process_totals_line(), "imbalance": [least busy,
// most busy] row indices where busy_imbalance() finds them}.
nlohmann::json process_table_data(const std::vector<ProcessRow>& rows);
// Unsigned numbers as text: 5 bits per base-64 digit, low bits first, digit value 32 and up meaning
// "more digits follow". The page's script unpacks them.
std::string pack_numbers(const std::vector<uint32_t>& v);
// Text for an HTML text node or attribute: & < > " ' escaped, invalid UTF-8 and controls replaced.
std::string html_escape(std::string_view s);

}  // namespace aiflame
