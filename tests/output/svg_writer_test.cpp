#include "output/svg_writer.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "output/svg_script.h"

#ifndef AIFLAME_SOURCE_DIR
#define AIFLAME_SOURCE_DIR "."
#endif

namespace aiflame {
namespace {

const std::string kFffd = "\xEF\xBF\xBD";

// One drawn frame, read back from the SVG text (the writer emits one <g class="f ..."> per line).
struct Drawn {
  std::string cls, title, label, fill;
  uint64_t o = 0, n = 0;
  int d = 0;
  double x = 0, y = 0, w = 0;
  std::string name() const { return title.substr(0, title.rfind(" (")); }
};

std::string unescape(std::string s) {
  const std::pair<const char*, const char*> ents[] = {
      {"&lt;", "<"}, {"&gt;", ">"}, {"&quot;", "\""}, {"&apos;", "'"}, {"&amp;", "&"}};
  for (const auto& [from, to] : ents)
    for (size_t p = 0; (p = s.find(from, p)) != std::string::npos; p += std::string_view(to).size())
      s.replace(p, std::string_view(from).size(), to);
  return s;
}

std::string attr(const std::string& elem, const std::string& name) {
  const std::string key = " " + name + "=\"";
  size_t p = elem.find(key);
  if (p == std::string::npos) return {};
  p += key.size();
  return elem.substr(p, elem.find('"', p) - p);
}

std::string between(const std::string& s, const std::string& open, const std::string& close) {
  size_t p = s.find(open);
  if (p == std::string::npos) return {};
  p = s.find('>', p) + 1;
  return s.substr(p, s.find(close, p) - p);
}

std::vector<Drawn> frames_of(const std::string& svg) {
  std::vector<Drawn> out;
  for (size_t p = 0; (p = svg.find("<g class=\"f ", p)) != std::string::npos;) {
    const size_t end = svg.find("</g>", p);
    const std::string g = svg.substr(p, end - p);
    const std::string rect = g.substr(g.find("<rect"), g.find("/>", g.find("<rect")) - g.find("<rect"));
    Drawn f;
    f.cls = attr(g, "class");
    f.o = std::stoull(attr(g, "data-o"));
    f.n = std::stoull(attr(g, "data-n"));
    f.d = std::stoi(attr(g, "data-d"));
    f.title = unescape(between(g, "<title", "</title>"));
    f.label = unescape(between(g, "<text", "</text>"));
    f.x = std::stod(attr(rect, "x"));
    f.y = std::stod(attr(rect, "y"));
    f.w = std::stod(attr(rect, "width"));
    f.fill = attr(rect, "fill");
    out.push_back(f);
    p = end;
  }
  return out;
}

const Drawn* find(const std::vector<Drawn>& fs, const std::string& name) {
  for (const auto& f : fs)
    if (f.name() == name) return &f;
  return nullptr;
}

int count_named(const std::vector<Drawn>& fs, const std::string& name) {
  int c = 0;
  for (const auto& f : fs) c += f.name() == name;
  return c;
}

WeightedStack stack(std::vector<std::string> names, uint64_t count, FrameKind kind = FrameKind::Native) {
  WeightedStack s;
  for (auto& n : names) s.frames.push_back({std::move(n), kind});
  s.count = count;
  return s;
}

std::string render(const FlameData& d, SvgOptions opt = {}) {
  std::ostringstream ss;
  SvgWriter(opt).write(d, ss);
  return ss.str();
}

TEST(SvgWriter, FormatName) { EXPECT_EQ(SvgWriter().format(), "svg"); }

TEST(SvgWriter, WidthsAndPositionsProportionalToCounts) {
  FlameData d;
  d.stacks = {stack({"d"}, 60), stack({"a", "c"}, 10), stack({"a", "b"}, 30)};
  auto fs = frames_of(render(d));
  ASSERT_EQ(fs.size(), 5u);  // all, a, b, c, d
  const double full = 1200 - 20;
  const Drawn* all = find(fs, "all");
  ASSERT_NE(all, nullptr);
  EXPECT_NEAR(all->w, full, 0.01);
  EXPECT_EQ(all->title, "all (100 samples, 100.00%)");
  struct Want { const char* name; double x, w; uint64_t n; };
  for (const Want& w : {Want{"a", 10, 0.4 * full, 40}, Want{"b", 10, 0.3 * full, 30},
                        Want{"c", 10 + 0.3 * full, 0.1 * full, 10}, Want{"d", 10 + 0.4 * full, 0.6 * full, 60}}) {
    const Drawn* f = find(fs, w.name);
    ASSERT_NE(f, nullptr) << w.name;
    EXPECT_NEAR(f->x, w.x, 0.01) << w.name;
    EXPECT_NEAR(f->w, w.w, 0.01) << w.name;
    EXPECT_EQ(f->n, w.n) << w.name;
  }
  EXPECT_EQ(find(fs, "a")->title, "a (40 samples, 40.00%)");
  EXPECT_EQ(find(fs, "c")->title, "c (10 samples, 10.00%)");
}

// Frames whose samples the attribution's model split between launch stacks say how much (issue 65).
TEST(SvgWriter, TooltipsMarkTheShareTheModelEstimated) {
  FlameData d;
  d.stacks = {stack({"a", "b"}, 30), stack({"a", "c"}, 10), stack({"d"}, 60)};
  d.stacks[0].estimated = 15;
  auto fs = frames_of(render(d));
  EXPECT_EQ(find(fs, "b")->title, "b (30 samples, 30.00%, ~50.00% split between launch stacks by the model)");
  EXPECT_EQ(find(fs, "a")->title, "a (40 samples, 40.00%, ~37.50% split between launch stacks by the model)");
  EXPECT_EQ(find(fs, "c")->title, "c (10 samples, 10.00%)");
  EXPECT_EQ(find(fs, "d")->title, "d (60 samples, 60.00%)");
}

TEST(SvgWriter, MergesSharedPrefixesAndSortsChildren) {
  FlameData d;
  d.stacks = {stack({"p", "x", "y"}, 5), stack({"p", "x", "z"}, 3), stack({"p", "w"}, 2), stack({"p", "x", "y"}, 1)};
  auto fs = frames_of(render(d));
  EXPECT_EQ(count_named(fs, "p"), 1);
  EXPECT_EQ(count_named(fs, "x"), 1);
  EXPECT_EQ(count_named(fs, "y"), 1);
  EXPECT_EQ(find(fs, "p")->n, 11u);
  EXPECT_EQ(find(fs, "x")->n, 9u);
  EXPECT_EQ(find(fs, "y")->n, 6u);
  // Alphabetical: w left of x, y left of z, each starting where its left sibling ends.
  EXPECT_EQ(find(fs, "w")->o, 0u);
  EXPECT_EQ(find(fs, "x")->o, 2u);
  EXPECT_EQ(find(fs, "y")->o, 2u);
  EXPECT_EQ(find(fs, "z")->o, 8u);
  EXPECT_LT(find(fs, "w")->x, find(fs, "x")->x);
}

TEST(SvgWriter, SameNameOfDifferentKindDoesNotMerge) {
  FlameData d;
  d.stacks = {stack({"main", "f"}, 3, FrameKind::Python), stack({"main", "f"}, 4, FrameKind::Native)};
  auto fs = frames_of(render(d));
  EXPECT_EQ(count_named(fs, "main"), 2);
  EXPECT_EQ(count_named(fs, "f"), 2);
  int python = 0, native = 0;
  for (const auto& f : fs) python += f.cls == "f f-python", native += f.cls == "f f-native";
  EXPECT_EQ(python, 2);
  EXPECT_EQ(native, 2);
}

TEST(SvgWriter, ParentSelfTimeIsRightOfChildren) {
  FlameData d;
  d.stacks = {stack({"a"}, 10), stack({"a", "b"}, 5)};
  auto fs = frames_of(render(d));
  EXPECT_EQ(find(fs, "b")->o, find(fs, "a")->o);
  EXPECT_NEAR(find(fs, "b")->x, find(fs, "a")->x, 0.01);
  EXPECT_NEAR(find(fs, "b")->w * 3, find(fs, "a")->w, 0.01);
}

TEST(SvgWriter, RootAtBottomOrTopWhenInverted) {
  FlameData d;
  d.stacks = {stack({"a", "b", "c"}, 1)};
  auto fs = frames_of(render(d));
  EXPECT_GT(find(fs, "all")->y, find(fs, "a")->y);
  EXPECT_GT(find(fs, "a")->y, find(fs, "c")->y);
  EXPECT_NEAR(find(fs, "a")->y - find(fs, "b")->y, 16, 0.01);

  auto inv = frames_of(render(d, SvgOptions{.inverted = true}));
  EXPECT_LT(find(inv, "all")->y, find(inv, "a")->y);
  EXPECT_LT(find(inv, "a")->y, find(inv, "c")->y);
  EXPECT_NEAR(find(inv, "b")->y - find(inv, "a")->y, 16, 0.01);
}

TEST(SvgWriter, NarrowFramesElidedButCounted) {
  FlameData d;
  d.stacks = {stack({"big"}, 100000), stack({"tiny", "deeper", "deepest"}, 1)};
  const std::string svg = render(d);
  auto fs = frames_of(svg);
  EXPECT_EQ(find(fs, "tiny"), nullptr);  // 0.0118 px < 0.1 px
  EXPECT_EQ(find(fs, "deepest"), nullptr);
  EXPECT_EQ(find(fs, "all")->n, 100001u);
  // The picture is only as tall as the frames drawn: all + big.
  EXPECT_NE(svg.find("height=\"" + std::to_string(72 + 2 * 16 + 36) + "\""), std::string::npos);

  auto kept = frames_of(render(d, SvgOptions{.min_width_px = 0}));
  EXPECT_NE(find(kept, "deepest"), nullptr);
}

TEST(SvgWriter, HostileNamesAreEscaped) {
  FlameData d;
  d.title = "<b>title & \"co\"</b>";
  d.subtitle = std::string("sub\0title", 9);
  d.stacks = {stack({"<script>alert(1)</script>"}, 1), stack({"a & b"}, 1), stack({"\"quoted\" 'single'"}, 1),
              stack({std::string("nul\0byte", 8)}, 1), stack({"bad\xff\xfeutf8"}, 1), stack({"]]>--><!--"}, 1),
              stack({"cut\xE2\x82"}, 1)};
  const std::string svg = render(d);
  EXPECT_EQ(svg.find("<script>alert"), std::string::npos);
  EXPECT_EQ(svg.find("<b>"), std::string::npos);
  EXPECT_NE(svg.find("&lt;script&gt;alert(1)&lt;/script&gt;"), std::string::npos);
  EXPECT_NE(svg.find("a &amp; b"), std::string::npos);
  EXPECT_NE(svg.find("&quot;quoted&quot; &apos;single&apos;"), std::string::npos);
  EXPECT_NE(svg.find("]]&gt;--&gt;&lt;!--"), std::string::npos);
  EXPECT_NE(svg.find("nul" + kFffd + "byte"), std::string::npos);
  EXPECT_NE(svg.find("sub" + kFffd + "title"), std::string::npos);
  EXPECT_NE(svg.find("bad" + kFffd + kFffd + "utf8"), std::string::npos);
  EXPECT_NE(svg.find("cut" + kFffd + " ("), std::string::npos);
  for (unsigned char c : svg) {
    EXPECT_FALSE(c < 0x20 && c != '\n') << int(c);
    EXPECT_FALSE(c == 0xFF || c == 0xFE || c == 0xC0 || c == 0xC1 || c >= 0xF5) << int(c);
  }
  // The only "]]>" are those closing the style and script CDATA sections.
  size_t n = 0;
  for (size_t p = 0; (p = svg.find("]]>", p)) != std::string::npos; p++) n++;
  EXPECT_EQ(n, 2u);
  EXPECT_EQ(std::string_view(kSvgScript).find("]]>"), std::string_view::npos);
}

TEST(SvgText, CleanAndEscape) {
  EXPECT_EQ(svg_escape("&<>\"'x"), "&amp;&lt;&gt;&quot;&apos;x");
  EXPECT_EQ(svg_clean_text("a\tb\nc\rd"), "a b c d");
  EXPECT_EQ(svg_clean_text(std::string("\0\x01\x7f", 3)), kFffd + kFffd + kFffd);
  EXPECT_EQ(svg_clean_text("\xC2\x85"), kFffd);                  // C1 control NEL
  EXPECT_EQ(svg_clean_text("\xC0\xAF"), kFffd + kFffd);          // overlong '/'
  EXPECT_EQ(svg_clean_text("\xED\xA0\x80"), kFffd + kFffd + kFffd);  // UTF-16 surrogate
  EXPECT_EQ(svg_clean_text("\xF4\x90\x80\x80"), kFffd + kFffd + kFffd + kFffd);  // > U+10FFFF
  EXPECT_EQ(svg_clean_text("\xE2\x82" "A"), kFffd + "A");        // truncated, then valid text
  EXPECT_EQ(svg_clean_text("\xEF\xBF\xBF"), kFffd);              // U+FFFF, not a character
  const std::string ok = "caf\xC3\xA9 \xE2\x82\xAC \xF0\x9D\x84\x9E";
  EXPECT_EQ(svg_clean_text(ok), ok);
  EXPECT_EQ(svg_clean_text("abcdef", 3), "abc...");
  EXPECT_EQ(svg_clean_text("abc", 3), "abc");
  EXPECT_EQ(svg_clean_text("\xC3\xA9\xC3\xA9\xC3\xA9", 2), "\xC3\xA9\xC3\xA9...");
}

TEST(SvgText, LabelFitsWidth) {
  const double cw = 0.59 * 12;
  EXPECT_EQ(svg_label("short", 200, cw), "short");
  EXPECT_EQ(svg_label("abcdefghijklmnopqrstuvwxyz", 6 + 10 * cw, cw), "abcdefgh..");
  EXPECT_EQ(svg_label("abcdefghij", 6 + 10 * cw, cw), "abcdefghij");
  EXPECT_EQ(svg_label("abcdef", 6 + 2.5 * cw, cw), "");  // fewer than 3 characters fit
  EXPECT_EQ(svg_label("abcdef", 6 + 3 * cw, cw), "a..");
  // Code points, never bytes: the cut never splits a UTF-8 sequence.
  EXPECT_EQ(svg_label("\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9", 6 + 4 * cw, cw), "\xC3\xA9\xC3\xA9..");
}

TEST(SvgWriter, LabelsTruncatedToRectWidth) {
  FlameData d;
  const std::string longname = "std::vector<std::pair<int, std::string>>::emplace_back_and_more_stuff";
  d.stacks = {stack({longname}, 1), stack({"wide_enough"}, 9), stack({"x_tiny_but_drawn"}, 1)};
  auto fs = frames_of(render(d, SvgOptions{.width = 420}));  // 400 px for 11 samples
  const Drawn* f = find(fs, longname);
  ASSERT_NE(f, nullptr);
  EXPECT_LT(f->label.size(), longname.size());
  ASSERT_GE(f->label.size(), 3u);
  EXPECT_EQ(f->label.substr(f->label.size() - 2), "..");
  EXPECT_EQ(longname.rfind(f->label.substr(0, f->label.size() - 2), 0), 0u);  // a prefix
  EXPECT_LE(static_cast<double>(f->label.size()) * 0.59 * 12, f->w - 6 + 1e-9);
  EXPECT_EQ(find(fs, "wide_enough")->label, "wide_enough");
  EXPECT_EQ(find(fs, "all")->label, "all");
}

TEST(SvgWriter, HugeNamesAreCappedInTitle) {
  FlameData d;
  std::string huge = "template<";
  while (huge.size() < 100000) huge += "std::allocator<int>, ";
  d.stacks = {stack({huge}, 7)};
  const std::string svg = render(d);
  auto fs = frames_of(svg);
  ASSERT_EQ(fs.size(), 2u);
  const Drawn& f = fs[1];
  EXPECT_EQ(f.title.substr(f.title.size() - std::string("... (7 samples, 100.00%)").size()),
            "... (7 samples, 100.00%)");
  EXPECT_EQ(f.name().size(), 4096u + 3);  // ASCII: 4096 characters, then "..."
  EXPECT_LT(svg.size(), 40000u);
  EXPECT_LT(f.label.size(), 200u);
}

TEST(SvgWriter, EmptyDataSaysNoSamples) {
  for (const FlameData& d : {FlameData{}, FlameData{"t", "", {stack({"a"}, 0)}}}) {
    const std::string svg = render(d);
    EXPECT_EQ(svg.rfind("<?xml", 0), 0u);
    EXPECT_NE(svg.find("No samples"), std::string::npos);
    EXPECT_TRUE(frames_of(svg).empty());
    EXPECT_EQ(svg.substr(svg.size() - 7), "</svg>\n");
  }
}

TEST(SvgWriter, DeterministicAndIndependentOfStackOrder) {
  FlameData a;
  a.title = "t";
  a.stacks = {stack({"p", "q"}, 3), stack({"p", "r"}, 4, FrameKind::Python), stack({"s"}, 1, FrameKind::Runtime)};
  FlameData b = a;
  std::swap(b.stacks[0], b.stacks[2]);
  const std::string once = render(a);
  EXPECT_EQ(once, render(a));
  EXPECT_EQ(once, render(b));
  std::ostringstream via_base;
  const Writer& w = SvgWriter();
  w.write(a, via_base);
  EXPECT_EQ(once, via_base.str());
}

TEST(SvgWriter, ColoursAndLegendFollowKinds) {
  FlameData d;
  d.stacks = {stack({"py_fn"}, 1, FrameKind::Python), stack({"native_fn"}, 1, FrameKind::Native),
              stack({"cuLaunchKernel"}, 1, FrameKind::Runtime), stack({"gemm"}, 1, FrameKind::GpuKernel),
              stack({"long_scoreboard"}, 1, FrameKind::Stall)};
  const std::string svg = render(d);
  auto fs = frames_of(svg);
  auto rgb = [](const std::string& fill) {
    int r = -1, g = -1, b = -1;
    std::sscanf(fill.c_str(), "rgb(%d,%d,%d)", &r, &g, &b);
    return std::vector<int>{r, g, b};
  };
  auto py = rgb(find(fs, "py_fn")->fill), nat = rgb(find(fs, "native_fn")->fill),
       rt = rgb(find(fs, "cuLaunchKernel")->fill), k = rgb(find(fs, "gemm")->fill),
       st = rgb(find(fs, "long_scoreboard")->fill);
  EXPECT_TRUE(py[0] > 220 && py[2] > py[1]) << find(fs, "py_fn")->fill;             // pink
  EXPECT_TRUE(nat[0] > 200 && nat[1] > 180 && nat[2] < 110) << find(fs, "native_fn")->fill;  // yellow
  EXPECT_TRUE(rt[0] > 200 && rt[1] < 130 && rt[2] < 130);                               // red
  EXPECT_TRUE(k[0] < 120 && k[1] > 190 && k[2] > 190);                                  // aqua
  EXPECT_TRUE(st[1] > st[0] + 50 && st[1] > st[2] + 50 && st[1] < 190);                // dark green
  EXPECT_EQ(find(fs, "gemm")->cls, "f f-gpu-kernel");
  EXPECT_EQ(find(fs, "long_scoreboard")->cls, "f f-stall");
  // Same name and kind, same colour, wherever it appears.
  FlameData d2;
  d2.stacks = {stack({"other", "py_fn"}, 5, FrameKind::Python)};
  auto fs2 = frames_of(render(d2));
  EXPECT_EQ(find(fs2, "py_fn")->fill, find(fs, "py_fn")->fill);

  const std::string legend = between(svg, "<g class=\"legend\"", "</g>");
  for (const char* name : {">Python<", ">Native<", ">Runtime<", ">GPU kernel<", ">Stall<"})
    EXPECT_NE(legend.find(name), std::string::npos) << name;
  for (const char* name : {">Process<", ">GPU source<", ">Unattributed<"})
    EXPECT_EQ(legend.find(name), std::string::npos) << name;
}

TEST(SvgWriter, InteractivePartsPresent) {
  FlameData d;
  d.title = "My title";
  d.subtitle = "sub line";
  d.stacks = {stack({"a"}, 1)};
  const std::string svg = render(d);
  for (const char* s : {"id=\"unzoom\"", ">Reset Zoom<", "id=\"search\"", ">Search<", "id=\"details\"",
                        "id=\"matched\"", "<![CDATA[", ">My title<", ">sub line<", "total: 1,"})
    EXPECT_NE(svg.find(s), std::string::npos) << s;
  EXPECT_NE(std::string_view(kSvgScript).find("Matched: "), std::string_view::npos);
}

// Well-formedness checked by a real XML parser, outside our own code.
TEST(SvgWriter, PythonXmlParserAcceptsHostileNames) {
  if (std::system("python3 -c pass >/dev/null 2>&1") != 0) GTEST_SKIP() << "python3 not found";
  FlameData d;
  d.title = "hostile & <names>";
  d.stacks = {stack({"proc", "<script>alert(1)</script>"}, 3, FrameKind::Python),
              stack({"proc", "a & b \"q\" 'x'"}, 2), stack({"proc", std::string("nul\0byte", 8)}, 1),
              stack({"proc", "bad\xff\xfeutf8"}, 1), stack({"proc", "]]>"}, 1)};
  const std::string path = "/tmp/aiflame_svg_test_" + std::to_string(::getpid()) + ".svg";
  {
    std::ofstream out(path, std::ios::binary);
    SvgWriter().write(d, out);
  }
  auto quote = [](const std::string& s) {
    std::string q = "'";
    for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return q + "'";
  };
  const std::string script = std::string(AIFLAME_SOURCE_DIR) + "/tests/output/check_svg.py";
  std::string cmd = "PYTHONUTF8=1 python3 " + quote(script) + " " + quote(path);
  for (const std::string& n : {std::string("proc"), std::string("<script>alert(1)</script>"),
                               std::string("a & b \"q\" 'x'"), "nul" + kFffd + "byte",
                               "bad" + kFffd + kFffd + "utf8", std::string("]]>")})
    cmd += " " + quote(n);
  EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
  // And the checker can fail: a name that is not there.
  EXPECT_NE(std::system((cmd + " not_a_frame 2>/dev/null").c_str()), 0);
  std::remove(path.c_str());
}

}  // namespace
}  // namespace aiflame
