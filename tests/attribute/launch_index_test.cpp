// Graph replays: a kernel run by a graph is charged to the replay's stack with the stack that
// captured its node beneath a "[cuda graph]" frame.
#include "attribute/launch_index.h"

#include <gtest/gtest.h>

#include "attribute/attribution.h"
#include "attribute/frame_builder.h"

namespace aiflame {
namespace {

// Stack 1: main -> capture_step (the launch seen during stream capture, correlation 10).
// Stack 2: main -> replay_loop (the cuGraphLaunch, correlation 20).
// Node 100 was created by the capture; instantiation cloned it as node 200, which ran the kernel.
Profile graph_profile() {
  Profile p;
  ProcessRecord pr;
  pr.command = "./bench graph";
  pr.interval_ms = 10;
  p.process = pr;
  p.modules = {{1, "/nonexistent/bench", 0, 0x400000, 0x800000, ""}};
  p.strings = {{1, "_Z5shiftPfif"}};
  p.stacks[1] = {1, {0x400110, 0x400010}, {}};
  p.stacks[2] = {2, {0x400210, 0x400010}, {}};
  p.symbols[0x400010] = {0x400010, 1, "main", 0};
  p.symbols[0x400110] = {0x400110, 1, "capture_step", 0};
  p.symbols[0x400210] = {0x400210, 1, "replay_loop", 0};
  p.launches = {LaunchRecord{10, 1, 100, 1, 0, true}, LaunchRecord{20, 1, 200, 2, 0, true}};
  p.graph_nodes[100] = {100, 1, 1, 0};
  p.graph_nodes[200] = {200, 2, 0, 100};
  KernelRecord k;
  k.correlation_id = 20;
  k.start = 1000;
  k.end = 2000;
  k.name = 1;
  k.graph_id = 2;
  k.graph_node_id = 200;
  p.kernels = {k};
  PcBatchRecord b;
  b.timestamp = 3000;
  b.prev_timestamp = 500;
  b.samples = {{1, 0, 0x40, 0, 8, 0}};
  p.batches = {b};
  return p;
}

template <class Frames>
std::vector<std::string> names(const Frames& f) {
  std::vector<std::string> n;
  for (const auto& x : f) n.push_back(x.name);
  return n;
}

TEST(LaunchIndex, GraphKernelGetsReplayAndCaptureStacks) {
  Profile p = graph_profile();
  LaunchIndex idx(p);
  uint32_t id = idx.stack_of(p.kernels[0]);
  ASSERT_TRUE(LaunchIndex::composite(id));
  EXPECT_EQ(idx.parts(id), std::make_pair(2u, 1u));
}

TEST(LaunchIndex, DirectLaunchKeepsItsStack) {
  Profile p = graph_profile();
  p.kernels[0].graph_node_id = 0;
  LaunchIndex idx(p);
  EXPECT_EQ(idx.stack_of(p.kernels[0]), 2u);
}

TEST(LaunchIndex, UnknownNodeFallsBackToTheReplayStack) {
  Profile p = graph_profile();
  p.graph_nodes.clear();
  LaunchIndex idx(p);
  EXPECT_EQ(idx.stack_of(p.kernels[0]), 2u);
}

TEST(LaunchIndex, CloneCyclesEnd) {
  Profile p = graph_profile();
  p.graph_nodes[100] = {100, 1, 0, 200};  // 100 <-> 200, no stack anywhere
  LaunchIndex idx(p);
  EXPECT_EQ(idx.stack_of(p.kernels[0]), 2u);
}

TEST(LaunchIndex, FramesReadReplayThenGraphThenCapture) {
  Profile p = graph_profile();
  AttributionResult res = attribute_samples(p);
  ASSERT_EQ(res.samples.size(), 1u);
  EXPECT_DOUBLE_EQ(res.stats.attributed, 8.0);
  Symbolizer sym(p.modules);
  FrameBuilder fb(p, sym, {});
  FlameData d = fb.build(res);
  ASSERT_EQ(d.stacks.size(), 1u);
  auto n = names(d.stacks[0].frames);
  // main is shared by both stacks: shown once, above the graph frame.
  std::vector<std::string> want{"bench", "0", "main", "replay_loop", "[cuda graph]", "capture_step", "-"};
  ASSERT_GE(n.size(), want.size());
  EXPECT_EQ(std::vector<std::string>(n.begin(), n.begin() + want.size()), want);
  ASSERT_EQ(d.kernels.size(), 1u);
  ASSERT_GE(d.kernels[0].cpu_stack, 0);
  EXPECT_EQ(names(d.cpu_stacks[d.kernels[0].cpu_stack]).back(), "capture_step");
}

}  // namespace
}  // namespace aiflame
