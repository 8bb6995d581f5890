#include "input/folded_reader.h"

#include <gtest/gtest.h>

#include <sstream>

#include "output/folded_writer.h"

namespace aiflame {
namespace {

using K = FrameKind;

std::vector<Frame> frames_of(const std::string& line) {
  auto d = parse_folded(line + " 1\n");
  EXPECT_TRUE(d.ok()) << d.error();
  return d.ok() ? d->stacks.at(0).frames.to_vector() : std::vector<Frame>{};
}

TEST(FoldedReader, AiflameAnnotatedStack) {
  auto f = frames_of("python3;441;py::main (t.py:3);at::mm;cudaLaunchKernel;-;gemm_[G];0x10_[g];long_scoreboard_[g]");
  std::vector<Frame> want{{"python3", K::Process}, {"441", K::Process},   {"main (t.py:3)", K::Python},
                          {"at::mm", K::Native},   {"cudaLaunchKernel", K::Runtime}, {"-", K::Separator},
                          {"gemm", K::GpuKernel},  {"0x10", K::GpuInstruction},    {"long_scoreboard", K::Stall}};
  EXPECT_EQ(f, want);
}

TEST(FoldedReader, IaprofLayoutWithSourceInlinedAndKernelFrames) {
  auto f = frames_of("app;7;main;ioctl_[k];-;mm.cpp_[G];mm_kernel_[G];inl.h:3_[G];mad (16|M0)_[g];sbid_[g];0x1f0_[g]");
  std::vector<Frame> want{{"app", K::Process},          {"7", K::Process},          {"main", K::Native},
                          {"ioctl_[k]", K::Runtime},    {"-", K::Separator},        {"mm.cpp", K::GpuSource},
                          {"mm_kernel", K::GpuKernel},  {"inl.h:3", K::GpuSource},  {"mad (16|M0)", K::GpuInstruction},
                          {"sbid", K::Stall},           {"0x1f0", K::GpuInstruction}};
  EXPECT_EQ(f, want);
}

TEST(FoldedReader, PlainStacksByPlace) {
  auto f = frames_of("python3;main (t.py:3);-;gemm;0x10;selected");
  std::vector<Frame> want{{"python3", K::Process}, {"main (t.py:3)", K::Python}, {"-", K::Separator},
                          {"gemm", K::GpuKernel},  {"0x10", K::GpuInstruction},  {"selected", K::Stall}};
  EXPECT_EQ(f, want);
  // An ordinary CPU profile: its root is a frame (pprof keeps it), not a program to make a label of;
  // with a pid second it is aiflame's and iaprof's program;pid.
  auto cpu = frames_of("bash;main;read");
  EXPECT_EQ(cpu[0].kind, K::Native);
  EXPECT_EQ(cpu[2].kind, K::Native);
  EXPECT_EQ(frames_of("main;foo")[0].kind, K::Native);
  auto with_pid = frames_of("bash;412;main");
  EXPECT_EQ(with_pid[0].kind, K::Process);
  EXPECT_EQ(with_pid[1].kind, K::Process);
  EXPECT_EQ(with_pid[2].kind, K::Native);
}

TEST(FoldedReader, MergesLinesSkipsCommentsAndKeepsTotals) {
  auto d = parse_folded("# comment\n\na;b 3\r\na;b 4\nx\t5\n");
  ASSERT_TRUE(d.ok()) << d.error();
  ASSERT_EQ(d->stacks.size(), 2u);
  EXPECT_EQ(d->stacks[0].count, 7u);
  EXPECT_EQ(d->total(), 12u);
  EXPECT_EQ(d->process, "");  // "a;b" names no program: a is a frame
}

TEST(FoldedReader, HostileInputIsOneErrorLine) {
  for (const char* bad : {"a;b\n", "a;b x\n", "a;b -3\n", "a;b 1.5\n", "a 18446744073709551615\nb 1\n",
                          "a 99999999999999999999999\n", "", "# only\n", " 3\n"}) {
    auto d = parse_folded(bad);
    ASSERT_FALSE(d.ok()) << bad;
    EXPECT_EQ(d.error().find('\n'), std::string::npos);
  }
  auto d = parse_folded("a;;b 1\n");  // an empty frame is kept, visibly
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->stacks[0].frames[1].name, "[empty]");
}

// aiflame's frames -> folded -> reader: the same names, kinds (native and runtime aside: the
// folded format does not carry them) and counts, annotated or plain.
TEST(FoldedReader, RoundTripKeepsFramesAndTotals) {
  FlameData d;
  d.stacks = {{{{"python3", K::Process}, {"12", K::Process}, {"step (t.py:9)", K::Python}, {"at::mm", K::Native},
                {"-", K::Separator}, {"gemm", K::GpuKernel}, {"0x1a0", K::GpuInstruction}, {"wait", K::Stall}}, 5},
              {{{"python3", K::Process}, {"12", K::Process}, {"[unattributed]", K::Unattributed}, {"-", K::Separator},
                {"relu", K::GpuKernel}, {"0x20", K::GpuInstruction}, {"selected", K::Stall}}, 2}};
  for (bool plain : {false, true}) {
    std::ostringstream out;
    FoldedWriter(FoldedOptions{plain}).write(d, out);
    auto back = parse_folded(out.str());
    ASSERT_TRUE(back.ok()) << back.error();
    ASSERT_EQ(back->total(), d.total());
    ASSERT_EQ(back->stacks.size(), 2u);
    // The writer sorts lines: "[unattributed]" before "py::step"/"step".
    EXPECT_EQ(back->stacks[0].frames, d.stacks[1].frames);
    EXPECT_EQ(back->stacks[1].frames, d.stacks[0].frames);
    EXPECT_EQ(back->pid, 12u);
  }
}


// Issue #68 item 7: report's --no-python, --no-native and --max-depth shape folded input as they
// shape a profile's stacks (a 3M-frame folded stack made a 687 MB SVG whatever --max-depth said).
std::vector<Frame> trimmed(const std::string& line, TextFrameOptions opt) {
  FoldedParser parser(opt);
  EXPECT_TRUE(parser.add_line(line + " 1", 1)) << parser.error();
  auto d = parser.finish();
  EXPECT_TRUE(d.ok()) << d.error();
  return d.ok() ? d->stacks.at(0).frames.to_vector() : std::vector<Frame>{};
}

TEST(FoldedReader, FrameOptionsApplyToTheCpuFramesOnly) {
  const std::string line = "python3;441;py::main (t.py:3);at::mm;cudaLaunchKernel;-;gemm_[G];0x10_[g];long_scoreboard_[g]";
  std::vector<Frame> gpu{{"-", K::Separator}, {"gemm", K::GpuKernel}, {"0x10", K::GpuInstruction}, {"long_scoreboard", K::Stall}};
  auto with = [&](std::vector<Frame> cpu) {
    std::vector<Frame> all{{"python3", K::Process}, {"441", K::Process}};
    all.insert(all.end(), cpu.begin(), cpu.end());
    all.insert(all.end(), gpu.begin(), gpu.end());
    return all;
  };
  EXPECT_EQ(trimmed(line, {.python = false}), with({{"at::mm", K::Native}, {"cudaLaunchKernel", K::Runtime}}));
  EXPECT_EQ(trimmed(line, {.native = false}), with({{"main (t.py:3)", K::Python}}));
  EXPECT_EQ(trimmed(line, {.max_depth = 2}), with({{"main (t.py:3)", K::Python}, {"at::mm", K::Native}}));
  EXPECT_EQ(trimmed(line, {.python = false, .max_depth = 1}), with({{"at::mm", K::Native}}));
  EXPECT_EQ(trimmed(line, {}), frames_of(line));
}

TEST(FoldedReader, MaxDepthBoundsADeepPlainStack) {
  std::string line;
  for (int i = 0; i < 100000; i++) line += (i ? ";f" : "f") + std::to_string(i);
  auto f = trimmed(line, {.max_depth = 10});
  ASSERT_EQ(f.size(), 10u);
  EXPECT_EQ(f.front().name, "f0");
  EXPECT_EQ(f.back().name, "f9");
}

}  // namespace
}  // namespace aiflame
