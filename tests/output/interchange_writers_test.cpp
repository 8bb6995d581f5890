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
// every mapping marked symbolized (else pprof looks for the binary), the program's first.
TEST(PprofWriter, DisplayNamesAndSymbolizedMappings) {
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
  ASSERT_GT(p.mapping_size(), 1);
  EXPECT_EQ(p.string_table(p.mapping(0).filename()), d.process);
  std::map<uint64_t, const perftools::profiles::Mapping*> by_id;
  for (const auto& m : p.mapping()) {
    EXPECT_TRUE(m.has_functions());
    by_id[m.id()] = &m;
  }
  for (const auto& l : p.location()) {
    ASSERT_TRUE(by_id.count(l.mapping_id()));
    const auto& m = *by_id[l.mapping_id()];
    EXPECT_GE(l.address(), m.memory_start());
    EXPECT_LT(l.address(), m.memory_limit());
  }
}

// Native frames: one Mapping per library, with the module's path, build ID and runtime range, and
// each native Location at its recorded address (the call: return address - 1) in it.
TEST(PprofWriter, NativeFramesAtTheirAddressesInTheirLibraries) {
  FlameData d = load("gpt_train.aiflame");
  ASSERT_FALSE(d.modules.empty());
  perftools::profiles::Profile p;
  ASSERT_TRUE(p.ParseFromString(pprof_profile_bytes(d)));
  std::map<uint64_t, const perftools::profiles::Mapping*> libs;
  size_t with_build_id = 0;
  for (const auto& m : p.mapping()) {
    if (m.id() == 1) continue;
    libs[m.id()] = &m;
    const std::string file = p.string_table(m.filename());
    EXPECT_EQ(file.front(), '/') << file;
    with_build_id += m.build_id() != 0;
    EXPECT_LT(m.memory_start(), m.memory_limit());
  }
  EXPECT_GE(libs.size(), 3u);
  EXPECT_GE(with_build_id, libs.size() / 2);
  size_t native = 0;
  for (const auto& l : p.location()) {
    if (!libs.count(l.mapping_id())) continue;
    native++;
    EXPECT_GT(l.address(), 0u);
    // The Location's function is a frame whose origin is this address.
    const std::string fn = p.string_table(p.function(static_cast<int>(l.line(0).function_id() - 1)).name());
    auto o = d.origins.find(FrameName(fn));
    ASSERT_NE(o, d.origins.end()) << fn;
    EXPECT_EQ(o->second.address, l.address()) << fn;
  }
  EXPECT_GT(native, 10u);
}

// The kernel is each GPU sample's leaf (pprof -top ranks it); the instruction and the stall reason
// are labels; Python frames carry their full file path; pid and device labels keep GPU 0 and the pid.
TEST(PprofWriter, KernelLeafLabelsAndFullPythonPaths) {
  FlameData d = load("gpt_train.aiflame");
  perftools::profiles::Profile p;
  ASSERT_TRUE(p.ParseFromString(pprof_profile_bytes(d)));
  const auto& st = p.string_table();
  std::set<std::string> kernels;
  for (const auto& s : d.stacks)
    if (int k = find_frame(s.frames, FrameKind::GpuKernel); k >= 0) kernels.insert(s.frames[k].name);
  std::map<uint64_t, const perftools::profiles::Location*> locs;
  for (const auto& l : p.location()) locs[l.id()] = &l;
  size_t checked = 0;
  for (const auto& s : p.sample()) {
    std::map<std::string, std::string> str;
    std::map<std::string, std::pair<int64_t, std::string>> num;
    for (const auto& l : s.label()) {
      if (l.str()) str[st.at(l.key())] = st.at(l.str());
      else num[st.at(l.key())] = {l.num(), st.at(l.num_unit())};
    }
    const auto* leaf = locs.at(s.location_id(0));
    const std::string leaf_name = st.at(p.function(static_cast<int>(leaf->line(0).function_id() - 1)).name());
    if (!kernels.count(leaf_name)) continue;  // [unattributed]
    checked++;
    EXPECT_TRUE(str.count("stall_reason"));
    EXPECT_NE(leaf_name, str["stall_reason"]);
    EXPECT_TRUE(str.count("instruction")) << leaf_name;
    const std::string& insn = str["instruction"];  // "FFMA 0x1a0" or "0x1a0": the leaf's address
    EXPECT_EQ(std::stoull(insn.substr(insn.rfind("0x") + 2), nullptr, 16), leaf->address()) << insn;
    EXPECT_EQ(str["proc"], "pid " + std::to_string(d.processes.at(0).pid));
    EXPECT_EQ(num["pid"], std::make_pair(static_cast<int64_t>(d.processes.at(0).pid), std::string("pid")));
    // GPU 0: a numeric label of 0 is kept by pprof only with a unit; Pyroscope keeps the string.
    EXPECT_EQ(str["gpu"], "0");
    EXPECT_FALSE(str.count("device"));
    EXPECT_EQ(num["device"], std::make_pair(int64_t{0}, std::string("device")));
  }
  EXPECT_GT(checked, 100u);
  size_t python = 0;
  for (const auto& f : p.function()) {
    const std::string file = st.at(f.filename());
    if (file.size() > 3 && file.substr(file.size() - 3) == ".py") {
      python++;
      EXPECT_EQ(file.front(), '/') << file;
    }
  }
  EXPECT_GT(python, 5u);
}

