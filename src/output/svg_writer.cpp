#include "output/svg_writer.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <map>
#include <ostream>
#include <utility>
#include <vector>

#include "output/svg_script.h"
#include "util/splitmix.h"

namespace aiflame {

namespace {

constexpr int kFontSize = 12;
constexpr double kCharPx = 0.59 * kFontSize;  // rough Verdana advance, as flamegraph.pl assumes
constexpr int kPad = 10;                      // left and right margin
constexpr int kTop = 72;                      // title, subtitle and legend above the frames
constexpr int kBottom = 36;                   // details line below them
constexpr size_t kMaxTitleChars = 4096;       // tooltips keep this much of a name
constexpr const char* kMatchColor = "rgb(230,0,230)";

void put_utf8(std::string& o, char32_t cp) {
  if (cp < 0x80) {
    o += static_cast<char>(cp);
  } else if (cp < 0x800) {
    o += static_cast<char>(0xC0 | (cp >> 6));
    o += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    o += static_cast<char>(0xE0 | (cp >> 12));
    o += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    o += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    o += static_cast<char>(0xF0 | (cp >> 18));
    o += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    o += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    o += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

// Decodes one code point at s[i]; sets len to the bytes consumed. Ill-formed input yields U+FFFD
// for each maximal ill-formed subpart (the Unicode recommendation), never for valid text after it.
char32_t decode_utf8(std::string_view s, size_t i, size_t& len) {
  const auto b0 = static_cast<unsigned char>(s[i]);
  len = 1;
  if (b0 < 0x80) return b0;
  int need = 0;
  unsigned char lo = 0x80, hi = 0xBF;  // allowed range of the second byte
  char32_t cp = 0;
  if (b0 >= 0xC2 && b0 <= 0xDF) need = 1, cp = b0 & 0x1F;
  else if (b0 == 0xE0) need = 2, lo = 0xA0, cp = 0;                       // no overlongs
  else if (b0 == 0xED) need = 2, hi = 0x9F, cp = 0xD;                     // no surrogates
  else if (b0 >= 0xE1 && b0 <= 0xEF) need = 2, cp = b0 & 0x0F;
  else if (b0 == 0xF0) need = 3, lo = 0x90, cp = 0;                       // no overlongs
  else if (b0 >= 0xF1 && b0 <= 0xF3) need = 3, cp = b0 & 0x07;
  else if (b0 == 0xF4) need = 3, hi = 0x8F, cp = 4;                       // <= U+10FFFF
  else return 0xFFFD;
  for (int k = 1; k <= need; k++) {
    if (i + k >= s.size()) return 0xFFFD;
    const auto b = static_cast<unsigned char>(s[i + k]);
    const unsigned char l = k == 1 ? lo : 0x80, h = k == 1 ? hi : 0xBF;
    if (b < l || b > h) return 0xFFFD;
    cp = (cp << 6) | (b & 0x3F);
    len = k + 1;
  }
  return cp;
}

// Numbers in attributes: at most two decimals, no trailing zeros, never locale-dependent.
std::string num(double v) {
  if (!std::isfinite(v)) v = 0;
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::fixed, 2);
  std::string s(buf, r.ptr);
  while (!s.empty() && s.back() == '0') s.pop_back();
  if (!s.empty() && s.back() == '.') s.pop_back();
  if (s == "-0") s = "0";
  return s;
}

std::string percent(uint64_t n, uint64_t total) {
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof buf, 100.0 * static_cast<double>(n) / static_cast<double>(total),
                         std::chars_format::fixed, 2);
  return std::string(buf, r.ptr);
}

uint64_t name_hash(std::string_view s) {
  uint64_t h = 1469598103934665603ull;  // FNV-1a, then a splitmix64 finaliser to spread the bits
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return splitmix64_mix(h);
}

// A colour for the kind, its shade varied by v1..v3 in [0, 1].
std::string kind_colour(FrameKind k, double v1, double v2, double v3) {
  double r = 0, g = 0, b = 0;
  switch (k) {
    case FrameKind::Python: r = 235 + 20 * v1, g = 120 + 50 * v2, b = 175 + 35 * v2; break;
    case FrameKind::Native: r = 220 + 35 * v1, g = 190 + 45 * v2, b = 50 + 50 * v3; break;
    case FrameKind::Runtime: r = 205 + 50 * v1, g = 60 + 60 * v2, b = 50 + 40 * v3; break;
    case FrameKind::Process: r = 120 + 25 * v1, g = 140 + 25 * v1, b = 185 + 25 * v1 + 10 * v2; break;
    case FrameKind::Separator: r = g = b = 165 + 20 * v1; break;
    case FrameKind::GpuKernel: r = 60 + 50 * v1, g = 205 + 35 * v2, b = 200 + 35 * v2; break;
    case FrameKind::GpuSource: r = 40 + 50 * v1, g = 190 + 35 * v2, b = 195 + 35 * v2; break;  // aqua, as kernels
    case FrameKind::GpuInstruction: r = 90 + 50 * v1, g = 205 + 35 * v2, b = 80 + 40 * v3; break;
    case FrameKind::Stall: r = 40 + 40 * v1, g = 145 + 35 * v2, b = 50 + 30 * v3; break;
    case FrameKind::Unattributed: r = g = b = 210 + 20 * v1; break;
  }
  auto c = [](double x) { return std::to_string(std::clamp(static_cast<int>(x), 0, 255)); };
  return "rgb(" + c(r) + "," + c(g) + "," + c(b) + ")";
}

std::string frame_colour(FrameKind k, std::string_view name) {
  const uint64_t h = name_hash(name);
  auto v = [h](int shift) { return static_cast<double>((h >> shift) & 0xFFFF) / 65535.0; };
  return kind_colour(k, v(0), v(16), v(32));
}

std::string kind_class(FrameKind k) {
  std::string s(frame_kind_name(k));
  std::replace(s.begin(), s.end(), '_', '-');
  return "f-" + s;
}

std::string_view kind_label(FrameKind k) {
  switch (k) {
    case FrameKind::Process: return "Process";
    case FrameKind::Python: return "Python";
    case FrameKind::Native: return "Native";
    case FrameKind::Runtime: return "Runtime";
    case FrameKind::Separator: return "Separator";
    case FrameKind::GpuKernel: return "GPU kernel";
    case FrameKind::GpuSource: return "GPU source";
    case FrameKind::GpuInstruction: return "GPU instruction";
    case FrameKind::Stall: return "Stall";
    case FrameKind::Unattributed: return "Unattributed";
  }
  return "Native";
}

constexpr FrameKind kAllKinds[] = {
    FrameKind::Process,   FrameKind::Python,         FrameKind::Native, FrameKind::Runtime,
    FrameKind::Separator, FrameKind::GpuKernel,      FrameKind::GpuSource,
    FrameKind::GpuInstruction, FrameKind::Stall,     FrameKind::Unattributed};

// The merged tree, flat so that neither building nor destroying it recurses on deep stacks.
// Names point into the FlameData, which outlives the write.
struct Node {
  std::string_view name;
  FrameKind kind = FrameKind::Native;
  uint64_t count = 0;
  uint64_t before = 0;         // a diff's BEFORE samples
  double before_scaled = 0;    // and scaled to AFTER's total
  uint64_t estimated = 0;  // of count: split between launch stacks by the attribution's model
  // Ordered by name first, then kind: flamegraph.pl's alphabetical order, and deterministic.
  std::map<std::pair<std::string_view, FrameKind>, uint32_t> children;
};

std::vector<Node> build_tree(const FlameData& data, const SvgDiff* diff) {
  std::vector<Node> nodes(1);
  nodes[0].name = "all";
  for (size_t si = 0; si < data.stacks.size(); si++) {
    const auto& st = data.stacks[si];
    const uint64_t before = diff && si < diff->before.size() ? diff->before[si] : 0;
    const double scaled = diff && si < diff->before_scaled.size() ? diff->before_scaled[si] : 0;
    // A diff's stacks only in BEFORE have no width, as in flamegraph.pl, but count in the BEFORE of
    // the frames they share with AFTER.
    if (st.count == 0 && before == 0) continue;
    auto add = [&](Node& n) { n.count += st.count, n.estimated += st.estimated, n.before += before, n.before_scaled += scaled; };
    uint32_t cur = 0;
    add(nodes[0]);
    for (const auto& f : st.frames) {
      auto [it, added] = nodes[cur].children.try_emplace({f.name, f.kind}, 0);
      if (added) {
        it->second = static_cast<uint32_t>(nodes.size());
        nodes.push_back(Node{f.name, f.kind, 0, 0, 0, 0, {}});  // invalidates references, not indices
      }
      cur = it->second;
      add(nodes[cur]);
    }
  }
  return nodes;
}

std::string fixed(double v, int decimals) {
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof buf, std::isfinite(v) ? v : 0.0, std::chars_format::fixed, decimals);
  return std::string(buf, r.ptr);
}

// flamegraph.pl's differential colours, up to full red (grew) or blue (shrank) for the largest
// change; an unchanged frame light grey, so that its box shows on the background.
std::string diff_colour(double delta, double max_delta) {
  double r = max_delta > 0 ? std::min(1.0, std::fabs(delta) / max_delta) : 0;
  int light = static_cast<int>(std::lround(210 * (1 - r)));
  // Below half a sample (scaling leaves fractions) is no change.
  if (delta >= 0.5) return "rgb(255," + std::to_string(light) + "," + std::to_string(light) + ")";
  if (delta <= -0.5) return "rgb(" + std::to_string(light) + "," + std::to_string(light) + ",255)";
  return "rgb(224,224,224)";
}

struct Placed {
  uint32_t node;
  uint64_t offset;  // samples left of the frame at its depth
  int depth;        // 0 = "all"
};

// The frames wide enough to draw, in pre-order (children alphabetical, left to right).
std::vector<Placed> place(const std::vector<Node>& nodes, double px_per_sample, double min_px) {
  std::vector<Placed> out;
  std::vector<Placed> todo{{0, 0, 0}};
  while (!todo.empty()) {
    Placed p = todo.back();
    todo.pop_back();
    // Children are narrower than their parent, so an elided frame elides its whole subtree.
    if (static_cast<double>(nodes[p.node].count) * px_per_sample < min_px) continue;
    out.push_back(p);
    // Children from the left edge (the parent's own samples show at its right end), pushed in
    // reverse so that they pop in order.
    const size_t first = todo.size();
    uint64_t off = p.offset;
    for (const auto& [key, child] : nodes[p.node].children) {
      todo.push_back({child, off, p.depth + 1});
      off += nodes[child].count;
    }
    std::reverse(todo.begin() + static_cast<std::ptrdiff_t>(first), todo.end());
  }
  return out;
}

void header(std::string& o, int width, int height, const std::string& title, const std::string& subtitle) {
  const std::string w = std::to_string(width), h = std::to_string(height);
  o += "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"no\"?>\n";
  o += "<svg version=\"1.1\" width=\"" + w + "\" height=\"" + h + "\" viewBox=\"0 0 " + w + " " + h +
       "\" xmlns=\"http://www.w3.org/2000/svg\">\n";
  o += "<defs><linearGradient id=\"bg\" x1=\"0\" y1=\"0\" x2=\"0\" y2=\"1\">"
       "<stop offset=\"5%\" stop-color=\"#f4f4f4\"/><stop offset=\"95%\" stop-color=\"#ececd0\"/>"
       "</linearGradient></defs>\n";
  o += "<style type=\"text/css\"><![CDATA[\n"
       "text { font-family: Verdana, sans-serif; font-size: 12px; fill: #000; }\n"
       ".title { font-size: 17px; text-anchor: middle; }\n"
       ".subtitle { fill: #555; text-anchor: middle; }\n"
       ".legend text { font-size: 11px; fill: #333; }\n"
       ".btn { cursor: pointer; fill: #224; }\n"
       ".btn:hover { text-decoration: underline; }\n"
       "#frames g { cursor: pointer; }\n"
       "#frames text { pointer-events: none; }\n"
       "#frames g:hover rect { stroke: #000; stroke-width: 0.5; }\n"
       "#frames g.anc rect { opacity: 0.65; }\n"
       "]]></style>\n";
  o += "<rect x=\"0\" y=\"0\" width=\"" + w + "\" height=\"" + h + "\" fill=\"url(#bg)\"/>\n";
  o += "<text class=\"title\" x=\"" + num(width / 2.0) + "\" y=\"24\">" + title + "</text>\n";
  if (!subtitle.empty())
    o += "<text class=\"subtitle\" x=\"" + num(width / 2.0) + "\" y=\"42\">" + subtitle + "</text>\n";
}

}  // namespace

