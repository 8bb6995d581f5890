// Small goldens a reviewer can check by hand, one per output writer, beside the large recorded ones:
// a hand-made profile of two Python stacks and two kernels, 11 GPU samples, reported through the path
// the CLI runs (flame_from_profile_file), and written by every writer. The profile (see tiny_profile):
//   python train.py (pid 42), windows mode (each sample names its launch: attribution is exact)
//   launch 1 from  train.py:step:30 -> train.py:forward:10   gemm     110-140 ms
//   launch 2 from  train.py:step:30 -> train.py:backward:20  softmax  150-160 ms
//   samples: gemm    0x10 long_scoreboard 6, gemm 0x20 selected 3
//            softmax 0x10 long_scoreboard 2 (and 1 long_scoreboard_not_issued, a subset: not counted)
// so every picture has 11 samples: 9 under forward/gemm (6 + 3), 2 under backward/softmax.
// The goldens are in tests/data/small/; AIFLAME_UPDATE_GOLDEN=1 rewrites them (then read the diff:
// pprof and trace are likely to change with the interchange work of issue #26). Outputs that carry
// the viewer's code (SVG script, HTML assets) are compared without it; pprof is compared as a text
// dump of its decoded samples, so the golden says what a pprof reader sees.
#include <gtest/gtest.h>
#include <zlib.h>

#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>

#include "attribute/profile_flame.h"
#include "input/folded_reader.h"
#include "output/diff_writer.h"
#include "output/text_writer.h"
#include "output/writer.h"
#include "profile/profile_writer.h"
#include "test_util.h"