// "FFMA 0x4e0" of two kernels: two Locations, each its kernel's (the instruction is an address and
// a label, not a function shared by every kernel).
TEST(PprofWriter, OneOffsetOfTwoKernelsIsTwoLocations) {
  auto d = parse_flame_input("p;1;main;-;k1;FFMA 0x4e0;selected 3\np;1;main;-;k2;FFMA 0x4e0;selected 5\n", "two.folded");
  ASSERT_TRUE(d.ok()) << d.error();
  perftools::profiles::Profile p;
  ASSERT_TRUE(p.ParseFromString(pprof_profile_bytes(*d)));
  std::set<std::string> leaves;
  for (const auto& s : p.sample()) {
    const auto& l = p.location(static_cast<int>(s.location_id(0) - 1));
    EXPECT_EQ(l.address(), 0x4e0u);
    leaves.insert(p.string_table(p.function(static_cast<int>(l.line(0).function_id() - 1)).name()));
  }
  EXPECT_EQ(leaves, (std::set<std::string>{"k1", "k2"}));
  for (const auto& f : p.function()) EXPECT_EQ(p.string_table(f.name()).find("FFMA"), std::string::npos);
}

// Folded input names no program: "main;foo" is two frames, not a process label and one frame.
TEST(PprofWriter, FoldedInputKeepsItsFirstFrame) {
  auto d = parse_flame_input("main;foo 10\n", "plain.folded");
  ASSERT_TRUE(d.ok()) << d.error();
  perftools::profiles::Profile p;
  ASSERT_TRUE(p.ParseFromString(pprof_profile_bytes(*d)));
  ASSERT_EQ(p.sample_size(), 1);
  EXPECT_EQ(p.sample(0).location_id_size(), 2);
  for (const auto& l : p.sample(0).label()) EXPECT_NE(p.string_table(l.key()), "process");
}

// gzip_bytes hands zlib its input in chunks (its counts are 32-bit) and checks what zlib returns: the
// output inflates back to the input, whatever the chunk.
TEST(PprofWriter, GzipInChunksInflatesBack) {
  std::string raw;
  for (int i = 0; i < 200000; i++) raw += std::to_string(i * 7919 % 10007) + ";";
  for (size_t chunk : {size_t{1} << 30, size_t{4096}, size_t{7}}) {
    std::string gz = gzip_bytes(raw, chunk);
    z_stream z{};
    ASSERT_EQ(inflateInit2(&z, 15 + 16), Z_OK);
    std::string back(raw.size() + 16, '\0');
    z.next_in = reinterpret_cast<Bytef*>(gz.data());
    z.avail_in = static_cast<uInt>(gz.size());
    z.next_out = reinterpret_cast<Bytef*>(back.data());
    z.avail_out = static_cast<uInt>(back.size());
    EXPECT_EQ(inflate(&z, Z_FINISH), Z_STREAM_END) << chunk;
    back.resize(z.total_out);
    inflateEnd(&z);
    EXPECT_TRUE(back == raw) << chunk << ": " << back.size() << " of " << raw.size() << " bytes";
  }
  EXPECT_EQ(gzip_bytes("").substr(0, 2), "\x1f\x8b");
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
  EXPECT_NE(s.find("<title>multiply_basic (48 samples, "), std::string::npos);
  EXPECT_NE(s.find("%; before 49 samples, 53.0 scaled; -9.43%)</title>"), std::string::npos);
  EXPECT_NE(s.find("rgb(255,"), std::string::npos);  // grew
  EXPECT_NE(s.find(",255)\""), std::string::npos);   // shrank
}

// The diff is the report's SVG (its script: click-to-zoom, search, the details line), and a
// self-diff's frames, all unchanged, are boxes that show: grey, outlined (they were white on white).
TEST(DiffWriter, SelfDiffIsTheReportSvgWithVisibleBoxes) {
  FlameData d = load("demo_matmul.aiflame");
  std::ostringstream svg;
  write_diff_svg(make_diff(d, d), svg);
  const std::string s = svg.str();
  EXPECT_NE(s.find("<g id=\"frames\">"), std::string::npos);
  EXPECT_NE(s.find("id=\"search\""), std::string::npos);
  EXPECT_NE(s.find("id=\"unzoom\""), std::string::npos);
  EXPECT_NE(s.find("Search frames (regular expression"), std::string::npos);  // the report's script
  size_t rects = 0, unchanged = 0;
  for (size_t at = s.find("<g class=\"f "); at != std::string::npos; at = s.find("<g class=\"f ", at + 1)) {
    size_t r = s.find("<rect ", at), end = s.find("/>", r);
    std::string rect = s.substr(r, end - r);
    if (s.compare(at, 17, "<g class=\"f f-all") == 0) continue;
    rects++;
    unchanged += rect.find("fill=\"rgb(224,224,224)\" stroke=\"#888\"") != std::string::npos;
  }
  EXPECT_GT(rects, 100u);
  EXPECT_EQ(unchanged, rects);
  EXPECT_NE(s.find("; before 3959 samples, 3959.0 scaled; +0.00%)"), std::string::npos);
}

}  // namespace
}  // namespace aiflame
