#include "flame/flame_merge.h"

#include <gtest/gtest.h>

namespace aiflame {
namespace {

FlameData one(const std::string& proc, uint64_t start, uint64_t count) {
  FlameData d;
  d.process = proc;
  d.start_ns = start;
  d.duration_ns = 100;
  d.stacks = {{{{proc, FrameKind::Process}, {"k", FrameKind::GpuKernel}}, count}};
  d.cpu_stacks = {{{proc, FrameKind::Process}}};
  d.timeline = {{0, 0, 10, static_cast<double>(count)}};
  KernelSpan k;
  k.name = "k";
  k.start_ns = 5;
  k.end_ns = 50;
  k.cpu_stack = 0;
  d.kernels = {k};
  return d;
}

TEST(FlameMerge, KeepsEveryStackAndMovesTimesOntoOneClock) {
  FlameData merged;
  merged.title = "kept";
  merge_flame(merged, one("a", 1000, 3));
  merge_flame(merged, one("b", 900, 4));  // started 100 ns earlier
  EXPECT_EQ(merged.title, "kept");
  EXPECT_EQ(merged.total(), 7u);
  ASSERT_EQ(merged.stacks.size(), 2u);
  EXPECT_EQ(merged.start_ns, 900u);
  EXPECT_EQ(merged.duration_ns, 200u);  // a ends at 1100
  ASSERT_EQ(merged.timeline.size(), 2u);
  EXPECT_EQ(merged.timeline[0].time_ns, 110u);  // a's 10 ns after its start, 100 ns after b's
  EXPECT_EQ(merged.timeline[1].time_ns, 10u);
  EXPECT_EQ(merged.timeline[1].stack, 1u);
  ASSERT_EQ(merged.kernels.size(), 2u);
  EXPECT_EQ(merged.kernels[0].start_ns, 105u);
  EXPECT_EQ(merged.kernels[1].cpu_stack, 1);
  EXPECT_EQ(merged.cpu_stacks.size(), 2u);
  EXPECT_EQ(merged.process, "a,b");
}

FlameData with_process(const std::string& proc, uint64_t start, uint64_t count, uint32_t pid) {
  FlameData d = one(proc, start, count);
  d.stacks[0].process = 0;
  d.kernels[0].process = 0;
  ProcessRow r;
  r.pid = pid;
  d.processes = {r};
  return d;
}

TEST(FlameMerge, KeepsEveryProcessRowWithItsStacksAndKernelsPointingAtIt) {
  FlameData merged;
  // A launcher's profile first: a process row, nothing on the timeline.
  FlameData launcher;
  ProcessRow agent;
  agent.pid = 1;
  launcher.processes = {agent};
  merge_flame(merged, std::move(launcher));
  merge_flame(merged, with_process("a", 1000, 3, 2));
  FlameData folded = one("f", 1000, 1);  // stacks of no recorded process
  merge_flame(merged, std::move(folded));
  merge_flame(merged, with_process("b", 900, 4, 3));
  ASSERT_EQ(merged.processes.size(), 3u);
  EXPECT_EQ(merged.processes[0].pid, 1u);
  EXPECT_EQ(merged.processes[1].pid, 2u);
  EXPECT_EQ(merged.processes[2].pid, 3u);
  ASSERT_EQ(merged.stacks.size(), 3u);
  EXPECT_EQ(merged.stacks[0].process, 1u);
  EXPECT_EQ(merged.stacks[1].process, kNoProcess);
  EXPECT_EQ(merged.stacks[2].process, 2u);
  ASSERT_EQ(merged.kernels.size(), 3u);
  EXPECT_EQ(merged.kernels[0].process, 1u);
  EXPECT_EQ(merged.kernels[1].process, kNoProcess);
  EXPECT_EQ(merged.kernels[2].process, 2u);
}

// Ranks of one job ran the same code: merged without a time series, equal stacks are summed into
// one (memory stays at the merged picture's size), different ones kept, and nothing is lost.
TEST(FlameMerge, SummedMergeAddsEqualStacksAndKeepsTheRest) {
  auto rank = [](uint64_t a, uint64_t b, const std::string& extra) {
    FlameData d;
    d.process = "python3";
    d.processes.resize(1);
    d.stacks = {{{{"main", FrameKind::Python}, {"gemm", FrameKind::GpuKernel}}, a, 0},
                {{{"main", FrameKind::Python}, {"nccl", FrameKind::GpuKernel}}, b, 0}};
    if (!extra.empty()) d.stacks.push_back({{{"main", FrameKind::Python}, {extra, FrameKind::GpuKernel}}, 1, 0});
    return d;
  };
  FlameData merged;
  StackIndex index;
  uint64_t total = 0;
  for (int r = 0; r < 64; r++) {
    FlameData d = rank(10 + r, 5, r == 7 ? "straggler" : "");
    total += d.total();
    merge_flame_summed(merged, std::move(d), index);
  }
  EXPECT_EQ(merged.total(), total);
  ASSERT_EQ(merged.stacks.size(), 3u);  // gemm, nccl, and rank 7's own stack
  EXPECT_EQ(merged.stacks[0].count, 64u * 10 + 64 * 63 / 2);
  EXPECT_EQ(merged.stacks[1].count, 64u * 5);
  EXPECT_EQ(merged.stacks[0].process, kNoProcess);  // summed over processes
  EXPECT_EQ(merged.stacks[2].process, 7u);          // rank 7's alone
  EXPECT_EQ(merged.processes.size(), 64u);
  // A frame of another kind is another stack, even with the same name.
  FlameData odd = rank(1, 1, "");
  odd.stacks[0].frames.mutable_at(1).kind = FrameKind::Native;
  merge_flame_summed(merged, std::move(odd), index);
  EXPECT_EQ(merged.stacks.size(), 4u);
}

}  // namespace
}  // namespace aiflame
