#include "output/html_writer.h"

#include <cmath>
#include <algorithm>
#include <map>
#include <ostream>
#include <set>
#include <unordered_map>

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
  std::vector<uint32_t> stack_pre, stack_len, stack_frames;
  std::vector<uint64_t> stack_count(data.stacks.size());
  const std::vector<uint32_t>* prev = nullptr;
  for (uint32_t s : order) {
    const auto& cur = ids[s];
    size_t k = 0;
    if (prev)
      while (k < cur.size() && k < prev->size() && cur[k] == (*prev)[k]) k++;
    stack_pre.push_back(static_cast<uint32_t>(k));
    stack_len.push_back(static_cast<uint32_t>(cur.size() - k));
    stack_frames.insert(stack_frames.end(), cur.begin() + static_cast<std::ptrdiff_t>(k), cur.end());
    stack_count[s] = data.stacks[s].count;
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
  // Timeline as flat quadruples (stack, device, ms since start, weight).
  std::vector<double> timeline;
  timeline.reserve(data.timeline.size() * 4);
  for (const auto& t : data.timeline) {
    if (t.weight <= 0) continue;
    timeline.push_back(t.stack);
    timeline.push_back(t.device);
    timeline.push_back(static_cast<double>(t.time_ns / 1000000));
    timeline.push_back(std::round(t.weight * 1000) / 1000);
  }
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
    std::vector<uint32_t> stack_process(data.stacks.size());
    for (size_t i = 0; i < data.stacks.size(); i++) stack_process[i] = process_of(data.stacks[i].process);
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
  std::string json = html_report_data(data).dump(-1, ' ', true, nlohmann::json::error_handler_t::replace);
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
      << "<h1>" << title << "</h1>\n<div id=\"subtitle\">" << html_escape(data.subtitle) << "</div>\n"
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
