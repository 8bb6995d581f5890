// Profiles whose every chunk is valid (written by the real ProfileWriter, so the CRCs pass) but whose
// values are hostile: the report must finish every output format on them, in bounded memory. Each
// case is also a seed of the profile fuzzer (tests/fuzz/corpus/profile_reader/crafted_*.aiflame): with
// AIFLAME_WRITE_SEEDS=DIR the test writes them there.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <functional>
#include <sstream>

#include <nlohmann/json.hpp>

#include "attribute/profile_flame.h"
#include "output/flamescope_writer.h"
#include "output/heatmap_writer.h"
#include "output/trace_writer.h"
#include "output/writer.h"
#include "profile/profile_writer.h"
#include "test_util.h"

namespace aiflame {
namespace {

// One process, kernel `gemm` launched from stack 1 (main -> step), 10 samples; `edit` changes what
// the case is about before the records are written.
struct Crafted {
  ProcessRecord process;
  std::vector<LaunchRecord> launches;
  std::vector<KernelRecord> kernels;
  std::vector<GraphNodeRecord> nodes;
  PcBatchRecord batch;
  StallReasonsRecord reasons{0, {{3, "smsp__pcsamp_warps_issue_stalled_long_scoreboard"}}};
};

std::string write_crafted(const std::string& name, const std::function<void(Crafted&)>& edit) {
  Crafted c;
  c.process.pid = 7;
  c.process.command = "crafted " + name;
  c.process.start_timestamp = 1'000'000'000;
  c.process.interval_ms = 10;
  KernelRecord k;
  k.correlation_id = 1;
  k.start = 1'100'000'000;
  k.end = 1'200'000'000;
  k.name = 1;
  c.kernels = {k};
  c.launches = {LaunchRecord{1, 1, 1'050'000'000, 1, 307, true, 0}};
  c.batch.prev_timestamp = 1'100'000'000;
  c.batch.timestamp = 1'200'000'000;
  c.batch.samples = {{1, 0, 0x10, 3, 10, 0}};
  edit(c);
  std::string path = test::temp_path(name + ".aiflame");
  ProfileWriter w;
  std::string error;
  EXPECT_TRUE(w.open(path, true, &error)) << error;
  w.add(c.process);
  w.add(StringRecord{1, "gemm"});
  w.add(StringRecord{2, "train.py"});
  w.add(StringRecord{3, "step"});
  w.add(c.reasons);
  w.add(StackRecord{1, {}, {{2, 3, 10}}});
  for (const auto& l : c.launches) w.add(l);
  for (const auto& n : c.nodes) w.add(n);
  for (const auto& k2 : c.kernels) w.add(k2);
  w.add(c.batch);
  w.add(EndRecord{});
  EXPECT_TRUE(w.close()) << w.error();
  if (const char* dir = std::getenv("AIFLAME_WRITE_SEEDS"); dir && *dir)
    test::write_file(std::string(dir) + "/crafted_" + name + ".aiflame", test::read_file(path));
  return path;
}

// Every output format of the report, from the streamed pipeline as `aiflame report` runs it.
void report_every_format(const std::string& path, uint64_t want_samples) {
  FrameOptions fo;
  fo.times = true;
  auto r = flame_from_profile_file(path, fo);
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_EQ(r->flame.total(), want_samples);
  for (const auto& format : writer_formats()) {
    std::ostringstream out;
    auto t0 = std::chrono::steady_clock::now();
    make_writer(format)->write(r->flame, out);
    EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5)) << format;
    // FlameScope's bound is its own (one event per sample up to kFlameScopeMaxBytes, then scaled).
    EXPECT_LT(out.str().size(), format == "flamescope" ? kFlameScopeMaxBytes + (1 << 20) : size_t{16} << 20) << format;
  }
}

// Before: std::out_of_range from LaunchIndex::parts (launch_index.h:33), std::terminate, exit 134.
TEST(CraftedProfiles, LaunchStackIdWithTheCompositeBitIsNotAGraphReplay) {
  std::string path = write_crafted("composite_stack_id", [](Crafted& c) { c.launches[0].stack_id = 0x80000005u; });
  report_every_format(path, 10);
  std::remove(path.c_str());
}

TEST(CraftedProfiles, GraphNodeStackIdWithTheCompositeBit) {
  std::string path = write_crafted("composite_node_stack", [](Crafted& c) {
    c.kernels[0].graph_id = 1;
    c.kernels[0].graph_node_id = 100;
    c.nodes = {GraphNodeRecord{100, 1, 0xfffffff0u, 0}};
  });
  report_every_format(path, 10);
  std::remove(path.c_str());
}

// Before: bad_alloc (100 doubles a second of a span of 1.2 s into the epoch... times the epoch).
TEST(CraftedProfiles, KernelOneNanosecondIntoTheEpochKeepsTheHeatmapSmall) {
  std::string path = write_crafted("epoch_kernel", [](Crafted& c) {
    KernelRecord k = c.kernels[0];
    k.correlation_id = 2;
    k.start = 1;
    k.end = 2;
    c.kernels.push_back(k);
    c.launches.push_back(LaunchRecord{2, 1, 1, 1, 307, true, 0});
  });
  report_every_format(path, 10);
  std::remove(path.c_str());
}

TEST(CraftedProfiles, KernelFarInTheFuture) {
  std::string path = write_crafted("future_kernel", [](Crafted& c) {
    KernelRecord k = c.kernels[0];
    k.correlation_id = 2;
    k.start = 10'000'000'000'000'000'000ull;
    k.end = k.start + 1000;
    c.kernels.push_back(k);
    c.launches.push_back(LaunchRecord{2, 1, k.start - 10, 1, 307, true, 0});
    c.batch.timestamp = k.end + 1000;
  });
  report_every_format(path, 10);
  std::remove(path.c_str());
}

// The block-scheduler model on hostile SM fields: limits of one SM with one slot, grids of 2^31
// blocks, zero-thread and huge-shared-memory blocks, a thousand executions overlapping at once. The
// report must finish in bounded time (cohorts of blocks, the model's step budget) with every sample.
TEST(CraftedProfiles, BlockSchedulerFieldsAtTheirLimits) {
  std::string path = write_crafted("sm_limits", [](Crafted& c) {
    c.reasons.sm_count = 1;
    c.reasons.max_threads_per_sm = 32;
    c.reasons.max_blocks_per_sm = 1;
    c.reasons.registers_per_sm = 1;
    c.reasons.shared_per_sm = 1;
    c.reasons.shared_reserved_per_block = 0xffffffffu;
    KernelRecord k = c.kernels[0];
    for (uint32_t i = 0; i < 1000; i++) {
      k.correlation_id = 2 + i;
      k.start = 1'100'000'000 + i;
      k.end = 1'200'000'000 - i;
      k.grid[0] = i % 3 ? INT32_MAX : 0; k.grid[1] = k.grid[2] = 1;
      k.block[0] = i % 5 ? 1024 : 0; k.block[1] = k.block[2] = 1;
      k.registers = i % 7 ? 255 : 0xffffffffu;
      k.static_shared = 0xffffffffu;
      k.dynamic_shared = i;
      c.kernels.push_back(k);
      // Two launch stacks (the second without a Stack record), so that the model simulates the group.
      c.launches.push_back(LaunchRecord{2 + i, 1, 1'050'000'000, 1 + i % 2, 307, true, 0});
    }
  });
  report_every_format(path, 10);
  std::remove(path.c_str());
}

TEST(CraftedProfiles, HugeIndicesEverywhere) {
  std::string path = write_crafted("huge_indices", [](Crafted& c) {
    c.kernels[0].device = 0xffffffffu;
    c.kernels[0].name = 0xfffffffeu;
    c.batch.device = 0xfffffff0u;
    c.batch.samples.push_back({0xffffffffu, ~0ull, ~0ull, 0xffffffffu, 5, 0xffffffffu});
    c.launches[0].correlation_id = 0xffffffffu;
    c.kernels[0].correlation_id = 0xffffffffu;
  });
  report_every_format(path, 15);
  std::remove(path.c_str());
}

// Before: FlameScope's one event per sample made 17 billion events (terabytes); report_stream_fuzz
// ran out of memory on a profile like it (tests/fuzz/known_crashes.txt until the bound).
TEST(CraftedProfiles, BillionsOfSamplesKeepFlameScopeBounded) {
  std::string path = write_crafted("huge_sample_count", [](Crafted& c) {
    c.batch.samples = {{1, 0, 0x10, 3, 0xffffffffu, 0}, {1, 0, 0x20, 3, 0xffffffffu, 0},
                       {1, 0, 0x30, 3, 0xffffffffu, 0}, {1, 0, 0x40, 3, 0xffffffffu, 0}};
  });
  report_every_format(path, 4 * uint64_t{0xffffffffu});
  std::remove(path.c_str());
}

// The heatmap's memory is its cells, whatever the span: 10^16 ns cost 8.2 GB and 26 s before.
TEST(Heatmap, CellsAreBoundedWhateverTheSpan) {
  FlameData d;
  d.stacks = {{{{"p", FrameKind::Process}}, 3}};
  d.timeline = {{0, 0, 0, 1}, {0, 0, 10'000'000'000'000'000ull, 1}, {0, 0, UINT64_MAX, 1}};
  for (uint32_t dev = 0; dev < 100; dev++) d.timeline.push_back({0, dev, 5'000'000'000ull, 1});
  Heatmap h = bin_heatmap(d, 1);
  EXPECT_LE(h.columns, kMaxHeatmapColumns);
  EXPECT_LE(h.lanes.size(), kMaxHeatmapLanes);
  EXPECT_TRUE(h.other_devices);
  double sum = 0;
  for (const auto& g : h.lanes)
    for (const auto& col : g.counts)
      for (double v : col) sum += v;
  EXPECT_DOUBLE_EQ(sum, 103);  // every sample in a cell, none dropped
}

// Issue #26 item 4: one second of samples drew a 158-px picture that cut off its title and legend.
TEST(Heatmap, ShortRunIsWideEnoughForItsTitleAndLegend) {
  FlameData d;
  d.title = "AI Flame Graph: demo";
  d.stacks = {{{{"p", FrameKind::Process}}, 1}};
  d.timeline = {{0, 0, 500'000'000, 1}};
  std::ostringstream out;
  HeatmapWriter().write(d, out);
  std::string s = out.str();
  size_t w = s.find("width=\"");
  ASSERT_NE(w, std::string::npos);
  EXPECT_GE(std::stoi(s.substr(w + 7)), 700);
}

}  // namespace
}  // namespace aiflame

namespace aiflame {
namespace {

// The trace's launch slices: named after the launch API and the user's frame that made the call, and
// as long as the call was (entry to exit), which the recorder writes with the thread's next launch
// (LaunchRecord::prev_duration). The thread's last launch has no recorded exit: 1 us.
TEST(CraftedProfiles, TraceLaunchSlicesHaveTheCallsNameAndDuration) {
  std::string path = write_crafted("launch_durations", [](Crafted& c) {
    LaunchRecord second = c.launches[0];
    second.correlation_id = 2;
    second.timestamp = 1'060'000'000;
    second.prev_duration = 3'000;  // the first launch call took 3 us
    c.launches.push_back(second);
    KernelRecord k = c.kernels[0];
    k.correlation_id = 2;
    k.start = 1'200'000'000;
    k.end = 1'250'000'000;
    c.kernels.push_back(k);
  });
  FrameOptions fo;
  fo.times = true;
  fo.launch_threads = true;
  auto r = flame_from_profile_file(path, fo);
  std::remove(path.c_str());
  ASSERT_TRUE(r.ok()) << r.error();
  std::ostringstream out;
  TraceWriter().write(r->flame, out);
  auto j = nlohmann::json::parse(out.str());
  std::vector<std::pair<std::string, double>> slices;  // (name, dur) of the launch slices, in time order
  for (const auto& e : j["traceEvents"])
    if (e["ph"] == "X" && e["cat"] == "launch") slices.emplace_back(e["name"], e["dur"].get<double>());
  ASSERT_EQ(slices.size(), 2u) << out.str();
  EXPECT_EQ(slices[0], std::make_pair(std::string("cuLaunchKernel from step (train.py:10)"), 3.0));
  EXPECT_EQ(slices[1], std::make_pair(std::string("cuLaunchKernel from step (train.py:10)"), 1.0));
}

}  // namespace
}  // namespace aiflame
