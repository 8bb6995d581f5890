// The heatmap's binning, the HTML report's data block and escaping, and the report filters.
#include <gtest/gtest.h>

#include <sstream>

#include "flame/flame_filter.h"
#include "output/heatmap_writer.h"
#include "output/html_writer.h"
#include "test_util.h"

namespace aiflame {
namespace {

FlameData sample_data() {
  FlameData d;
  d.stacks = {{{{"p", FrameKind::Process}, {"main", FrameKind::Native}, {"-", FrameKind::Separator},
                {"gemm", FrameKind::GpuKernel}, {"0x10", FrameKind::GpuInstruction}, {"long_scoreboard", FrameKind::Stall}}, 6},
              {{{"p", FrameKind::Process}, {"main", FrameKind::Native}, {"-", FrameKind::Separator},
                {"nccl_allreduce", FrameKind::GpuKernel}, {"0x20", FrameKind::GpuInstruction}, {"selected", FrameKind::Stall}}, 4}};
  // stack 0: 2 samples on GPU 0 at 0.5 ms, 4 on GPU 1 at 1.215 s; stack 1: 4 on GPU 0 at 1.215 s.
  d.timeline = {{0, 0, 500000, 2}, {0, 1, 1215000000, 4}, {1, 0, 1215000000, 4}};
  d.kernels = {{"gemm", 0, 0, 0, 1000, -1, 1}, {"nccl_allreduce", 0, 0, 2000, 5000, -1, 2}};
  d.duration_ns = 1300000000;
  d.summary.interval_ms = 10;
  return d;
}

TEST(Heatmap, BinsBySecondAndIntervalWithALanePerDevice) {
  Heatmap h = bin_heatmap(sample_data(), 10);
  EXPECT_EQ(h.columns, 2u);
  EXPECT_EQ(h.rows, 100u);
  ASSERT_EQ(h.lanes.size(), 2u);
  EXPECT_EQ(h.lanes[0].device, 0u);
  EXPECT_DOUBLE_EQ(h.lanes[0].counts[0][0], 2);
  EXPECT_DOUBLE_EQ(h.lanes[0].counts[1][21], 4);  // 1.215 s: second 1, row 215 ms / 10 ms
  EXPECT_DOUBLE_EQ(h.lanes[1].counts[1][21], 4);
  EXPECT_DOUBLE_EQ(h.lanes[0].max, 4);
}

TEST(Heatmap, SvgHasLanesAxesAndLegend) {
  std::ostringstream out;
  HeatmapWriter().write(sample_data(), out);
  std::string s = out.str();
  EXPECT_NE(s.find("GPU 0"), std::string::npos);
  EXPECT_NE(s.find("GPU 1"), std::string::npos);
  EXPECT_NE(s.find("1 s + 210 ms: 4 samples"), std::string::npos);
  EXPECT_NE(s.find("samples per cell"), std::string::npos);
  EXPECT_NE(s.find("500 ms"), std::string::npos);
}

TEST(HtmlReport, PackedNumbersRoundTrip) {
  std::vector<uint32_t> v = {0, 1, 31, 32, 1023, 1024, 50000, 2147483647u};
  EXPECT_EQ(test::unpack_numbers(pack_numbers(v)), v);
}

// Rebuilding every stack from the sorted, prefix-shared encoding gives back the stacks.
TEST(HtmlReport, PrefixEncodedStacksRebuildExactly) {
  FlameData d = sample_data();
  d.stacks.push_back({{{"p", FrameKind::Process}, {"aux", FrameKind::Python}, {"-", FrameKind::Separator},
                       {"gemm", FrameKind::GpuKernel}}, 1});
  auto j = html_report_data(d);
  auto order = test::unpack_numbers(j["stack_order"]), pre = test::unpack_numbers(j["stack_pre"]);
  auto len = test::unpack_numbers(j["stack_len"]), frames = test::unpack_numbers(j["stack_frames"]);
  ASSERT_EQ(order.size(), d.stacks.size());
  std::vector<uint32_t> path;
  size_t p = 0;
  for (size_t i = 0; i < order.size(); i++) {
    path.resize(pre[i]);
    for (uint32_t k = 0; k < len[i]; k++) path.push_back(frames[p++]);
    const auto& want = d.stacks[order[i]].frames;
    ASSERT_EQ(path.size(), want.size());
    for (size_t k = 0; k < path.size(); k++) {
      uint32_t f = path[k];
      EXPECT_EQ(j["names"][j["frames"][2 * f].get<uint32_t>()], want[k].name.str());
      EXPECT_EQ(j["frames"][2 * f + 1].get<int>(), static_cast<int>(want[k].kind));
    }
    EXPECT_EQ(j["stack_count"][order[i]].get<uint64_t>(), d.stacks[order[i]].count);
  }
  EXPECT_EQ(j["kernel_table"]["nccl_allreduce"][3].get<int>(), 1);  // (process, device, ms, launches)
}

// The share of each stack's samples that the attribution's model split between launch stacks goes to
// the page (which marks those frames "~"), and nothing when none was.
TEST(HtmlReport, StacksCarryTheShareTheModelEstimated) {
  FlameData d = sample_data();
  EXPECT_FALSE(html_report_data(d).contains("stack_estimated"));
  d.stacks[0].count = 8;
  d.stacks[0].estimated = 2;
  auto j = html_report_data(d);
  ASSERT_TRUE(j.contains("stack_estimated"));
  EXPECT_DOUBLE_EQ(j["stack_estimated"][0].get<double>(), 0.25);
  EXPECT_DOUBLE_EQ(j["stack_estimated"][1].get<double>(), 0.0);
}

TEST(HtmlReport, HostileNamesCannotLeaveTheirElements) {
  FlameData d = sample_data();
  d.title = "<script>alert(1)</script> & \"co\"";
  d.stacks[0].frames.mutable_at(1).name = "</script><script>alert(2)</script>";
  d.stacks[1].frames.mutable_at(1).name = std::string("bad\xff\xfe utf8\n'quote'");
  std::ostringstream out;
  HtmlWriter().write(d, out);
  std::string s = out.str();
  EXPECT_NE(s.find("<title>&lt;script&gt;alert(1)&lt;/script&gt; &amp; &quot;co&quot;</title>"), std::string::npos);
  // Exactly the report's own two script elements, whatever the names hold.
  size_t count = 0;
  for (size_t at = s.find("<script"); at != std::string::npos; at = s.find("<script", at + 1)) count++;
  EXPECT_EQ(count, 2u);
  EXPECT_EQ(s.find("alert(2)</script>"), std::string::npos);
  EXPECT_NE(s.find("\\u003c/script>\\u003cscript>alert(2)"), std::string::npos);
}

TEST(FlameFilter, KernelsStallsDevicesAndRoots) {
  auto keep = [](const FlameData& d) {
    std::vector<uint64_t> c;
    for (const auto& s : d.stacks) c.push_back(s.count);
    return c;
  };
  auto f = make_flame_filter("gemm", "", "", "", "");
  ASSERT_TRUE(f.ok());
  FlameData d = sample_data();
  apply_filter(*f, d);
  EXPECT_EQ(keep(d), (std::vector<uint64_t>{6, 0}));
  EXPECT_EQ(d.timeline.size(), 2u);
  EXPECT_EQ(d.kernels.size(), 1u);

  d = sample_data();
  apply_filter(*make_flame_filter("", "nccl", "", "", ""), d);
  EXPECT_EQ(keep(d), (std::vector<uint64_t>{6, 0}));
  d = sample_data();
  apply_filter(*make_flame_filter("", "", "selected", "", ""), d);
  EXPECT_EQ(keep(d), (std::vector<uint64_t>{0, 4}));
  d = sample_data();
  apply_filter(*make_flame_filter("", "", "", "1", ""), d);  // GPU 1: stack 0's 4 samples there
  EXPECT_EQ(keep(d), (std::vector<uint64_t>{4, 0}));
  d = sample_data();
  apply_filter(*make_flame_filter("", "", "", "", "q"), d);
  EXPECT_EQ(keep(d), (std::vector<uint64_t>{0, 0}));

  EXPECT_FALSE(make_flame_filter("(", "", "", "", "").ok());
  EXPECT_FALSE(make_flame_filter("", "", "", "x1", "").ok());
}

}  // namespace
}  // namespace aiflame
