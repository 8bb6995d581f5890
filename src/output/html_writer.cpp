#include "output/html_writer.h"

#include <cmath>
#include <algorithm>
#include <map>
#include <ostream>
#include <set>
#include <tuple>
#include <unordered_map>
#include <unordered_set>

#include <fmt/format.h>

#include "output/html_assets.h"
#include "output/svg_writer.h"

namespace aiflame {

std::string html_escape(std::string_view s) { return svg_escape(svg_clean_text(s)); }

std::string pack_numbers(const std::vector<uint32_t>& v) {
  static constexpr char kDigits[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve(v.size() * 2);
  for (uint32_t x : v) {
    do {
      uint32_t d = x & 31;
      x >>= 5;
      out += kDigits[d | (x ? 32 : 0)];
    } while (x);
  }
  return out;
}

nlohmann::json process_table_data(const std::vector<ProcessRow>& rows) {
  using nlohmann::json;
  json list = json::array();
  for (const auto& r : rows)
    list.push_back({{"rank", r.rank},
                    {"pid", r.pid},
                    {"name", r.name},
                    {"host", r.host},
                    {"devices", r.devices},
                    {"samples", r.samples},
                    {"kernels", r.kernels},
                    {"launches", r.launches},
                    {"seconds", std::round(r.seconds * 1000) / 1000},
                    {"busy", std::round(r.busy_fraction() * 10000) / 10000}});
  json j = {{"rows", list}, {"line", process_totals_line(rows)}};
  if (auto b = busy_imbalance(rows)) j["imbalance"] = {b->least, b->most};
  return j;
}

namespace {

// Visits the stacks in sorted order with path[d], the prefix tree's node of the stack's frame at
// depth d: stacks sorted by their frame ids share a node where they share a prefix with the one
// before, and nodes are numbered as they open, so that two sweeps agree. Returns the node count.
template <class Visit>
uint32_t sweep_prefix_tree(const std::vector<uint32_t>& order, const std::vector<std::vector<uint32_t>>& ids,
                           Visit visit) {
  std::vector<uint32_t> path;
  uint32_t next = 0;
  const std::vector<uint32_t>* prev = nullptr;
  for (uint32_t s : order) {
    const auto& cur = ids[s];
    size_t k = 0;
    if (prev)
      while (k < cur.size() && k < prev->size() && k < path.size() && cur[k] == (*prev)[k]) k++;
    path.resize(k);
    while (path.size() < cur.size()) path.push_back(next++);
    visit(s, path);
    prev = &cur;
  }
  return next;
}

}  // namespace

ThinStacks merge_thin_stacks(const std::vector<std::vector<uint32_t>>& ids, const std::vector<uint32_t>& order,
                             const std::vector<uint64_t>& counts, double min_share) {
  ThinStacks out;
  out.of.resize(ids.size());
  std::vector<uint64_t> weight;
  std::unordered_map<uint32_t, uint32_t> exact;  // node -> the stack that ends there
  uint64_t total = 0;
  for (uint64_t c : counts) total += c;
  uint32_t nodes = sweep_prefix_tree(order, ids, [&](uint32_t s, const std::vector<uint32_t>& path) {
    if (!path.empty() && path.back() >= weight.size()) weight.resize(path.back() + 1, 0);  // the newest node
    for (uint32_t n : path) weight[n] += counts[s];
    if (!path.empty()) exact.try_emplace(path.back(), s);
  });
  weight.resize(nodes, 0);
  const double min_weight = static_cast<double>(total) * min_share;
  std::unordered_map<uint32_t, uint32_t> prefix_of;  // node -> the added stack that ends there
  sweep_prefix_tree(order, ids, [&](uint32_t s, const std::vector<uint32_t>& path) {
    size_t d = 0;
    while (d < path.size() && static_cast<double>(weight[path[d]]) >= min_weight) d++;
    size_t keep = std::max<size_t>(d, 1);
    if (keep >= path.size()) {
      out.of[s] = s;
      return;
    }
    uint32_t node = path[keep - 1];
    if (auto e = exact.find(node); e != exact.end()) {
      out.of[s] = e->second;
      return;
    }
    auto [it, fresh] = prefix_of.try_emplace(node, static_cast<uint32_t>(ids.size() + out.added.size()));
    if (fresh) {
      out.added.emplace_back(ids[s].begin(), ids[s].begin() + static_cast<std::ptrdiff_t>(keep));
      out.added_from.push_back(s);
    }
    out.of[s] = it->second;
  });
  return out;
}

namespace {

struct CellEntry {
  uint64_t cell;
  uint32_t stack, device;
  double weight;
  bool same(const CellEntry& o) const { return cell == o.cell && stack == o.stack && device == o.device; }
};

// Sorted by (cell, stack, device), equal keys summed.
void sort_and_sum(std::vector<CellEntry>& entries) {
  std::sort(entries.begin(), entries.end(), [](const CellEntry& a, const CellEntry& b) {
    return std::tie(a.cell, a.stack, a.device) < std::tie(b.cell, b.stack, b.device);
  });
  size_t n = 0;
  for (size_t i = 0; i < entries.size(); i++) {
    if (n > 0 && entries[n - 1].same(entries[i])) entries[n - 1].weight += entries[i].weight;
    else entries[n++] = entries[i];
  }
  entries.resize(n);
  entries.shrink_to_fit();
}

uint64_t cell_ms_of(const FlameData& data) {
  return std::clamp<uint64_t>(data.summary.interval_ms ? data.summary.interval_ms : 10, 1, 1000);
}

// The heatmap's cells are the finest time the page uses (it bins by the collection interval, and a
// dragged range is whole cells): samples of one stack and device in one cell are one entry. A
// 300-s profile had 10 million entries at 1 ms, 410 MB of the page's 416 MB.
// stack_of maps a stack to its timeline stack (empty: itself).
std::vector<CellEntry> cell_entries(const FlameData& data, const std::vector<uint32_t>& stack_of) {
  const uint64_t cell_ms = cell_ms_of(data);
  std::vector<CellEntry> entries;
  for (const auto& t : data.timeline) {
    if (t.weight <= 0) continue;
    CellEntry e{t.time_ns / 1000000 / cell_ms, t.stack < stack_of.size() ? stack_of[t.stack] : t.stack, t.device,
                t.weight};
    if (!entries.empty() && entries.back().same(e)) entries.back().weight += e.weight;  // the pipeline's order
    else entries.push_back(e);
  }
  sort_and_sum(entries);
  return entries;
}

HtmlTimeline finish_timeline(std::vector<CellEntry> entries, uint64_t cell_ms, size_t max_entries) {
  HtmlTimeline out;
  if (entries.size() > max_entries) {
    // Still too many: the thinnest stacks (by their weight in the timeline) leave the timeline until
    // the rest fits. The whole-run picture and the tables come from the stacks' counts and keep them.
    std::unordered_map<uint32_t, std::pair<double, size_t>> by_stack;  // weight, entries
    double total = 0;
    for (const auto& e : entries) {
      auto& st = by_stack[e.stack];
      st.first += e.weight;
      st.second++;
      total += e.weight;
    }
    std::vector<std::pair<double, uint32_t>> order;
    for (const auto& [stack, st] : by_stack) order.push_back({st.first, stack});
    std::sort(order.begin(), order.end());
    std::unordered_set<uint32_t> dropped;
    size_t left = entries.size();
    double dropped_weight = 0;
    for (const auto& [w, stack] : order) {
      if (left <= max_entries) break;
      dropped.insert(stack);
      left -= by_stack[stack].second;
      dropped_weight += w;
    }
    std::erase_if(entries, [&](const CellEntry& e) { return dropped.count(e.stack) > 0; });
    out.left_out_stacks = dropped.size();
    out.left_out_share = total > 0 ? dropped_weight / total : 0;
  }
  out.entries = entries.size();
  out.quadruples.reserve(entries.size() * 4);
  for (const auto& e : entries) {
    out.quadruples.push_back(e.stack);
    out.quadruples.push_back(e.device);
    out.quadruples.push_back(static_cast<double>(e.cell * cell_ms));
    out.quadruples.push_back(std::round(e.weight * 1000) / 1000);
  }
  return out;
}

}  // namespace

HtmlTimeline html_timeline(const FlameData& data, const std::vector<uint32_t>& stack_of, size_t max_entries) {
  return finish_timeline(cell_entries(data, stack_of), cell_ms_of(data), max_entries);
}

HtmlTimeline bounded_html_timeline(const FlameData& data, const std::vector<std::vector<uint32_t>>& ids,
                                   const std::vector<uint32_t>& order, ThinStacks& thin, size_t max_entries) {
  std::vector<uint64_t> counts(data.stacks.size());
  for (size_t i = 0; i < counts.size(); i++) counts[i] = data.stacks[i].count;
  // Every stack as it is while the timeline fits: merged stacks broke the GPU selector's totals in
  // the browser check (ddp.html, GPU 1 un-checked: 1929 samples where --devices 0 gives 1674). Then
  // the SVG's minimum width; where the timeline is still too long (hundreds of stacks in every cell
  // of a long run), wider and wider frames merge, 4 times each step, up to 1/12 of the run.
  {
    std::vector<CellEntry> entries = cell_entries(data, {});
    if (entries.size() <= max_entries) {
      thin = ThinStacks{};
      HtmlTimeline out = finish_timeline(std::move(entries), cell_ms_of(data), max_entries);
      out.min_share = 0;
      return out;
    }
  }
  double share = kHtmlTimelineMinShare;
  while (true) {
    thin = merge_thin_stacks(ids, order, counts, share);
    // From the timeline again each time rather than from a copy: one list of entries at a time.
    std::vector<CellEntry> entries = cell_entries(data, thin.of);
    if (entries.size() <= max_entries || share * 4 > kHtmlTimelineMaxShare) {
      HtmlTimeline out = finish_timeline(std::move(entries), cell_ms_of(data), max_entries);
      out.min_share = share;
      return out;
    }
    share *= 4;
  }
}

nlohmann::json html_report_data(const FlameData& data) {
  using nlohmann::json;
  // Frames shared, numbered in (name, kind) order; stacks sorted by their frame ids, each stored as
  // the length of the prefix it shares with the previous one plus its own frames. The page rebuilds
  // the prefix tree from that in one pass, children already in flamegraph.pl's alphabetical order.
  std::map<std::pair<std::string_view, FrameKind>, uint32_t> frame_ids;
  for (const auto& s : data.stacks)
    for (const auto& f : s.frames) frame_ids.emplace(std::make_pair(std::string_view(f.name), f.kind), 0);
  std::vector<std::string_view> names;
  std::vector<uint32_t> frames;  // pairs: name id, kind
  std::unordered_map<std::string_view, uint32_t> name_ids;
  uint32_t next = 0;
  for (auto& [key, id] : frame_ids) {
    id = next++;
    auto [nit, fresh] = name_ids.try_emplace(key.first, static_cast<uint32_t>(names.size()));
    if (fresh) names.push_back(key.first);
    frames.push_back(nit->second);
    frames.push_back(static_cast<uint32_t>(key.second));
  }
  std::vector<std::vector<uint32_t>> ids(data.stacks.size());
  for (size_t i = 0; i < data.stacks.size(); i++)
    for (const auto& f : data.stacks[i].frames) ids[i].push_back(frame_ids.at({f.name, f.kind}));
  std::vector<uint32_t> order(data.stacks.size());
  for (size_t i = 0; i < order.size(); i++) order[i] = static_cast<uint32_t>(i);
  std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) { return ids[a] < ids[b]; });
  // The timeline's stacks: frames under the SVG's minimum width merged into their parent (stacks
  // cut there, added with no whole-run count of their own), so that the timeline, which time ranges
  // re-draw from, grows with what can be seen rather than with every distinct stack.
  ThinStacks thin;
  HtmlTimeline bounded = bounded_html_timeline(data, ids, order, thin);
  const size_t original = ids.size();
  for (auto& a : thin.added) ids.push_back(std::move(a));
  if (!thin.added.empty()) {
    order.resize(ids.size());
    for (size_t i = 0; i < order.size(); i++) order[i] = static_cast<uint32_t>(i);
    std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) { return ids[a] < ids[b]; });
  }
  std::vector<uint32_t> stack_pre, stack_len, stack_frames;
  std::vector<uint64_t> stack_count(ids.size());
  const std::vector<uint32_t>* prev = nullptr;
  for (uint32_t s : order) {
    const auto& cur = ids[s];
    size_t k = 0;
    if (prev)
      while (k < cur.size() && k < prev->size() && cur[k] == (*prev)[k]) k++;
    stack_pre.push_back(static_cast<uint32_t>(k));
    stack_len.push_back(static_cast<uint32_t>(cur.size() - k));
    stack_frames.insert(stack_frames.end(), cur.begin() + static_cast<std::ptrdiff_t>(k), cur.end());
    stack_count[s] = s < original ? data.stacks[s].count : 0;
    prev = &cur;
  }
  json j;
  j["title"] = data.title;
  j["subtitle"] = data.subtitle;
  json kinds = json::array();
  for (int k = 0; k <= static_cast<int>(FrameKind::Unattributed); k++)
    kinds.push_back(std::string(frame_kind_name(static_cast<FrameKind>(k))));
  j["kinds"] = kinds;
  j["names"] = names;
  j["frames"] = frames;
  // The frames of the user's own code (launch sites); absent where the input does not tell.
  if (!data.user_frames.empty()) {
    std::vector<uint32_t> user;
    for (const auto& [key, id] : frame_ids)
      if ((key.second == FrameKind::Python || key.second == FrameKind::Native) &&
          data.user_frames.count(FrameName(key.first)))
        user.push_back(id);
    j["user_frames"] = user;
  }
  // The big arrays packed (pack_numbers): about half the bytes of decimal JSON, faster to load.
  j["stack_order"] = pack_numbers(order);  // sorted position -> stack index (the timeline's numbering)
  j["stack_pre"] = pack_numbers(stack_pre);
  j["stack_len"] = pack_numbers(stack_len);
  j["stack_frames"] = pack_numbers(stack_frames);
  j["stack_count"] = stack_count;  // by stack index
  // Of each stack's count, what the attribution's model split between launch stacks (by stack index;
  // absent when nothing was): the page marks those frames with "~" and the share estimated.
  std::vector<double> estimated(stack_count.size(), 0.0);
  bool any_estimated = false;
  for (size_t s = 0; s < estimated.size() && s < original; s++)
    if (data.stacks[s].estimated && data.stacks[s].count)
      estimated[s] = static_cast<double>(data.stacks[s].estimated) / static_cast<double>(data.stacks[s].count),
      any_estimated = true;
  if (any_estimated) j["stack_estimated"] = estimated;
  // Timeline as flat quadruples (stack, device, ms since start, weight), bounded (html_timeline).
  std::vector<double>& timeline = bounded.quadruples;
  if (bounded.min_share > kHtmlTimelineMinShare)
    j["subtitle"] = data.subtitle + "  |  time ranges merge frames under " + fmt::format("{:.2g}", bounded.min_share * 100) +
                    "% of the run into their parents, to bound the page";
  if (bounded.left_out_stacks)
    j["subtitle"] = j["subtitle"].get<std::string>() + "  |  time ranges leave out the " +
                    std::to_string(bounded.left_out_stacks) + " thinnest stacks (" +
                    fmt::format("{:.2g}", bounded.left_out_share * 100) +
                    "% of the samples) to bound the page; the whole run shows them all";
  j["timeline"] = timeline;
  // Kernels: GPU time (ms) and launches per kernel name, process and device, so that the page can sum
  // those of the processes and devices selected: name -> flat quadruples (process, device, ms, launches).
  const auto no_process = static_cast<uint32_t>(data.processes.size());  // "not a recorded process"
  auto process_of = [&](uint32_t p) { return p < no_process ? p : no_process; };
  std::map<std::string_view, std::map<std::pair<uint32_t, uint32_t>, std::pair<double, uint64_t>>> kernels;
  for (const auto& k : data.kernels) {
    auto& e = kernels[k.name][{process_of(k.process), k.device}];
    e.first += static_cast<double>(k.end_ns - k.start_ns) / 1e6;
    e.second++;
  }
  json kt = json::object();
  for (const auto& [name, parts] : kernels) {
    json& row = kt[std::string(name)] = json::array();
    for (const auto& [key, v] : parts) {
      row.push_back(key.first);
      row.push_back(key.second);
      row.push_back(std::round(v.first * 1000) / 1000);
      row.push_back(v.second);
    }
  }
  j["kernel_table"] = kt;
  if (!data.processes.empty()) {
    // Which recorded process each stack (by stack index) came from; the per-process table's rows.
    std::vector<uint32_t> stack_process(ids.size());
    for (size_t i = 0; i < ids.size(); i++)
      stack_process[i] = process_of(data.stacks[i < original ? i : thin.added_from[i - original]].process);
    j["stack_process"] = pack_numbers(stack_process);
    j["processes"] = process_table_data(data.processes);
  }
  uint64_t end = data.duration_ns;
  for (const auto& t : data.timeline) end = std::max(end, t.time_ns);
  j["duration_ms"] = static_cast<double>(end / 1000000);
  const RunSummary& s = data.summary;
  j["summary"] = {{"command", s.command},     {"devices", s.devices}, {"samples", s.samples},
                  {"dropped", s.dropped},     {"attributed", s.attributed},
                  {"interval_ms", s.interval_ms}, {"processes", s.processes}};
  return j;
}

