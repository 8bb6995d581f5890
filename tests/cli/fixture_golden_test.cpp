// Golden tests that replay profiles recorded on an H100 (tests/data/*.aiflame): the report path must
// keep producing exactly the committed folded output. AIFLAME_UPDATE_GOLDEN=1 rewrites the goldens.
#include <gtest/gtest.h>

#include <cstdlib>
#include <set>
#include <sstream>

#include "attribute/frame_builder.h"
#include "output/folded_writer.h"
#include "output/svg_writer.h"
#include "test_util.h"

namespace aiflame {
namespace {

std::string data_path(const std::string& name) { return std::string(AIFLAME_SOURCE_DIR) + "/tests/data/" + name; }

FlameData flame_of(const Profile& p, AttributionStats* stats = nullptr) {
  AttributionResult r = attribute_samples(p);
  if (stats) *stats = r.stats;
  Symbolizer sym(p.modules);
  FrameBuilder fb(p, sym, {});
  return fb.build(r);
}

void check_golden(const std::string& fixture) {
  auto p = read_profile(data_path(fixture + ".aiflame"));
  ASSERT_TRUE(p.ok()) << p.error();
  std::ostringstream out;
  FoldedWriter().write(flame_of(*p), out);
  std::string golden_path = data_path(fixture + ".folded");
  if (std::getenv("AIFLAME_UPDATE_GOLDEN")) test::write_file(golden_path, out.str());
  std::string golden = test::read_file(golden_path);
  ASSERT_FALSE(golden.empty()) << golden_path << " is missing";
  EXPECT_EQ(out.str(), golden);
}

TEST(FixtureGolden, DemoMatmulFolded) { check_golden("demo_matmul"); }
TEST(FixtureGolden, GptTrainFolded) { check_golden("gpt_train"); }

// What the demo must show: three towers, the naive kernel's the widest, tiling's the narrowest, each
// under its own host function; and (nearly) every sample attributed.
TEST(FixtureGolden, DemoShowsThreeTowersInTheExpectedOrder) {
  auto p = read_profile(data_path("demo_matmul.aiflame"));
  ASSERT_TRUE(p.ok()) << p.error();
  AttributionStats stats;
  FlameData d = flame_of(*p, &stats);
  EXPECT_GE(stats.percent_attributed(), 99.9);
  uint64_t basic = 0, local = 0, tiling = 0;
  for (const auto& s : d.stacks) {
    std::string joined;
    for (const auto& f : s.frames) joined += f.name + ";";
    bool host_basic = joined.find(";multiply_basic;") != std::string::npos;
    bool host_local = joined.find(";multiply_local_access;") != std::string::npos;
    bool host_tiling = joined.find(";multiply_local_access_and_tiling;") != std::string::npos;
    if (host_basic && joined.find(";matmul_basic;") != std::string::npos) basic += s.count;
    if (host_local && joined.find(";matmul_local_access;") != std::string::npos) local += s.count;
    if (host_tiling && joined.find(";matmul_local_access_and_tiling;") != std::string::npos) tiling += s.count;
  }
  EXPECT_GT(basic, local);
  EXPECT_GT(local, tiling);
  EXPECT_GT(tiling, 0u);
  EXPECT_GE(basic + local + tiling, d.total() * 999 / 1000);
}

TEST(FixtureGolden, GptTrainStacksRunFromPythonIntoKernels) {
  auto p = read_profile(data_path("gpt_train.aiflame"));
  ASSERT_TRUE(p.ok()) << p.error();
  AttributionStats stats;
  FlameData d = flame_of(*p, &stats);
  EXPECT_GE(stats.percent_attributed(), 99.9);
  uint64_t from_script = 0;
  bool saw_native_torch = false;
  for (const auto& s : d.stacks) {
    bool py = false, native_after_py = false;
    for (const auto& f : s.frames) {
      if (f.kind == FrameKind::Python && f.name.find("gpt_train.py") != std::string::npos) py = true;
      if (py && f.kind == FrameKind::Native) native_after_py = true;
    }
    if (py) from_script += s.count;
    saw_native_torch |= native_after_py;
  }
  EXPECT_TRUE(saw_native_torch);
  // The forward pass runs on the Python thread; backward kernels launch from autograd's own threads.
  EXPECT_GT(from_script, d.total() / 5);
}

TEST(FixtureGolden, DemoSvgHoldsTheKernelFrames) {
  auto p = read_profile(data_path("demo_matmul.aiflame"));
  ASSERT_TRUE(p.ok()) << p.error();
  std::ostringstream out;
  SvgWriter().write(flame_of(*p), out);
  std::string svg = out.str();
  for (const char* name : {"matmul_basic", "matmul_local_access", "matmul_local_access_and_tiling", "multiply_basic"})
    EXPECT_NE(svg.find(name), std::string::npos) << name;
}

}  // namespace
}  // namespace aiflame

