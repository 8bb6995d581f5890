// Golden outputs of the interchange writers (pprof, speedscope, trace, FlameScope, diff) on the
// committed fixtures, and checks that each keeps the sample totals exact.
// AIFLAME_UPDATE_GOLDEN=1 rewrites the goldens.
#include <gtest/gtest.h>
#include <zlib.h>

#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "input/flame_input.h"
#include "report/load_flame.h"
#include "output/device_split.h"
#include "output/diff_writer.h"
#include "output/flamescope_writer.h"
#include "output/pprof_writer.h"
#include "output/speedscope_writer.h"
#include "output/trace_writer.h"
#include "test_util.h"

namespace aiflame {
namespace {

std::string data_path(const std::string& name) { return std::string(AIFLAME_SOURCE_DIR) + "/tests/data/" + name; }

FlameData load(const std::string& name) {
  auto d = read_flame_input(data_path(name));
  EXPECT_TRUE(d.ok()) << d.error();
  return d.ok() ? std::move(*d) : FlameData{};
}

void check_golden(const std::string& golden, const std::string& got) {
  if (std::getenv("AIFLAME_UPDATE_GOLDEN")) test::write_file(data_path(golden), got);
  std::string want = test::read_file(data_path(golden));
  ASSERT_FALSE(want.empty()) << golden << " is missing";
  EXPECT_TRUE(want == got) << golden << " differs (" << got.size() << " bytes, golden " << want.size() << ")";
}

std::string written(const Writer& w, const FlameData& d) {
  std::ostringstream out;
  w.write(d, out);
  return out.str();
}

// A minimal protobuf reader for the test: (field, wire type, value or bytes) of one message.
struct PbField {
  uint32_t field = 0, wire = 0;
  uint64_t v = 0;
  std::string bytes;
};
bool read_varint(const std::string& s, size_t& p, uint64_t& v) {
  v = 0;
  for (int shift = 0; p < s.size() && shift < 64; shift += 7) {
    auto b = static_cast<unsigned char>(s[p++]);
    v |= uint64_t{b & 0x7fu} << shift;
    if (!(b & 0x80)) return true;
  }
  return false;
}
std::vector<PbField> fields(const std::string& s) {
  std::vector<PbField> out;
  for (size_t p = 0; p < s.size();) {
    uint64_t tag = 0;
    EXPECT_TRUE(read_varint(s, p, tag));
    PbField f{static_cast<uint32_t>(tag >> 3), static_cast<uint32_t>(tag & 7), 0, {}};
    if (f.wire == 0) EXPECT_TRUE(read_varint(s, p, f.v));
    else if (f.wire == 2) {
      uint64_t n = 0;
      EXPECT_TRUE(read_varint(s, p, n));
      EXPECT_LE(p + n, s.size());
      f.bytes = s.substr(p, n);
      p += n;
    } else {
      ADD_FAILURE() << "unexpected wire type " << f.wire;
      break;
    }
    out.push_back(std::move(f));
  }
  return out;
}

TEST(PprofWriter, SampleTotalsAndStallLabelsMatchTheFlameData) {
  for (const char* fixture : {"demo_matmul.aiflame", "gpt_train.aiflame", "iaprof_current.txt"}) {
    FlameData d = load(fixture);
    std::string raw = pprof_profile_bytes(d);
    std::vector<std::string> strings;
    for (const auto& f : fields(raw))
      if (f.field == 6) strings.push_back(f.bytes);
    ASSERT_FALSE(strings.empty());
    EXPECT_EQ(strings[0], "");
    uint64_t total = 0;
    std::map<std::string, uint64_t> by_stall, want_by_stall;
    for (const auto& f : fields(raw)) {
      if (f.field != 2) continue;
      uint64_t samples = 0;
      std::string stall;
      for (const auto& sf : fields(f.bytes)) {
        if (sf.field == 2) {  // packed values: the first is gpu_samples
          size_t p = 0;
          ASSERT_TRUE(read_varint(sf.bytes, p, samples));
        }
        if (sf.field == 3) {
          uint64_t key = 0, str = 0;
          for (const auto& lf : fields(sf.bytes)) (lf.field == 1 ? key : lf.field == 2 ? str : key) = lf.field <= 2 ? lf.v : key;
          if (strings.at(key) == "stall_reason") stall = strings.at(str);
        }
      }
      total += samples;
      by_stall[stall] += samples;
    }
    EXPECT_EQ(total, d.total()) << fixture;
    for (const auto& s : d.stacks) want_by_stall[s.frames.at(find_frame(s.frames, FrameKind::Stall)).name] += s.count;
    for (auto it = want_by_stall.begin(); it != want_by_stall.end();) it = it->second ? std::next(it) : want_by_stall.erase(it);
    EXPECT_EQ(by_stall, want_by_stall) << fixture;
  }
  check_golden("demo_matmul.pb", pprof_profile_bytes(load("demo_matmul.aiflame")));
}

TEST(PprofWriter, OutputIsGzip) {
  std::string gz = written(PprofWriter(), load("iaprof_current.txt"));
  ASSERT_GT(gz.size(), 2u);
  EXPECT_EQ(gz.substr(0, 2), "\x1f\x8b");
}

TEST(SpeedscopeWriter, GoldenAndTotals) {
  FlameData d = load("demo_matmul.aiflame");
  std::string s = written(SpeedscopeWriter(), d);
  check_golden("demo_matmul.speedscope.json", s);
  auto j = nlohmann::json::parse(s);
  EXPECT_EQ(j["$schema"], "https://www.speedscope.app/file-format-schema.json");
  uint64_t total = 0;
  for (const auto& p : j["profiles"]) {
    EXPECT_EQ(p["type"], "sampled");
    EXPECT_EQ(p["samples"].size(), p["weights"].size());
    uint64_t t = 0;
    for (const auto& w : p["weights"]) t += w.get<uint64_t>();
    EXPECT_EQ(p["endValue"].get<uint64_t>(), t);
    total += t;
    for (const auto& st : p["samples"])
      for (const auto& i : st) EXPECT_LT(i.get<size_t>(), j["shared"]["frames"].size());
  }
  EXPECT_EQ(total, d.total());
  check_golden("iaprof_current.speedscope.json", written(SpeedscopeWriter(), load("iaprof_current.txt")));
}

// Names that break JSON unless escaped: quotes, backslashes, control characters, NUL, invalid UTF-8
// (nlohmann::json throws on it unless told to replace) and a 100 KB template.
TEST(SpeedscopeWriter, HostileNamesStayValidJson) {
  const std::string big(100000, 'T');
  std::string text = std::string("main;say \"hi\"\\n;tab\there;bad\xff\xfeutf8;nul") + '\0' + "x;<script>&'" + big + " 7\n";
  auto d = parse_flame_input(text, "hostile.folded");
  ASSERT_TRUE(d.ok()) << d.error();
  std::string s = written(SpeedscopeWriter(), *d);
  nlohmann::json j;
  ASSERT_NO_THROW(j = nlohmann::json::parse(s));
  std::vector<std::string> names;
  for (const auto& f : j["shared"]["frames"]) names.push_back(f["name"].get<std::string>());
  ASSERT_EQ(names.size(), 6u);
  EXPECT_EQ(names[1], "say \"hi\"\\n");
  EXPECT_EQ(names[2], "tab\there");
  EXPECT_EQ(names[3], "bad\xef\xbf\xbd\xef\xbf\xbdutf8");  // each invalid byte becomes U+FFFD
  EXPECT_EQ(names[4], std::string("nul\0x", 5));  // JSON carries NUL as \u0000
  EXPECT_EQ(names[5], "<script>&'" + big);
  EXPECT_EQ(j["profiles"][0]["endValue"].get<uint64_t>(), 7u);
}

TEST(TraceWriter, KernelsOnDeviceStreamTracksWithTheirSamples) {
  FlameData d = load("demo_matmul.aiflame");
  std::string s = written(TraceWriter(), d);
  check_golden("demo_matmul.trace.json", s);
  auto j = nlohmann::json::parse(s);
  size_t kernels = 0;
  uint64_t samples = 0;
  for (const auto& e : j["traceEvents"]) {
    if (e["ph"] != "X") continue;
    kernels++;
    samples += e["args"]["samples"].get<uint64_t>();
    EXPECT_FALSE(e["args"]["launch_stack"].empty());
    EXPECT_GE(e["dur"].get<double>(), 0);
  }
  EXPECT_EQ(kernels, d.kernels.size());
  EXPECT_EQ(samples, d.total());  // every demo sample is attributed to a launch
}

TEST(FlameScopeWriter, OneEventPerSampleInTimeOrder) {
  FlameData d = load("iaprof_current.txt");
  std::string s = written(FlameScopeWriter(), d);
  check_golden("iaprof_current.stacks", s);
  uint64_t events = 0;
  double last = 0;
  std::istringstream in(s);
  for (std::string line; std::getline(in, line);) {
    size_t colon = line.find(": 1 gpu-samples:");
    if (line.empty() || line[0] == '\t' || colon == std::string::npos) continue;
    double t = std::stod(line.substr(line.rfind(' ', colon) + 1));
    EXPECT_GT(t, last);
    last = t;
    events++;
  }
  EXPECT_EQ(events, d.total());
  // No times: spread over one second, and said so.
  FlameData folded;
  folded.stacks = {{{{"p", FrameKind::Process}, {"f", FrameKind::Native}}, 3}};
  EXPECT_EQ(written(FlameScopeWriter(), folded).rfind("# aiflame: the input has no sample times", 0), 0u);
}

TEST(DiffWriter, NormalizedByTotalsWithBothCounts) {
  FlameData before = load("iaprof_interval.txt"), after = load("iaprof_current.txt");
  DiffData diff = make_diff(before, after);
  EXPECT_EQ(diff.before_total, 49u);
  EXPECT_EQ(diff.after_total, after.total());
  double scaled = 0;
  uint64_t a = 0;
  for (const auto& s : diff.stacks) scaled += s.before_scaled, a += s.after;
  EXPECT_NEAR(scaled, static_cast<double>(after.total()), 1e-9);
  EXPECT_EQ(a, after.total());
  std::ostringstream folded, svg;
  write_diff_folded(diff, folded);
  check_golden("iaprof.diff.folded", folded.str());
  write_diff_svg(diff, svg);
  std::string s = svg.str();
  EXPECT_NE(s.find("multiply_basic (before 49 samples, 53.0 scaled; after 48 samples; -9.43%)"), std::string::npos);
  EXPECT_NE(s.find("rgb(255,"), std::string::npos);  // grew
  EXPECT_NE(s.find(",255)\""), std::string::npos);   // shrank
}

}  // namespace
}  // namespace aiflame
