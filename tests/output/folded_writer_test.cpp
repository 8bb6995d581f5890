#include "output/folded_writer.h"

#include <gtest/gtest.h>

#include <sstream>

namespace aiflame {
namespace {

TEST(FoldedWriter, GoldenOutputMergedAndSorted) {
  FlameData d;
  d.stacks = {
      {{{"python3", FrameKind::Process}, {"main (t.py:3)", FrameKind::Python}, {"-", FrameKind::Separator},
        {"gemm", FrameKind::GpuKernel}, {"0x10", FrameKind::GpuInstruction}, {"selected", FrameKind::Stall}}, 5},
      {{{"python3", FrameKind::Process}, {"[unattributed]", FrameKind::Unattributed}, {"-", FrameKind::Separator},
        {"relu", FrameKind::GpuKernel}, {"0x20", FrameKind::GpuInstruction}, {"long_scoreboard", FrameKind::Stall}}, 2},
      {{{"python3", FrameKind::Process}, {"main (t.py:3)", FrameKind::Python}, {"-", FrameKind::Separator},
        {"gemm", FrameKind::GpuKernel}, {"0x10", FrameKind::GpuInstruction}, {"selected", FrameKind::Stall}}, 4},
      {{{"python3", FrameKind::Process}}, 0},  // zero counts are not written
  };
  std::ostringstream out;
  FoldedWriter().write(d, out);
  EXPECT_EQ(out.str(),
            "python3;[unattributed];-;relu;0x20;long_scoreboard 2\n"
            "python3;main (t.py:3);-;gemm;0x10;selected 9\n");
}

TEST(FoldedWriter, SemicolonsAndNewlinesNeverSplitFrames) {
  FlameData d;
  d.stacks = {{{{"a;b", FrameKind::Native}, {"line\nbreak", FrameKind::Native}, {std::string("nul\0x", 5), FrameKind::Native},
                {"", FrameKind::Native}}, 1}};
  std::ostringstream out;
  FoldedWriter().write(d, out);
  EXPECT_EQ(out.str(), "a:b;line break;nul x;[empty] 1\n");
}

TEST(WriterFactory, FormatsAndExtensions) {
  EXPECT_EQ(format_from_path("x/y.svg"), "svg");
  EXPECT_EQ(format_from_path("y.folded"), "folded");
  EXPECT_EQ(format_from_path("y.pdf"), "");
  ASSERT_NE(make_writer("svg"), nullptr);
  EXPECT_EQ(make_writer("svg")->format(), "svg");
  EXPECT_EQ(make_writer("nope"), nullptr);
}

}  // namespace
}  // namespace aiflame
