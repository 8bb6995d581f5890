// Golden outputs of the interchange writers (pprof, speedscope, trace, FlameScope, diff) on the
// committed fixtures, and checks that each keeps the sample totals exact.
// AIFLAME_UPDATE_GOLDEN=1 rewrites the goldens.
#include <gtest/gtest.h>
#include <zlib.h>

#include <algorithm>
#include <map>
#include <set>
#include <nlohmann/json.hpp>
#include <sstream>

#include "input/flame_input.h"
#include "report/load_flame.h"
#include "output/device_split.h"
#include "output/diff_writer.h"
#include "output/flamescope_writer.h"
#include "output/pprof_writer.h"
#include "output/profile.pb.h"
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

TEST(PprofWriter, SampleTotalsAndStallLabelsMatchTheFlameData) {
  for (const char* fixture : {"demo_matmul.aiflame", "gpt_train.aiflame", "iaprof_current.txt"}) {
    FlameData d = load(fixture);
    perftools::profiles::Profile p;
    ASSERT_TRUE(p.ParseFromString(pprof_profile_bytes(d))) << fixture;
    const auto& strings = p.string_table();
    ASSERT_FALSE(strings.empty());
    EXPECT_EQ(strings[0], "");
    uint64_t total = 0;
    std::map<std::string, uint64_t> by_stall, want_by_stall;
    for (const auto& s : p.sample()) {
      ASSERT_EQ(s.value_size(), p.sample_type_size());
      std::string stall;
      for (const auto& l : s.label())
        if (strings.at(l.key()) == "stall_reason") stall = strings.at(l.str());
      total += s.value(0);
      by_stall[stall] += s.value(0);
    }
    EXPECT_EQ(total, d.total()) << fixture;
    for (const auto& s : d.stacks) want_by_stall[s.frames.at(find_frame(s.frames, FrameKind::Stall)).name] += s.count;
    for (auto it = want_by_stall.begin(); it != want_by_stall.end();) it = it->second ? std::next(it) : want_by_stall.erase(it);
    EXPECT_EQ(by_stall, want_by_stall) << fixture;
  }
  check_golden("demo_matmul.pb", pprof_profile_bytes(load("demo_matmul.aiflame")));
}

// pprof re-demangles a function whose system_name equals its name; names must be the display names,
// every location in the one mapping, marked symbolized (else pprof looks for the binary).
TEST(PprofWriter, DisplayNamesAndOneSymbolizedMapping) {
  FlameData d = load("gpt_train.aiflame");
  perftools::profiles::Profile p;
  ASSERT_TRUE(p.ParseFromString(pprof_profile_bytes(d)));
  std::set<std::string> names;
  for (const auto& f : p.function()) {
    EXPECT_EQ(f.system_name(), 0) << p.string_table(f.name());
    names.insert(p.string_table(f.name()));
  }
  EXPECT_TRUE(names.count("<module>"));
  bool templates = false;
  for (const auto& n : names) templates |= n.find("vectorized_elementwise_kernel<") != std::string::npos;
  EXPECT_TRUE(templates);
  ASSERT_EQ(p.mapping_size(), 1);
  EXPECT_TRUE(p.mapping(0).has_functions());
  EXPECT_NE(p.string_table(p.mapping(0).filename()), "");
  for (const auto& l : p.location()) {
    EXPECT_EQ(l.mapping_id(), p.mapping(0).id());
    EXPECT_LT(l.address(), p.mapping(0).memory_limit());
  }
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
  const auto& frames = j["stackFrames"];
  for (const auto& e : j["traceEvents"]) {
    if (e["ph"] == "M") continue;
    EXPECT_NE(e["pid"].get<uint64_t>(), 0u);  // Perfetto takes pid 0 for the kernel's idle task
    if (e["ph"] != "X" || e["cat"] != "kernel") continue;
    kernels++;
    samples += e["args"]["samples"].get<uint64_t>();
    EXPECT_FALSE(e["args"].contains("launch_stack"));  // interned: "sf" names the leaf
    // The launch stack, leaf to root: the demo's kernels are launched from main.
    std::vector<std::string> stack;
    for (std::string k = std::to_string(e["sf"].get<uint64_t>()); frames.contains(k);) {
      stack.push_back(frames[k]["name"]);
      k = frames[k].contains("parent") ? std::to_string(frames[k]["parent"].get<uint64_t>()) : "";
    }
    ASSERT_GE(stack.size(), 3u);
    EXPECT_EQ(stack.back(), "aiflame_demo_matmul");
    EXPECT_NE(std::find(stack.begin(), stack.end(), "main"), stack.end());
    EXPECT_GE(e["dur"].get<double>(), 0);
  }
  EXPECT_EQ(kernels, d.kernels.size());
  EXPECT_EQ(samples, d.total());  // every demo sample is attributed to a launch
}