namespace aiflame {
namespace {

std::string golden_path(const std::string& name) { return std::string(AIFLAME_SOURCE_DIR) + "/tests/data/small/" + name; }

void check_golden(const std::string& name, const std::string& got) {
  if (std::getenv("AIFLAME_UPDATE_GOLDEN")) test::write_file(golden_path(name), got);
  std::string want = test::read_file(golden_path(name));
  ASSERT_FALSE(want.empty()) << name << " is missing (AIFLAME_UPDATE_GOLDEN=1 writes it)";
  EXPECT_EQ(got, want) << "tests/data/small/" << name << " differs";
}

constexpr uint32_t kLongScoreboard = 3, kLongScoreboardNotIssued = 4, kSelected = 5;

std::string tiny_profile() {
  std::string path = test::temp_path("tiny.aiflame");
  ProfileWriter w;
  std::string error;
  EXPECT_TRUE(w.open(path, true, &error)) << error;
  ProcessRecord pr;
  pr.pid = 42;
  pr.command = "python train.py";
  pr.hostname = "host";
  pr.start_timestamp = 100'000'000;
  pr.interval_ms = 10;
  pr.pc_mode = 1;  // windows: samples carry their launch's correlation id
  w.add(pr);
  for (auto [id, text] : std::vector<std::pair<uint32_t, std::string>>{
           {1, "_Z4gemmv"}, {2, "train.py"}, {3, "forward"}, {4, "backward"}, {5, "step"}, {6, "_Z7softmaxv"}})
    w.add(StringRecord{id, text});
  w.add(StallReasonsRecord{0, {{kLongScoreboard, "smsp__pcsamp_warps_issue_stalled_long_scoreboard"},
                               {kLongScoreboardNotIssued, "smsp__pcsamp_warps_issue_stalled_long_scoreboard_not_issued"},
                               {kSelected, "smsp__pcsamp_warps_issue_stalled_selected"}}});
  w.add(StackRecord{1, {}, {{2, 3, 10}, {2, 5, 30}}});  // leaf first: forward, called from step
  w.add(StackRecord{2, {}, {{2, 4, 20}, {2, 5, 30}}});  // backward, called from step
  auto launch = [&](uint32_t corr, uint32_t stack, uint32_t name, uint64_t start, uint64_t end) {
    w.add(LaunchRecord{corr, 7, start - 1'000'000, stack, 307, true, 0});
    KernelRecord k;
    k.correlation_id = corr;
    k.start = start;
    k.end = end;
    k.name = name;
    k.stream = 13;
    k.grid[0] = 4;
    k.block[0] = 128;
    w.add(k);
  };
  launch(1, 1, 1, 110'000'000, 140'000'000);
  launch(2, 2, 6, 150'000'000, 160'000'000);
  PcBatchRecord b1;  // the window over gemm
  b1.prev_timestamp = 120'000'000;
  b1.timestamp = 130'000'000;
  b1.samples = {{1, 0, 0x10, kLongScoreboard, 6, 1}, {1, 0, 0x20, kSelected, 3, 1}};
  w.add(b1);
  PcBatchRecord b2;  // the window over softmax
  b2.prev_timestamp = 152'000'000;
  b2.timestamp = 158'000'000;
  b2.samples = {{6, 0, 0x10, kLongScoreboard, 2, 2}, {6, 0, 0x10, kLongScoreboardNotIssued, 1, 2}};
  w.add(b2);
  w.add(EndRecord{170'000'000});
  EXPECT_TRUE(w.close()) << w.error();
  return path;
}

FlameData tiny_flame() {
  std::string path = tiny_profile();
  FrameOptions fo;
  fo.times = true;
  auto r = flame_from_profile_file(path, fo);
  std::remove(path.c_str());
  EXPECT_TRUE(r.ok()) << r.error();
  if (!r.ok()) return {};
  EXPECT_EQ(r->stats.samples, 11u);
  EXPECT_NEAR(r->stats.exact, 11.0, 1e-9);
  FlameData d = std::move(r->flame);
  d.title = "tiny";
  d.subtitle = "python train.py  |  11 GPU samples, 2 kernels";
  return d;
}

std::string written(const std::string& format, const FlameData& d) {
  std::ostringstream out;
  make_writer(format)->write(d, out);
  return out.str();
}

// The viewer's code is not what these goldens are about: <script> bodies are replaced by a marker.
std::string without_scripts(const std::string& s) {
  static const std::regex script("<script([^>]*)>[\\s\\S]*?</script>");
  return std::regex_replace(s, script, "<script$1>[script left out]</script>");
}

std::string gunzip(const std::string& gz) {
  z_stream z{};
  EXPECT_EQ(inflateInit2(&z, 16 + MAX_WBITS), Z_OK);
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(gz.data()));
  z.avail_in = static_cast<uInt>(gz.size());
  std::string out;
  char buf[65536];
  int rc;
  do {
    z.next_out = reinterpret_cast<Bytef*>(buf);
    z.avail_out = sizeof buf;
    rc = inflate(&z, Z_NO_FLUSH);
    out.append(buf, sizeof buf - z.avail_out);
  } while (rc == Z_OK);
  EXPECT_EQ(rc, Z_STREAM_END);
  inflateEnd(&z);
  return out;
}

// A pprof Profile message as a pprof reader sees it: sample types, then each sample's values, labels
// and stack (root first, by function name), one per line.
struct Pb {
  std::multimap<uint32_t, std::string> msgs;  // length-delimited fields
  std::multimap<uint32_t, uint64_t> ints;     // varints, packed ones unpacked
};
Pb parse_pb(const std::string& s, bool unpack = false) {
  Pb m;
  auto varint = [&](size_t& p) {
    uint64_t v = 0;
    for (int shift = 0; p < s.size() && shift < 64; shift += 7) {
      auto b = static_cast<unsigned char>(s[p++]);
      v |= uint64_t{b & 0x7fu} << shift;
      if (!(b & 0x80)) break;
    }
    return v;
  };
  for (size_t p = 0; p < s.size();) {
    uint64_t tag = varint(p);
    auto field = static_cast<uint32_t>(tag >> 3);
    if ((tag & 7) == 0) {
      m.ints.insert({field, varint(p)});
    } else if ((tag & 7) == 2) {
      uint64_t n = varint(p);
      std::string bytes = s.substr(p, n);
      p += n;
      m.msgs.insert({field, bytes});
      if (unpack) {  // a packed repeated varint field, read both ways
        for (size_t q = 0; q < bytes.size();) {
          uint64_t v = 0;
          for (int shift = 0; q < bytes.size() && shift < 64; shift += 7) {
            auto b = static_cast<unsigned char>(bytes[q++]);
            v |= uint64_t{b & 0x7fu} << shift;
            if (!(b & 0x80)) break;
          }
          m.ints.insert({field, v});
        }
      }
    } else {
      ADD_FAILURE() << "wire type " << (tag & 7);
      break;
    }
  }
  return m;
}
std::string pprof_text(const std::string& gz) {
  Pb prof = parse_pb(gunzip(gz));
  std::vector<std::string> strings;
  for (auto [it, end] = prof.msgs.equal_range(6); it != end; ++it) strings.push_back(it->second);
  auto str = [&](uint64_t i) { return i < strings.size() ? strings[i] : "?"; };
  std::map<uint64_t, std::string> function_name;
  for (auto [it, end] = prof.msgs.equal_range(5); it != end; ++it) {
    Pb f = parse_pb(it->second);
    function_name[f.ints.find(1)->second] = str(f.ints.find(2)->second);
  }
  std::map<uint64_t, std::string> location;  // id -> function names, innermost inline first
  for (auto [it, end] = prof.msgs.equal_range(4); it != end; ++it) {
    Pb l = parse_pb(it->second);
    std::string names;
    for (auto [li, lend] = l.msgs.equal_range(4); li != lend; ++li) {
      Pb line = parse_pb(li->second);
      names += (names.empty() ? "" : "|") + function_name[line.ints.find(1)->second];
    }
    location[l.ints.find(1)->second] = names;
  }
  std::ostringstream out;
  for (auto [it, end] = prof.msgs.equal_range(1); it != end; ++it) {
    Pb t = parse_pb(it->second);
    out << "sample_type " << str(t.ints.find(1)->second) << " " << str(t.ints.find(2)->second) << "\n";
  }
  for (auto [it, end] = prof.msgs.equal_range(2); it != end; ++it) {
    Pb s = parse_pb(it->second, true);
    std::vector<std::string> frames;
    for (auto [li, lend] = s.ints.equal_range(1); li != lend; ++li) frames.push_back(location[li->second]);
    out << "sample";
    for (auto [vi, vend] = s.ints.equal_range(2); vi != vend; ++vi) out << " " << vi->second;
    for (auto [li, lend] = s.msgs.equal_range(3); li != lend; ++li) {
      Pb label = parse_pb(li->second);
      out << " [" << str(label.ints.find(1)->second) << "=";
      if (auto v = label.ints.find(2); v != label.ints.end()) out << str(v->second);
      else if (auto n = label.ints.find(3); n != label.ints.end()) out << n->second;
      else out << 0;  // a number 0 is not written
      if (auto u = label.ints.find(4); u != label.ints.end()) out << " " << str(u->second);
      out << "]";
    }
    out << " ";
    for (size_t i = frames.size(); i-- > 0;) out << frames[i] << (i ? ";" : "");  // root first
    out << "\n";
  }
  return out.str();
}

TEST(SmallGoldens, Text) {
  FlameData d = tiny_flame();
  std::string s = written("text", d);
  check_golden("tiny.txt", s);
  // By hand: gemm 9 of 11 samples (81.8%), 30 ms in 1 launch, from forward; softmax 2 (18.2%), 10 ms,
  // from backward; stalls long_scoreboard 8 (6 + 2), selected 3.
  EXPECT_NE(s.find("        9  81.8%     30.000         1  gemm\n"
                   "                                       from forward (train.py:10), 100.0% of the kernel\n"),
            std::string::npos);
  EXPECT_NE(s.find("        2  18.2%     10.000         1  softmax\n"
                   "                                       from backward (train.py:20), 100.0% of the kernel\n"),
            std::string::npos);
  EXPECT_NE(s.find("        8  72.7%  long_scoreboard\n        3  27.3%  selected\n"), std::string::npos);
  EXPECT_NE(s.find("  gemm: long_scoreboard 66.7%, selected 33.3%\n"), std::string::npos);
}

TEST(SmallGoldens, RecordSummaryLines) {
  auto lines = summary_lines(top_tables(tiny_flame()));
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[0], "100.0% of GPU samples in 2 kernels: gemm 81.8%, softmax 18.2%");
  EXPECT_EQ(lines[1], "top stall long_scoreboard 72.7% (then selected 27.3%)");
  EXPECT_EQ(lines[2], "top line forward (train.py:10) 81.8% of GPU samples, mostly gemm");
}

