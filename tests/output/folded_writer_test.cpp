#include "output/folded_writer.h"

#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <random>
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
  FoldedWriter(FoldedOptions{.plain = true}).write(d, out);
  EXPECT_EQ(out.str(),
            "python3;[unattributed];-;relu;0x20;long_scoreboard 2\n"
            "python3;main (t.py:3);-;gemm;0x10;selected 9\n");
  // The default: iaprof's annotations (GPU code _[G], instruction and stall _[g], Python py::).
  std::ostringstream annotated;
  FoldedWriter().write(d, annotated);
  EXPECT_EQ(annotated.str(),
            "python3;[unattributed];-;relu_[G];0x20_[g];long_scoreboard_[g] 2\n"
            "python3;py::main (t.py:3);-;gemm_[G];0x10_[g];selected_[g] 9\n");
}

TEST(FoldedWriter, LineOrderEqualsTheSortedTextOfTheLines) {
  // Property: the writer orders and merges lines without building them; the result must equal
  // joining every stack's frames into text and summing in a map sorted by that text (what it did
  // before). Names are drawn from a small alphabet of prefixes, separators that fold (';' to ':'),
  // bytes above 0x7f and characters on both sides of ';' (0x3b) so that a prefix and ';' compete.
  const std::vector<std::string> names = {"a", "a!", "a;", "a:", "a<", "ab", "", "\xff", "a\xff", "b", "a;b"};
  const std::vector<FrameKind> kinds = {FrameKind::Native, FrameKind::Python, FrameKind::GpuKernel};
  std::mt19937 rng(7);
  for (int round = 0; round < 200; round++) {
    FlameData d;
    int n = 1 + static_cast<int>(rng() % 40);
    for (int i = 0; i < n; i++) {
      WeightedStack st;
      int depth = static_cast<int>(rng() % 5);  // zero frames too
      for (int k = 0; k < depth; k++)
        st.frames.push_back({names[rng() % names.size()], kinds[rng() % kinds.size()]});
      st.count = rng() % 4;
      d.stacks.push_back(std::move(st));
    }
    for (bool plain : {true, false}) {
      std::map<std::string, uint64_t> want;
      for (const auto& st : d.stacks)
        if (st.count) want[folded_stack(st.frames, plain)] += st.count;
      std::string expected;
      for (const auto& [line, count] : want) expected += line + " " + std::to_string(count) + "\n";
      std::ostringstream out;
      FoldedWriter(FoldedOptions{.plain = plain}).write(d, out);
      ASSERT_EQ(out.str(), expected) << "round " << round << (plain ? " plain" : " annotated");
    }
  }
}

TEST(FoldedWriter, LinesOfSharedRunsSortAsTheirText) {
  // The same property for lists made of shared runs (as a report builds them: a head run shared by
  // the lines of one launch stack and kernel, a tail run by those of one instruction), with and without
  // a tail, so that equal heads followed by different tails, by no tail, or by equal tails all occur.
  const std::vector<std::string> names = {"a", "a!", "a;", "a:", "ab", "", "b", "a;b", "a b"};
  std::mt19937 rng(11);
  auto random_run = [&](size_t max_depth) {
    std::vector<Frame> f;
    size_t depth = 1 + rng() % max_depth;
    for (size_t k = 0; k < depth; k++)
      f.push_back({names[rng() % names.size()], k % 2 ? FrameKind::Python : FrameKind::GpuInstruction});
    return std::make_shared<const std::vector<Frame>>(std::move(f));
  };
  for (int round = 0; round < 200; round++) {
    std::vector<FrameList::Run> heads, tails;
    for (int i = 0; i < 4; i++) heads.push_back(random_run(4));
    for (int i = 0; i < 4; i++) tails.push_back(random_run(3));
    tails.push_back(nullptr);
    FlameData d;
    int n = 1 + static_cast<int>(rng() % 30);
    for (int i = 0; i < n; i++)
      d.stacks.push_back({FrameList(heads[rng() % heads.size()], tails[rng() % tails.size()]), 1 + rng() % 3, 0});
    for (bool plain : {true, false}) {
      std::map<std::string, uint64_t> want;
      for (const auto& st : d.stacks) want[folded_stack(st.frames, plain)] += st.count;
      std::string expected;
      for (const auto& [line, count] : want) expected += line + " " + std::to_string(count) + "\n";
      std::ostringstream out;
      FoldedWriter(FoldedOptions{.plain = plain}).write(d, out);
      ASSERT_EQ(out.str(), expected) << "round " << round << (plain ? " plain" : " annotated");
    }
  }
}

TEST(FoldedWriter, AnnotationsFollowTheFrameKind) {
  EXPECT_EQ(annotated_frame_name({"a.cu:12", FrameKind::GpuSource}), "a.cu:12_[G]");
  EXPECT_EQ(annotated_frame_name({"k", FrameKind::GpuKernel}), "k_[G]");
  EXPECT_EQ(annotated_frame_name({"mad", FrameKind::GpuInstruction}), "mad_[g]");
  EXPECT_EQ(annotated_frame_name({"sbid", FrameKind::Stall}), "sbid_[g]");
  EXPECT_EQ(annotated_frame_name({"f (x.py:1)", FrameKind::Python}), "py::f (x.py:1)");
  EXPECT_EQ(annotated_frame_name({"main", FrameKind::Native}), "main");
  EXPECT_EQ(annotated_frame_name({"cudaLaunchKernel", FrameKind::Runtime}), "cudaLaunchKernel");
  EXPECT_EQ(annotated_frame_name({"-", FrameKind::Separator}), "-");
  EXPECT_EQ(annotated_frame_name({"441", FrameKind::Process}), "441");
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
  EXPECT_EQ(format_from_path("p.pb.gz"), "pprof");
  EXPECT_EQ(format_from_path("p.speedscope.json"), "speedscope");
  EXPECT_EQ(format_from_path("p.trace.json"), "trace");
  EXPECT_EQ(format_from_path("p.stacks"), "flamescope");
  EXPECT_EQ(format_from_path("p.json"), "");
  for (const auto& f : writer_formats()) {
    ASSERT_NE(make_writer(f), nullptr) << f;
    EXPECT_EQ(make_writer(f)->format(), f);
  }
  ASSERT_NE(make_writer("svg"), nullptr);
  EXPECT_EQ(make_writer("svg")->format(), "svg");
  EXPECT_EQ(make_writer("nope"), nullptr);
}

}  // namespace
}  // namespace aiflame