// Launch slices on the launching threads, joined to their kernels by flows.
TEST(TraceWriter, LaunchSlicesOnTheirThreadsWithFlowsToTheKernels) {
  FlameData d = load("demo_matmul.aiflame");
  ASSERT_FALSE(d.kernels.empty());
  for (auto& k : d.kernels) k.launch_tid = 4242, k.launch_ns = k.start_ns > 5000 ? k.start_ns - 5000 : 0;
  auto j = nlohmann::json::parse(written(TraceWriter(), d));
  std::map<uint64_t, std::vector<nlohmann::json>> flows;
  size_t launches = 0;
  for (const auto& e : j["traceEvents"]) {
    if (e["ph"] == "s" || e["ph"] == "f") flows[e["id"].get<uint64_t>()].push_back(e);
    if (e["ph"] == "X" && e["cat"] == "launch") {
      launches++;
      EXPECT_EQ(e["tid"], 4242);
      EXPECT_TRUE(j["stackFrames"].contains(std::to_string(e["sf"].get<uint64_t>())));
    }
  }
  EXPECT_EQ(launches, d.kernels.size());  // the demo launches each kernel on its own
  EXPECT_EQ(flows.size(), d.kernels.size());
  for (const auto& [id, ends] : flows) {
    ASSERT_EQ(ends.size(), 2u) << id;
    EXPECT_EQ(ends[0]["ph"], "s");
    EXPECT_EQ(ends[0]["tid"], 4242);
    EXPECT_EQ(ends[1]["ph"], "f");
    EXPECT_EQ(ends[1]["bp"], "e");
    EXPECT_GE(ends[1]["tid"].get<uint64_t>(), 1000000000u);  // a GPU track
  }
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

// perf script has no count field, so a sample count a profile claims (a CRC-valid crafted one, or
// a long run's tens of millions) became that many events: report_stream_fuzz ran out of memory on
// a multi-GB output. Past the bound each event stands for the same number of samples.
TEST(FlameScopeWriter, OutputIsBoundedWhateverTheSampleCount) {
  FlameData d;
  d.stacks = {{{{"python3", FrameKind::Process}, {"454", FrameKind::Process}, {"step", FrameKind::Python}, {"gemm", FrameKind::GpuKernel}}, 1'000'000},
              {{{"python3", FrameKind::Process}, {"454", FrameKind::Process}, {"step", FrameKind::Python}, {"softmax", FrameKind::GpuKernel}}, 10'000},
              {{{"python3", FrameKind::Process}, {"454", FrameKind::Process}, {"thin", FrameKind::GpuKernel}}, 3}};
  // gemm's samples 3:1 over two milliseconds; the others in the second.
  d.timeline = {{0, 0, 5'000'000, 3}, {0, 0, 7'000'000, 1}, {1, 0, 7'000'000, 1}, {2, 0, 7'000'000, 1}};
  const uint64_t max_bytes = 1 << 20;
  FlameScopeWriter w(FlameScopeOptions{max_bytes});
  std::string s = written(w, d);
  // The bound, plus at most one event per stack (the largest here is under 100 bytes).
  EXPECT_LE(s.size(), max_bytes + 3 * 100);
  EXPECT_GT(s.size(), max_bytes / 2);  // scaled, not emptied
  const std::string note = w.bound_note(d);
  EXPECT_EQ(note.rfind("FlameScope output bounded at 1 MiB: 1010003 samples as one event each would take ", 0), 0u) << note;
  EXPECT_NE(note.find("; 1 stack with under 5"), std::string::npos) << note;  // thin: 3 samples, under half an event
  EXPECT_EQ(s.rfind("# aiflame: " + note + "\n", 0), 0u);
  std::map<std::string, uint64_t> events;  // by kernel
  std::map<std::string, uint64_t> gemm_at;  // gemm's events by millisecond
  double last = 0;
  std::istringstream in(s);
  std::string line, ms;
  bool head = false;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    if (line[0] != '\t') {
      size_t colon = line.find(": 1 gpu-samples:");
      ASSERT_NE(colon, std::string::npos) << line;
      double t = std::stod(line.substr(line.rfind(' ', colon) + 1));
      EXPECT_GE(t, last);  // in time order (microseconds: over 1000 events in a millisecond share some)
      last = t;
      ms = t < 1.0065 ? "5 ms" : "7 ms";
      head = true;
    } else if (head) {  // the leaf: the kernel
      std::string kernel = line.substr(3, line.find(' ', 3) - 3);
      events[kernel]++;
      if (kernel == "gemm") gemm_at[ms]++;
      head = false;
    }
  }
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events.count("thin"), 0u);
  // Proportions kept: gemm 100 times softmax (rounded per stack), and 3:1 over its two times.
  EXPECT_NEAR(static_cast<double>(events["gemm"]) / static_cast<double>(events["softmax"]), 100.0, 1.0);
  EXPECT_NEAR(static_cast<double>(gemm_at["5 ms"]) / static_cast<double>(gemm_at["7 ms"]), 3.0, 0.01);
  EXPECT_EQ(gemm_at["5 ms"] + gemm_at["7 ms"], events["gemm"]);

  // Within the bound: every sample an event, no note.
  FlameData small = d;
  small.stacks[0].count = 100;
  small.stacks[1].count = 100;
  EXPECT_EQ(w.bound_note(small), "");
  EXPECT_EQ(written(w, small).find("# aiflame"), std::string::npos);
}