TEST(SmallGoldens, Folded) {
  FlameData d = tiny_flame();
  std::string s = written("folded", d);
  check_golden("tiny.folded", s);
  // By hand: two gemm lines (6 + 3) and one softmax line (2), 11 in all.
  uint64_t total = 0;
  std::istringstream in(s);
  for (std::string line; std::getline(in, line);) total += std::stoull(line.substr(line.rfind(' ') + 1));
  EXPECT_EQ(total, 11u);
}

TEST(SmallGoldens, Svg) {
  std::string s = written("svg", tiny_flame());
  check_golden("tiny.svg", without_scripts(s));
  EXPECT_NE(s.find("<title>all (11 samples, 100.00%)</title>"), std::string::npos);
  EXPECT_NE(s.find("<title>backward (train.py:20) (2 samples, 18.18%)</title>"), std::string::npos);
}

TEST(SmallGoldens, HtmlData) {
  std::string s = written("html", tiny_flame());
  const std::string open = "<script type=\"application/json\" id=\"aiflame-data\">";
  size_t at = s.find(open);
  ASSERT_NE(at, std::string::npos);
  at += open.size();
  size_t end = s.find("</script>", at);
  ASSERT_NE(end, std::string::npos);
  nlohmann::json j = nlohmann::json::parse(s.substr(at, end - at));
  check_golden("tiny.html.json", j.dump(1) + "\n");
  EXPECT_EQ(j["processes"]["rows"][0]["samples"], 11);
}