namespace aiflame {
namespace {

// The time series and kernel spans the timed outputs use: they account for every sample and kernel.
TEST(FixtureGolden, TimelineAndKernelSpansAccountForEverything) {
  auto p = read_profile(data_path("demo_matmul.aiflame"));
  ASSERT_TRUE(p.ok()) << p.error();
  FlameData d = flame_of(*p);
  double timed = 0;
  for (const auto& t : d.timeline) {
    ASSERT_LT(t.stack, d.stacks.size());
    EXPECT_LE(t.time_ns, d.duration_ns);
    timed += t.weight;
  }
  EXPECT_NEAR(timed, static_cast<double>(d.total()), 1e-6 * static_cast<double>(d.total()));
  ASSERT_EQ(d.kernels.size(), p->kernels.size());
  std::set<std::string> names;
  for (const auto& k : d.kernels) {
    EXPECT_GE(k.cpu_stack, 0);
    EXPECT_LE(k.start_ns, k.end_ns);
    names.insert(k.name);
  }
  EXPECT_EQ(names, (std::set<std::string>{"matmul_basic", "matmul_local_access", "matmul_local_access_and_tiling"}));
  EXPECT_EQ(d.cpu_stacks.size(), 3u);
  EXPECT_EQ(d.process, "aiflame_demo_matmul");
}

}  // namespace
}  // namespace aiflame

#include "attribute/profile_flame.h"
#include "cli/finalize.h"

namespace aiflame {
namespace {

// Finishing a recorded profile hands back what it read, and leaves the file readable.
TEST(Finalize, ReturnsTheProfileAndKeepsTheFileReadable) {
  std::string copy = test::temp_path("finalize.aiflame");
  test::write_file(copy, test::read_file(data_path("demo_matmul.aiflame")));
  auto before = read_profile(copy);
  ASSERT_TRUE(before.ok());
  auto done = finalize_profile(copy);
  ASSERT_TRUE(done.ok()) << done.error();
  EXPECT_EQ(done->launches.size(), before->launches.size());
  // Without its batches (a long run's would not fit), which stay countable and streamable.
  EXPECT_TRUE(done->batches.empty());
  EXPECT_EQ(done->batch_records, before->batches.size());
  auto streamed = stream_attribution_stats(copy, *done);
  ASSERT_TRUE(streamed.ok()) << streamed.error();
  AttributionStats whole = attribute_samples(*before).stats;
  EXPECT_EQ(streamed->samples, whole.samples);
  EXPECT_GT(streamed->samples, 1000u);
  EXPECT_DOUBLE_EQ(streamed->attributed, whole.attributed);
  EXPECT_DOUBLE_EQ(streamed->in_window, whole.in_window);
  EXPECT_EQ(streamed->dropped, whole.dropped);
  auto after = read_profile(copy);
  ASSERT_TRUE(after.ok()) << after.error();
  EXPECT_EQ(after->launches.size(), before->launches.size());
  EXPECT_GE(after->symbols.size(), before->symbols.size());
  std::remove(copy.c_str());
}

}  // namespace
}  // namespace aiflame