// FlameScope's perf parser (app/perf/flame_graph.py) cuts a frame name at its first '+' and splits it
// at "->"; its frame regex is ^[\t ]*[0-9a-fA-F]+ (.+) \((.*?)\)$ and the module picks the type
// (app/common/libtype.py). tests/interop/check_flamescope.py runs that parser itself.
TEST(FlameScopeWriter, NamesReachFlameScopeWholeAndTyped) {
  FlameData d;
  d.stacks = {{{{"python3", FrameKind::Process}, {"454", FrameKind::Process}, {"[libstdc++.so.6+0xecdb3]", FrameKind::Runtime},
                {"std::shared_ptr<T>::operator->", FrameKind::Native}, {"step (train.py:3)", FrameKind::Python},
                {"-", FrameKind::Separator}, {"gemm", FrameKind::GpuKernel}, {"selected", FrameKind::Stall}}, 1}};
  std::string s = written(FlameScopeWriter(), d);
  std::vector<std::string> lines;
  std::istringstream in(s);
  for (std::string line; std::getline(in, line);)
    if (!line.empty() && line[0] == '\t') lines.push_back(line);
  ASSERT_EQ(lines.size(), 6u);  // leaf first
  EXPECT_EQ(lines[0], "\t0 selected ([gpu])");
  EXPECT_EQ(lines[1], "\t0 gemm ([gpu])");
  EXPECT_EQ(lines[2], "\t0 - ()");
  EXPECT_EQ(lines[3], "\t0 step (train.py:3) (/tmp/perf-454.map)");
  EXPECT_EQ(lines[4], "\t0 std::shared_ptr<T>::operator-\xEF\xBC\x9E (native)");
  EXPECT_EQ(lines[5], "\t0 [libstdc\xEF\xBC\x8B\xEF\xBC\x8B.so.6\xEF\xBC\x8B" "0xecdb3] (runtime)");
  for (const auto& l : lines) {
    EXPECT_EQ(l.find('+'), std::string::npos) << l;
    EXPECT_EQ(l.find("->"), std::string::npos) << l;
  }
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
