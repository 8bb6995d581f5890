// Backward kernels composed under the Python that caused them (issue 23): a small profile written with
// ProfileWriter, as the recorder writes it for a PyTorch training step, reported to folded stacks.
#include <gtest/gtest.h>

#include <sstream>

#include "attribute/profile_flame.h"
#include "output/folded_writer.h"
#include "profile/chunk_format.h"
#include "profile/profile_writer.h"
#include "test_util.h"

namespace aiflame {
namespace {

constexpr uint32_t kStall = 3;
constexpr uint32_t kBackward = kBackwardStackBit | 1;        // engine launch, caller and forward known
constexpr uint32_t kNoCaller = kBackwardStackBit | 2;        // caller not found
constexpr uint32_t kNoForward = kBackwardStackBit | 3;       // AccumulateGrad: no forward stack
constexpr uint32_t kNoLink = kBackwardStackBit | 4;          // names a missing stack

// Strings: 1-2 kernels, 3.. files and functions.
enum : uint32_t {
  kGemm = 1, kFill, kTrain, kGraph, kAutogradInit, kTensor, kModule, kMain, kStep, kForward, kBackwardFn,
  kEngineRun, kLinearFile, kLinearForward
};

// One training step of train.py: a forward gemm launched from Block.forward (train.py:11) under
// step (train.py:15), and its backward gemm launched by the engine thread (no Python frames) while
// step (train.py:19) sat in loss.backward().
std::string write_step_profile(uint32_t backward_stack) {
  std::string path = test::temp_path("backward.aiflame");
  ProfileWriter w;
  std::string error;
  EXPECT_TRUE(w.open(path, true, &error)) << error;
  ProcessRecord pr;
  pr.pid = 7;
  pr.command = "python train.py";
  pr.start_timestamp = 100'000'000;
  pr.interval_ms = 10;
  pr.pc_mode = 1;  // samples carry their launch's correlation id: exact, hand-checkable counts
  w.add(pr);
  for (auto [id, text] : std::vector<std::pair<uint32_t, std::string>>{
           {kGemm, "_Z4gemmv"}, {kFill, "_Z4fillv"}, {kTrain, "/w/train.py"}, {kGraph, "/t/torch/autograd/graph.py"},
           {kAutogradInit, "/t/torch/autograd/__init__.py"}, {kTensor, "/t/torch/_tensor.py"}, {kModule, "<module>"},
           {kMain, "main"}, {kStep, "step"}, {kForward, "Block.forward"}, {kBackwardFn, "backward"},
           {kEngineRun, "_engine_run_backward"}, {kLinearFile, "/t/torch/nn/modules/linear.py"},
           {kLinearForward, "Linear.forward"}})
    w.add(StringRecord{id, text});
  w.add(StallReasonsRecord{0, {{kStall, "smsp__pcsamp_warps_issue_stalled_long_scoreboard"}}});
  // Forward launch: leaf first Linear.forward <- Block.forward <- step:15 <- main <- <module>.
  w.add(StackRecord{1, {}, {{kLinearFile, kLinearForward, 125}, {kTrain, kForward, 11}, {kTrain, kStep, 15},
                            {kTrain, kMain, 25}, {kTrain, kModule, 30}}});
  // The engine thread's launch: no Python (its native frames are left out here).
  w.add(StackRecord{2, {}, {}});
  // The caller, leaf first: torch's entry into the engine <- backward() <- Tensor.backward <- step:19 ...
  w.add(BackwardCallerRecord{1, {{kGraph, kEngineRun, 829}, {kAutogradInit, kBackwardFn, 353},
                                 {kTensor, kBackwardFn, 648}, {kTrain, kStep, 19}, {kTrain, kMain, 25},
                                 {kTrain, kModule, 30}}});
  w.add(BackwardStackRecord{kBackward, 2, 1, 1});
  w.add(BackwardStackRecord{kNoCaller, 2, 0, 1});
  w.add(BackwardStackRecord{kNoForward, 2, 1, 0});
  w.add(BackwardStackRecord{kNoLink, 2, 9, 9});
  uint64_t t = 110'000'000;
  auto launch = [&](uint32_t corr, uint32_t stack, uint32_t name) {
    w.add(LaunchRecord{corr, 1, t, stack, 307, true, 0});
    KernelRecord k;
    k.correlation_id = corr;
    k.start = t;
    k.end = t + 1'000'000;
    k.name = name;
    w.add(k);
    t += 2'000'000;
  };
  launch(1, 1, kGemm);            // forward
  launch(2, backward_stack, kGemm);  // backward
  launch(3, kNoCaller, kFill);
  launch(4, kNoForward, kFill);
  launch(5, kNoLink, kFill);
  PcBatchRecord b;
  b.prev_timestamp = 105'000'000;
  b.timestamp = 200'000'000;
  b.samples = {{kGemm, 0, 0x10, kStall, 40, 1}, {kGemm, 0, 0x10, kStall, 60, 2}, {kFill, 0, 0x20, kStall, 3, 3},
               {kFill, 0, 0x20, kStall, 4, 4}, {kFill, 0, 0x20, kStall, 5, 5}};
  w.add(b);
  w.add(AutogradSummaryRecord{"on", "2.11.0", 4, 3, 3, 2});
  w.add(EndRecord{210'000'000});
  EXPECT_TRUE(w.close()) << w.error();
  return path;
}

std::string folded(const std::string& path, FrameOptions options = {}) {
  options.group_by = GroupBy::None;
  options.stalls = StallLeaves::None;
  auto flame = flame_from_profile_file(path, options);
  EXPECT_TRUE(flame.ok()) << flame.error();
  if (!flame.ok()) return "";
  std::ostringstream out;
  FoldedOptions plain;
  plain.plain = true;
  FoldedWriter(plain).write(flame->flame, out);
  return out.str();
}

// The composed stacks (GPU samples are exact: windows mode), one per launch (folded sorts them):
//  - the forward gemm under its own stack;
//  - the backward gemm: caller -> [backward] -> the forward stack from main (train.py:25), the last
//    root frame it shares with the caller, -> the engine thread's own frames (none here) -> kernel;
//  - no caller found: [backward] at the root, then the whole forward stack;
//  - no forward stack (AccumulateGrad): caller -> [backward] -> kernel;
//  - a caller and a forward stack the profile lacks: [backward] alone.
TEST(BackwardFrames, KernelsSitUnderBackwardCallThenTheirForwardCode) {
  std::string path = write_step_profile(kBackward);
  const std::string caller =
      "<module> (train.py:30);main (train.py:25);step (train.py:19);backward (_tensor.py:648);"
      "backward (autograd/__init__.py:353);_engine_run_backward (graph.py:829)";
  const std::string forward = "step (train.py:15);Block.forward (train.py:11);Linear.forward (linear.py:125)";
  EXPECT_EQ(folded(path),
            "<module> (train.py:30);main (train.py:25);" + forward + ";-;gemm;0x10 40\n" +
            caller + ";[backward];-;fill;0x20 4\n" +
            caller + ";[backward];main (train.py:25);" + forward + ";-;gemm;0x10 60\n" +
            "[backward];-;fill;0x20 5\n" +
            "[backward];<module> (train.py:30);main (train.py:25);" + forward + ";-;fill;0x20 3\n");
  std::remove(path.c_str());
}

// Without Python frames (--no-python): [backward] and the launch's own frames.
TEST(BackwardFrames, WithoutPythonOnlyTheMarkerStays) {
  std::string path = write_step_profile(kBackward);
  FrameOptions options;
  options.python = false;
  EXPECT_EQ(folded(path, options), "-;gemm;0x10 40\n[backward];-;fill;0x20 12\n[backward];-;gemm;0x10 60\n");
  std::remove(path.c_str());
}

// The file is version 2; its BackwardStack ids name the records the report composes from.
TEST(BackwardFrames, ProfileIsVersionTwo) {
  std::string path = write_step_profile(kBackward);
  auto p = read_profile(path);
  ASSERT_TRUE(p.ok()) << p.error();
  EXPECT_EQ(p->version, 2u);
  EXPECT_EQ(kFormatVersion, 2u);
  EXPECT_EQ(p->backward_stacks.size(), 4u);
  EXPECT_EQ(p->backward_callers.at(1).python.size(), 6u);
  ASSERT_TRUE(p->autograd);
  EXPECT_EQ(p->autograd->with_forward, 2u);
  EXPECT_EQ(p->unknown_records, 0u);
  std::remove(path.c_str());
}

// Profiles written before (format version 1, no autograd records) read as before: the recorded
// fixtures' folded goldens (FixtureGolden.*) stay byte-identical; here, that they are version 1 and
// name no BackwardStack.
TEST(BackwardFrames, VersionOneFixturesHaveNone) {
  for (const char* name : {"gpt_train.aiflame", "demo_matmul.aiflame"}) {
    auto p = read_profile(std::string(AIFLAME_SOURCE_DIR) + "/tests/data/" + name);
    ASSERT_TRUE(p.ok()) << p.error();
    EXPECT_EQ(p->version, 1u);
    EXPECT_TRUE(p->backward_stacks.empty());
    EXPECT_FALSE(p->autograd);
    for (const auto& l : p->launches) EXPECT_FALSE(l.stack_id & kBackwardStackBit);
  }
}

}  // namespace
}  // namespace aiflame
