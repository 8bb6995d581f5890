#include "output/diff_writer.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <map>

#include "output/folded_writer.h"
#include "output/svg_writer.h"

namespace aiflame {

namespace {

// aiflame's instruction frame "IMAD 0x70": an upper-case SASS mnemonic, one space, the offset.
bool is_named_instruction(std::string_view name, size_t* offset_at) {
  size_t space = name.find(' ');
  if (space == std::string_view::npos || space == 0 || name.substr(space + 1, 2) != "0x") return false;
  for (char c : name.substr(0, space))
    if (!((c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_')) return false;
  for (char c : name.substr(space + 3))
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  *offset_at = space + 1;
  return true;
}

// What stacks are matched by: their folded line without annotations, aiflame's instruction frames
// by their offset alone. A profile symbolized where no nvdisasm ran names no mnemonics ("0x70" for
// "IMAD 0x70"), and the same instruction of the same kernel must still match.
std::string match_key(const FrameList& frames, bool* named) {
  std::string key;
  *named = false;
  for (size_t i = 0; i < frames.size(); i++) {
    if (i) key += ';';
    std::string name = folded_frame_name(frames[i].name);
    size_t at = 0;
    if (frames[i].kind == FrameKind::GpuInstruction && is_named_instruction(name, &at)) {
      *named = true;
      name.erase(0, at);
    }
    key += name;
  }
  return key;
}

}  // namespace

DiffData make_diff(const FlameData& before, const FlameData& after) {
  DiffData d;
  d.before_total = before.total(), d.after_total = after.total();
  d.title = "Differential flame graph: " + (after.title.empty() ? after.process : after.title);
  std::map<std::string, DiffStack> by_line;
  std::map<std::string, bool> named;  // whether the frames shown name their instructions
  for (const auto& s : before.stacks) {
    if (!s.count) continue;
    bool has_names = false;
    std::string key = match_key(s.frames, &has_names);
    auto& ds = by_line[key];
    if (ds.frames.empty() || (has_names && !named[key])) ds.frames = s.frames, named[key] = has_names;
    ds.before += s.count;
  }
  for (const auto& s : after.stacks) {
    if (!s.count) continue;
    bool has_names = false;
    std::string key = match_key(s.frames, &has_names);
    auto& ds = by_line[key];
    // AFTER's kinds win, unless only BEFORE names the instructions.
    if (ds.frames.empty() || (!ds.after && (has_names || !named[key])))
      ds.frames = s.frames, named[key] = has_names;
    ds.after += s.count;
  }
  const double scale = d.before_total ? static_cast<double>(d.after_total) / static_cast<double>(d.before_total) : 0;
  for (auto& [line, ds] : by_line) {
    ds.before_scaled = static_cast<double>(ds.before) * scale;
    d.stacks.push_back(std::move(ds));
  }
  return d;
}

DiffShare diff_share(const DiffData& d) {
  uint64_t before = 0, after = 0;
  std::map<std::string, std::pair<uint64_t, uint64_t>> by_kernel;  // stack up to its kernel -> counts
  for (const auto& s : d.stacks) {
    if (s.before && s.after) before += s.before, after += s.after;
    std::string key;
    for (const auto& f : s.frames) {
      key += f.name.str() + ';';
      if (f.kind == FrameKind::GpuKernel) break;
    }
    auto& k = by_kernel[key];
    k.first += s.before, k.second += s.after;
  }
  uint64_t kernels_before = 0, kernels_after = 0;
  for (const auto& [key, k] : by_kernel)
    if (k.first && k.second) kernels_before += k.first, kernels_after += k.second;
  auto share = [](uint64_t part, uint64_t total) {
    return total ? static_cast<double>(part) / static_cast<double>(total) : 0.0;
  };
  return {share(before, d.before_total), share(after, d.after_total), share(kernels_before, d.before_total),
          share(kernels_after, d.after_total)};
}

void write_diff_folded(const DiffData& d, std::ostream& out, bool plain) {
  for (const auto& s : d.stacks)
    out << folded_stack(s.frames, plain) << ' ' << static_cast<uint64_t>(std::llround(s.before_scaled)) << ' ' << s.after << '\n';
}

namespace {

struct Node {
  std::string name;
  double before = 0;
  uint64_t after = 0, before_raw = 0;
  std::map<std::string, size_t> children;
};

std::string fmt(double v, int decimals) {
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof buf, std::isfinite(v) ? v : 0.0, std::chars_format::fixed, decimals);
  return std::string(buf, r.ptr);
}

// flamegraph.pl's differential colours: white for no change, up to full red (grew) or blue (shrank).
std::string diff_colour(double delta, double max_delta) {
  double r = max_delta > 0 ? std::min(1.0, std::fabs(delta) / max_delta) : 0;
  int light = static_cast<int>(std::lround(210 * (1 - r)));
  if (delta > 0) return "rgb(255," + std::to_string(light) + "," + std::to_string(light) + ")";
  if (delta < 0) return "rgb(" + std::to_string(light) + "," + std::to_string(light) + ",255)";
  return "rgb(250,250,250)";
}

}  // namespace

void write_diff_svg(const DiffData& d, std::ostream& out, int width) {
  std::vector<Node> nodes(1);
  nodes[0].name = "all";
  size_t depth = 0;
  for (const auto& s : d.stacks) {
    size_t n = 0;
    nodes[0].before += s.before_scaled, nodes[0].after += s.after, nodes[0].before_raw += s.before;
    for (const auto& f : s.frames) {
      auto it = nodes[n].children.find(f.name);
      if (it == nodes[n].children.end()) {
        it = nodes[n].children.emplace(f.name, nodes.size()).first;
        nodes.push_back({f.name, 0, 0, 0, {}});
      }
      n = it->second;
      nodes[n].before += s.before_scaled, nodes[n].after += s.after, nodes[n].before_raw += s.before;
    }
    depth = std::max(depth, s.frames.size());
  }
  double max_delta = 0;
  for (const auto& n : nodes) max_delta = std::max(max_delta, std::fabs(static_cast<double>(n.after) - n.before));
  constexpr int kFrame = 16, kPad = 10, kTop = 50, kBottom = 30;
  const int height = kTop + kFrame * static_cast<int>(depth + 1) + kBottom;
  const double px = nodes[0].after ? (width - 2.0 * kPad) / static_cast<double>(nodes[0].after) : 0;
  out << "<?xml version=\"1.0\" standalone=\"no\"?>\n"
      << "<svg version=\"1.1\" width=\"" << width << "\" height=\"" << height
      << "\" xmlns=\"http://www.w3.org/2000/svg\">\n"
      << "<style>text { font-family: Verdana, sans-serif; font-size: 12px; fill: #000; }</style>\n"
      << "<rect x=\"0\" y=\"0\" width=\"" << width << "\" height=\"" << height << "\" fill=\"#f8f8f8\"/>\n"
      << "<text x=\"" << width / 2 << "\" y=\"24\" text-anchor=\"middle\" font-size=\"17\">"
      << svg_escape(svg_clean_text(d.title, 200)) << "</text>\n"
      << "<text x=\"" << width / 2 << "\" y=\"42\" text-anchor=\"middle\" fill=\"#555\">"
      << "width: AFTER (" << d.after_total << " samples); colour: change from BEFORE (" << d.before_total
      << " samples, scaled); red grew, blue shrank</text>\n";
  // Depth-first, children in name order, each at its parent's left edge plus its elder siblings.
  struct Item { size_t node; int level; double x; };
  std::vector<Item> todo{{0, 0, static_cast<double>(kPad)}};
  while (!todo.empty()) {
    Item it = todo.back();
    todo.pop_back();
    const Node& n = nodes[it.node];
    const double w = static_cast<double>(n.after) * px;
    if (w >= 0.1) {
      const double y = height - kBottom - kFrame * (it.level + 1);
      const double delta = static_cast<double>(n.after) - n.before;
      const double pct = n.before > 0 ? 100.0 * delta / n.before : 100.0;
      std::string clean = svg_clean_text(n.name, 4096);
      out << "<g><title>" << svg_escape(clean) << " (before " << n.before_raw << " samples, " << fmt(n.before, 1)
          << " scaled; after " << n.after << " samples; " << (delta >= 0 ? "+" : "") << fmt(pct, 2) << "%)</title>"
          << "<rect x=\"" << fmt(it.x, 2) << "\" y=\"" << fmt(y, 2) << "\" width=\"" << fmt(w, 2) << "\" height=\""
          << kFrame - 1 << "\" fill=\"" << diff_colour(delta, max_delta) << "\" rx=\"2\"/>";
      std::string label = svg_label(clean, w - 6, 0.59 * 12);
      if (!label.empty()) out << "<text x=\"" << fmt(it.x + 3, 2) << "\" y=\"" << fmt(y + 11.5, 2) << "\">" << svg_escape(label) << "</text>";
      out << "</g>\n";
    }
    double cx = it.x;
    std::vector<Item> kids;
    for (const auto& [name, c] : n.children) {
      kids.push_back({c, it.level + 1, cx});
      cx += static_cast<double>(nodes[c].after) * px;
    }
    todo.insert(todo.end(), kids.rbegin(), kids.rend());
  }
  out << "</svg>\n";
}

}  // namespace aiflame