std::string svg_clean_text(std::string_view s, size_t max_chars) {
  std::string o;
  o.reserve(std::min(s.size(), max_chars == std::string_view::npos ? s.size() : max_chars * 4) + 3);
  size_t chars = 0;
  for (size_t i = 0; i < s.size();) {
    if (chars == max_chars) {
      o += "...";
      break;
    }
    size_t len = 1;
    char32_t cp = decode_utf8(s, i, len);
    i += len;
    if (cp == '\t' || cp == '\n' || cp == '\r') cp = ' ';
    // XML 1.0 forbids other C0 controls (NUL included) and U+FFFE/U+FFFF; DEL and C1 are allowed
    // but invisible and often a sign of garbage, so they go too.
    else if (cp < 0x20 || (cp >= 0x7F && cp <= 0x9F) || cp == 0xFFFE || cp == 0xFFFF) cp = 0xFFFD;
    put_utf8(o, cp);
    chars++;
  }
  return o;
}

std::string svg_escape(std::string_view clean) {
  std::string o;
  o.reserve(clean.size());
  for (char c : clean) {
    switch (c) {
      case '&': o += "&amp;"; break;
      case '<': o += "&lt;"; break;
      case '>': o += "&gt;"; break;
      case '"': o += "&quot;"; break;
      case '\'': o += "&apos;"; break;
      default: o += c;
    }
  }
  return o;
}