void HtmlWriter::write(const FlameData& data, std::ostream& out) const {
  // ensure_ascii keeps the block pure ASCII (invalid UTF-8 replaced); "</" is escaped so that no
  // name can close the script element.
  nlohmann::json report = html_report_data(data);
  const std::string subtitle = report["subtitle"].get<std::string>();  // with the timeline's note, if any
  std::string json = report.dump(-1, ' ', true, nlohmann::json::error_handler_t::replace);
  report = nullptr;
  std::string safe;
  safe.reserve(json.size() + 64);
  for (size_t i = 0; i < json.size(); i++) {
    if (json[i] == '<') safe += "\\u003c";
    else safe += json[i];
  }
  std::string title = html_escape(data.title.empty() ? "aiflame report" : data.title);
  out << "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n<title>" << title << "</title>\n"
      << "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; script-src 'unsafe-inline'; "
         "style-src 'unsafe-inline'\">\n<style>"
      << kReportCss << "</style></head>\n<body>\n"
      << "<h1>" << title << "</h1>\n<div id=\"subtitle\">" << html_escape(subtitle) << "</div>\n"
      << "<table id=\"summary\"></table>\n"
      << "<div id=\"procs\" style=\"display:none\"><h2>Processes</h2><table id=\"t-procs\"></table>"
         "<div id=\"imbalance\"></div></div>\n"
      << "<div id=\"selector\" class=\"controls\"></div>\n"
      << "<h2 style=\"font-size:14px;margin:12px 0 2px\">GPU samples over time</h2>\n"
      << "<div>Drag over the heatmap to show the flame graph of that time range only. <span id=\"range\"></span> "
         "<button id=\"allrange\">Whole run</button> <span id=\"heatinfo\"></span></div>\n"
      << "<div id=\"heatwrap\"><canvas id=\"heatmap\"></canvas></div>\n"
      << "<div class=\"controls\"><label>Search <input type=\"text\" id=\"search\" placeholder=\"regex, e.g. "
         "long_scoreboard\"></label><span id=\"match\"></span>"
      << "<label><input type=\"checkbox\" id=\"inverted\"> Inverted (leaf first, icicle)</label>"
      << "<button id=\"reset\">Reset zoom</button> <span>Samples in view: <b id=\"total\"></b></span></div>\n"
      << "<div id=\"legend\"></div>\n<div id=\"breadcrumbs\"></div>\n<canvas id=\"flame\"></canvas>\n"
      << "<div id=\"details\"></div>\n"
      << "<div class=\"tables\"><div><h2>Top kernels</h2><table id=\"t-kernels\"></table></div>"
      << "<div><h2>Top GPU source lines</h2><table id=\"t-lines\"></table></div>"
      << "<div><h2>Stall reasons</h2><table id=\"t-stalls\"></table></div>"
      << "<div><h2>Top launch sites</h2><table id=\"t-sites\"></table></div></div>\n"
      << "<script type=\"application/json\" id=\"aiflame-data\">" << safe << "</script>\n"
      << "<script>" << kReportJs << "</script>\n</body></html>\n";
}

}  // namespace aiflame