TEST(SmallGoldens, PprofAsDecoded) {
  std::string text = pprof_text(written("pprof", tiny_flame()));
  check_golden("tiny.pprof.txt", text);
  // gpu_time is each kernel's time shared by its samples: gemm's 30 ms over 9 samples gives its 6- and
  // 3-sample stacks 20 and 10 ms, softmax's 10 ms all to its 2 samples.
  EXPECT_NE(text.find("sample 6 20000000 "), std::string::npos) << text;
  EXPECT_NE(text.find("sample 3 10000000 "), std::string::npos) << text;
  EXPECT_NE(text.find("sample 2 10000000 "), std::string::npos) << text;
  uint64_t total = 0;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    if (line.rfind("sample ", 0) == 0) total += std::stoull(line.substr(7));
  EXPECT_EQ(total, 11u);
}

TEST(SmallGoldens, Speedscope) {
  std::string s = written("speedscope", tiny_flame());
  check_golden("tiny.speedscope.json", s);
  EXPECT_EQ(nlohmann::json::parse(s)["profiles"][0]["endValue"], 11);
}

TEST(SmallGoldens, Trace) {
  std::string s = written("trace", tiny_flame());
  check_golden("tiny.trace.json", s);
  // The two kernels as they ran: gemm 30 ms with 9 samples, softmax 10 ms with 2.
  std::map<std::string, std::pair<double, uint64_t>> kernels;
  nlohmann::json j = nlohmann::json::parse(s);
  for (const auto& e : j["traceEvents"])
    if (e["ph"] == "X") kernels[e["name"]] = {e["dur"].get<double>(), e["args"]["samples"].get<uint64_t>()};
  ASSERT_EQ(kernels.size(), 2u);
  EXPECT_EQ(kernels.begin()->second, (std::pair<double, uint64_t>{30000.0, 9}));
  EXPECT_EQ(kernels.rbegin()->second, (std::pair<double, uint64_t>{10000.0, 2}));
}

TEST(SmallGoldens, FlameScope) {
  std::string s = written("flamescope", tiny_flame());
  check_golden("tiny.stacks", s);
  size_t events = 0;
  for (size_t at = 0; (at = s.find(": 1 gpu-samples:", at)) != std::string::npos; at++) events++;
  EXPECT_EQ(events, 11u);
}

TEST(SmallGoldens, Heatmap) {
  check_golden("tiny.heatmap.svg", without_scripts(written("heatmap", tiny_flame())));
}

// Differential: BEFORE and AFTER as folded text, numbers a reviewer can redo: BEFORE has 4 samples,
// AFTER 8, so BEFORE's counts are scaled by 2 (a;b 3 -> 6, a;c 1 -> 2); a;d is new in AFTER.
TEST(SmallGoldens, Diff) {
  auto before = parse_folded("a;b 3\na;c 1\n");
  auto after = parse_folded("a;b 2\na;c 4\na;d 2\n");
  ASSERT_TRUE(before.ok() && after.ok());
  DiffData diff = make_diff(*before, *after);
  std::ostringstream folded, svg;
  write_diff_folded(diff, folded);
  check_golden("tiny.diff.folded", folded.str());
  EXPECT_EQ(folded.str(), "a;b 6 2\na;c 2 4\na;d 0 2\n");
  write_diff_svg(diff, svg);
  check_golden("tiny.diff.svg", without_scripts(svg.str()));
}

}  // namespace
}  // namespace aiflame