std::string svg_label(std::string_view clean, double width_px, double char_px) {
  const double fit = std::floor((width_px - 6) / char_px);  // 3 px of padding on either side
  if (!(fit >= 3)) return {};
  const auto avail = static_cast<size_t>(std::min(fit, 1e9));
  auto is_lead = [](char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80; };
  size_t cps = 0, cut = 0;  // cut: byte offset after avail - 2 code points
  for (size_t i = 0; i < clean.size(); i++) {
    if (!is_lead(clean[i])) continue;
    if (cps == avail - 2) cut = i;
    if (++cps > avail) return std::string(clean.substr(0, cut)) + "..";
  }
  return std::string(clean);
}

void SvgWriter::write(const FlameData& data, std::ostream& out) const { write_svg(data, options_, nullptr, out); }

void write_svg(const FlameData& data, const SvgOptions& options_, const SvgDiff* diff, std::ostream& out) {
  const int width = std::max(options_.width, 2 * kPad + 100);
  const int frame_h = std::max(options_.frame_height, 4);
  const double min_px = options_.min_width_px >= 0 ? options_.min_width_px : 0;  // also NaN -> 0
  const std::string title = svg_escape(svg_clean_text(data.title.empty() ? "Flame Graph" : data.title, 1024));
  const std::string subtitle = svg_escape(svg_clean_text(data.subtitle, 1024));

  std::string o;  // built whole, then written once: no stream state or locale can leak in
  const std::vector<Node> nodes = build_tree(data, diff);
  const uint64_t total = nodes[0].count;
  if (total == 0) {
    const int height = 120;
    header(o, width, height, title, subtitle);
    o += "<text x=\"" + num(width / 2.0) + "\" y=\"80\" text-anchor=\"middle\">No samples</text>\n</svg>\n";
    out.write(o.data(), static_cast<std::streamsize>(o.size()));
    return;
  }

  const double full = width - 2 * kPad;
  const double px_per_sample = full / static_cast<double>(total);
  const std::vector<Placed> placed = place(nodes, px_per_sample, min_px);
  int max_depth = 0;
  for (const auto& p : placed) max_depth = std::max(max_depth, p.depth);
  const int height = kTop + (max_depth + 1) * frame_h + kBottom;
  header(o, width, height, title, subtitle);

  // Buttons and the legend of the kinds the data holds.
  o += "<text id=\"unzoom\" class=\"btn\" x=\"" + std::to_string(kPad) + "\" y=\"24\" style=\"opacity:0\">Reset Zoom</text>\n";
  o += "<text id=\"search\" class=\"btn\" x=\"" + std::to_string(width - kPad) +
       "\" y=\"24\" text-anchor=\"end\">Search</text>\n";
  bool present[std::size(kAllKinds)] = {};
  for (const auto& st : data.stacks)
    if (st.count)
      for (const auto& f : st.frames) present[static_cast<size_t>(f.kind)] = true;
  o += "<g class=\"legend\">";
  double lx = kPad;
  double max_delta = 0;
  if (diff) {
    for (const auto& n : nodes) max_delta = std::max(max_delta, std::fabs(static_cast<double>(n.count) - n.before_scaled));
    const std::pair<const char*, std::string> keys[] = {{"grew", diff_colour(1, 1)}, {"shrank", diff_colour(-1, 1)},
                                                       {"unchanged", diff_colour(0, 1)}};
    for (const auto& [name, colour] : keys) {
      o += "<rect x=\"" + num(lx) + "\" y=\"50\" width=\"11\" height=\"11\" fill=\"" + colour + "\" stroke=\"#888\" stroke-width=\"0.5\"/>";
      o += "<text x=\"" + num(lx + 15) + "\" y=\"60\">" + std::string(name) + "</text>";
      lx += 15 + 0.52 * 11 * static_cast<double>(std::string_view(name).size()) + 16;
    }
  }
  for (FrameKind k : kAllKinds) {
    if (diff) break;  // a diff's colours are the change, not the kind
    if (static_cast<size_t>(k) >= std::size(present) || !present[static_cast<size_t>(k)]) continue;
    const std::string_view name = kind_label(k);
    o += "<rect x=\"" + num(lx) + "\" y=\"50\" width=\"11\" height=\"11\" fill=\"" + kind_colour(k, .5, .5, .5) + "\"/>";
    o += "<text x=\"" + num(lx + 15) + "\" y=\"60\">" + std::string(name) + "</text>";
    lx += 15 + 0.52 * 11 * static_cast<double>(name.size()) + 16;  // Verdana 11px, mostly lower case
  }
  o += "</g>\n";

  o += "<g id=\"frames\">\n";
  for (const auto& p : placed) {
    const Node& n = nodes[p.node];
    const double x = kPad + static_cast<double>(p.offset) * px_per_sample;
    const double w = static_cast<double>(n.count) * px_per_sample;
    const double y = options_.inverted ? kTop + p.depth * frame_h : height - kBottom - (p.depth + 1) * frame_h;
    const std::string clean = svg_clean_text(n.name, kMaxTitleChars);
    const bool root = p.depth == 0;
    o += "<g class=\"f " + (root ? std::string("f-all") : kind_class(n.kind)) + "\" data-o=\"" +
         std::to_string(p.offset) + "\" data-n=\"" + std::to_string(n.count) + "\" data-d=\"" +
         std::to_string(p.depth) + "\">";
    std::string fill = root ? std::string("rgb(200,200,205)") : frame_colour(n.kind, n.name);
    if (diff) {
      const double delta = static_cast<double>(n.count) - n.before_scaled;
      const double pct = n.before_scaled > 0 ? 100.0 * delta / n.before_scaled : 100.0;
      o += "<title>" + svg_escape(clean) + " (" + std::to_string(n.count) + " samples, " + percent(n.count, total) +
           "%; before " + std::to_string(n.before) + " samples, " + fixed(n.before_scaled, 1) + " scaled; " +
           (delta >= 0 ? "+" : "") + fixed(pct, 2) + "%)</title>";
      fill = diff_colour(delta, max_delta) + "\" stroke=\"#888\" stroke-width=\"0.5";
    } else {
      o += "<title>" + svg_escape(clean) + " (" + std::to_string(n.count) + " samples, " + percent(n.count, total) + "%" +
           // Samples the model split between launch stacks: how much of this frame is an estimate.
           (n.estimated ? ", ~" + percent(n.estimated, n.count) + "% split between launch stacks by the model" : "") +
           ")</title>";
    }
    o += "<rect x=\"" + num(x) + "\" y=\"" + num(y) + "\" width=\"" + num(w) + "\" height=\"" + num(frame_h - 1) +
         "\" fill=\"" + fill + "\" rx=\"2\" ry=\"2\"/>";
    // Baseline a third of the font size below the rect's middle centres the label.
    o += "<text x=\"" + num(x + 3) + "\" y=\"" + num(y + (frame_h - 1) / 2.0 + kFontSize / 3.0) + "\">" +
         svg_escape(svg_label(clean, w, kCharPx)) + "</text></g>\n";
  }
  o += "</g>\n";

  o += "<text id=\"details\" x=\"" + std::to_string(kPad) + "\" y=\"" + std::to_string(height - 14) + "\"> </text>\n";
  o += "<text id=\"matched\" class=\"btn\" x=\"" + std::to_string(width - kPad) + "\" y=\"" +
       std::to_string(height - 14) + "\" text-anchor=\"end\"></text>\n";

  o += "<script type=\"text/ecmascript\"><![CDATA[\n(";
  o += kSvgScript;
  o += ")({width: " + std::to_string(width) + ", pad: " + std::to_string(kPad) + ", charWidth: " + num(kCharPx) +
       ", total: " + std::to_string(total) + ", minWidth: " + num(min_px) + ", matchColor: \"" + kMatchColor +
       "\"});\n]]></script>\n</svg>\n";
  out.write(o.data(), static_cast<std::streamsize>(o.size()));
}

}  // namespace aiflame
